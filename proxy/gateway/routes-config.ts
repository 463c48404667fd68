import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { parse as parseYaml } from 'yaml';

/**
 * The gateway's routes file (`GATEHOUSE_PROXY_ROUTES`, JSON or YAML; docs/proxy.md). It is
 * validated whole: a file with any error is refused, the error names the field by JSON pointer,
 * and the routes loaded before stay in force. The file is watched and reloaded on change.
 */
const TOKEN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

export const RouteSpec = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' }),
    match: Type.Object(
      {
        /** Compared with the Host header without its port, case-insensitively. */
        host: Type.Optional(Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.-]+$' })),
        /** Matched on whole path segments: `/api` covers `/api` and `/api/x`, not `/apix`. */
        pathPrefix: Type.String({ pattern: '^/' }),
        methods: Type.Optional(Type.Array(Type.String({ pattern: TOKEN }), { minItems: 1 })),
      },
      { additionalProperties: false },
    ),
    /** `http://host:port` with an optional base path the request path is appended to. */
    upstream: Type.String({ pattern: '^https?://[^/?#@]+(/[^?#]*)?$' }),
    policy: Type.String({ minLength: 1 }),
    auth: Type.Union([Type.Literal('api-key'), Type.Literal('jwt'), Type.Literal('none')]),
    requireSignature: Type.Optional(Type.Boolean()),
    /** How long the upstream may stay silent (connecting, answering, or mid-body). */
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000 })),
    /** Idempotent methods only, and only before any response byte (docs/proxy.md). */
    retry: Type.Optional(
      Type.Object(
        {
          /** Tries in all, the first included. */
          attempts: Type.Integer({ minimum: 1, maximum: 10 }),
          /** Wait before the second try; doubled before each later one. */
          backoffMs: Type.Integer({ minimum: 0, maximum: 60_000 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const RoutesFile = Type.Object({ routes: Type.Array(RouteSpec) }, { additionalProperties: false });

export type RouteSpec = Static<typeof RouteSpec>;

export const DEFAULT_TIMEOUT_MS = 30_000;

/** A route as the gateway uses it: defaults filled in, the upstream parsed. */
export interface ProxyRoute {
  name: string;
  host: string | null;
  pathPrefix: string;
  methods: ReadonlySet<string> | null;
  upstream: URL;
  policy: string;
  auth: 'api-key' | 'jwt' | 'none';
  requireSignature: boolean;
  timeoutMs: number;
  retry: { attempts: number; backoffMs: number };
}

export class RoutesFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: { pointer: string; message: string }[],
  ) {
    super(`${file}: ${problems.map((p) => `${p.pointer || '/'}: ${p.message}`).join('; ')}`);
    this.name = 'RoutesFileError';
  }
}

const checker = TypeCompiler.Compile(RoutesFile);

/** What this server can check, which bounds what its routes may ask for. */
export interface RouteSupport {
  /** JWT issuers are configured (GATEHOUSE_JWT_ISSUERS): routes may say `auth: "jwt"`. */
  jwt: boolean;
}

/**
 * Parses and validates a routes document; throws RoutesFileError naming every bad field (up to
 * ten). A route the server could not serve (`auth: "jwt"` without issuers) is refused here, at
 * load, rather than failing each of its requests.
 */
export function parseRoutes(text: string, file: string, support: RouteSupport): ProxyRoute[] {
  let doc: unknown;
  try {
    doc = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw new RoutesFileError(file, [{ pointer: '', message: `not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(error as Error).message}` }]);
  }
  if (!checker.Check(doc)) {
    const problems = [...checker.Errors(doc)].slice(0, 10).map((e) => ({ pointer: e.path, message: e.message }));
    throw new RoutesFileError(file, problems);
  }
  const seen = new Map<string, number>();
  doc.routes.forEach((spec, i) => {
    const earlier = seen.get(spec.name);
    if (earlier !== undefined) throw new RoutesFileError(file, [{ pointer: `/routes/${i}/name`, message: `duplicates /routes/${earlier}/name` }]);
    seen.set(spec.name, i);
    if (spec.auth === 'jwt' && !support.jwt) {
      throw new RoutesFileError(file, [{ pointer: `/routes/${i}/auth`, message: `route ${spec.name} authenticates with JWTs, but no JWT issuers are configured (GATEHOUSE_JWT_ISSUERS)` }]);
    }
  });
  return doc.routes.map(toRoute);
}

function toRoute(spec: RouteSpec): ProxyRoute {
  return {
    name: spec.name,
    host: spec.match.host?.toLowerCase() ?? null,
    pathPrefix: spec.match.pathPrefix,
    methods: spec.match.methods ? new Set(spec.match.methods) : null,
    upstream: new URL(spec.upstream),
    policy: spec.policy,
    auth: spec.auth,
    requireSignature: spec.requireSignature ?? false,
    timeoutMs: spec.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    retry: spec.retry ?? { attempts: 1, backoffMs: 0 },
  };
}

export interface RoutesLog {
  info(message: string): void;
  error(message: string): void;
}

/**
 * The routes in force, read from `file` and reloaded when it changes. The directory is watched
 * rather than the file, so editors that save by renaming a new file into place are followed.
 * Changes are debounced: a save arrives as several events.
 */
export class RoutesSource {
  private routes: readonly ProxyRoute[] = [];
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private loading: Promise<void> = Promise.resolve();

  private constructor(
    readonly file: string,
    private readonly log: RoutesLog,
    private readonly support: RouteSupport,
    private readonly debounceMs: number,
  ) {}

  /** Loads the file (a bad one at start is an error: there are no earlier routes to keep). */
  static async open(file: string, log: RoutesLog, support: RouteSupport, options: { watch?: boolean; debounceMs?: number } = {}): Promise<RoutesSource> {
    const source = new RoutesSource(file, log, support, options.debounceMs ?? 100);
    source.routes = parseRoutes(await readFile(file, 'utf8'), file, support);
    if (options.watch ?? true) source.watch();
    return source;
  }

  current(): readonly ProxyRoute[] {
    return this.routes;
  }

  /** Re-reads the file now; a bad file is logged and the routes in force are kept. */
  reload(): Promise<void> {
    this.loading = this.loading.then(async () => {
      try {
        this.routes = parseRoutes(await readFile(this.file, 'utf8'), this.file, this.support);
        this.log.info(`proxy routes reloaded from ${this.file}: ${this.routes.map((r) => r.name).join(', ') || 'none'}`);
      } catch (error) {
        const why = error instanceof RoutesFileError ? error.message : `${this.file}: ${(error as Error).message}`;
        this.log.error(`proxy routes not reloaded, keeping the previous ${this.routes.length}: ${why}`);
      }
    });
    return this.loading;
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.timer) clearTimeout(this.timer);
  }

  private watch(): void {
    const name = basename(this.file);
    this.watcher = watch(dirname(this.file), (_event, changed) => {
      if (changed !== null && changed !== name) return;
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.reload(), this.debounceMs);
    });
    this.watcher.unref();
  }
}
