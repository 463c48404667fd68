import { Kind, OptionalKind, type TSchema } from '@sinclair/typebox';

const isSchema = (value: unknown): value is TSchema => typeof value === 'object' && value !== null && Kind in value;

/**
 * Shared schemas of the OpenAPI document: every schema a module exports is a component named
 * after its export, and each use of it in a route becomes a `$ref`. Schemas are recognised by
 * identity, since TypeBox composes by reference; `Type.Optional` copies its argument, so a copy
 * marked optional is recognised by its JSON instead.
 */
export class SchemaComponents {
  private readonly names = new Map<TSchema, string>();
  private readonly optionalByJson = new Map<string, TSchema>();
  private readonly built = new Map<string, unknown>();

  constructor(modules: readonly Record<string, unknown>[]) {
    const taken = new Map<string, TSchema>();
    for (const module of modules) {
      for (const [name, value] of Object.entries(module)) {
        if (!isSchema(value) || this.names.has(value)) continue;
        if (taken.has(name)) throw new Error(`two exported schemas are named ${name}: rename one, the OpenAPI components need distinct names`);
        taken.set(name, value);
        this.names.set(value, name);
        this.optionalByJson.set(JSON.stringify(value), value);
      }
    }
  }

  /** `schema` as JSON, every named schema inside it (or itself) a `$ref`. */
  use(schema: TSchema): unknown {
    return this.convert(schema, null);
  }

  /** The components used so far, by name. */
  schemas(): Record<string, unknown> {
    return Object.fromEntries([...this.built].sort(([a], [b]) => a.localeCompare(b)));
  }

  private named(schema: TSchema): TSchema | undefined {
    if (this.names.has(schema)) return schema;
    return OptionalKind in schema ? this.optionalByJson.get(JSON.stringify(schema)) : undefined;
  }

  private convert(value: unknown, root: TSchema | null): unknown {
    if (Array.isArray(value)) return value.map((item) => this.convert(item, root));
    if (typeof value !== 'object' || value === null) return value;
    const shared = value !== root && isSchema(value) ? this.named(value) : undefined;
    if (shared) {
      const name = this.names.get(shared)!;
      if (!this.built.has(name)) {
        this.built.set(name, null);
        this.built.set(name, this.convert(shared, shared));
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, this.convert(member, root)]));
  }
}
