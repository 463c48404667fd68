/**
 * Finds the scenarios: every `bench/scenarios/<name>.ts` exporting `scenario: Scenario`. The
 * harness knows none by name, so a scenario file added by anyone runs with the rest.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Scenario } from '../scenario.ts';
import { UsageError } from './harness-options.ts';

/** Names of the scenario files present, sorted. */
function availableScenarios(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => f.slice(0, -'.ts'.length))
    .sort();
}

/** Resolves `--scenario` to names; an unknown name is a usage error listing the ones there are. */
export function selectScenarios(dir: string, requested: string[] | null): string[] {
  const available = availableScenarios(dir);
  if (!requested) return available;
  const unknown = requested.filter((name) => !available.includes(name));
  if (unknown.length > 0) {
    throw new UsageError(`unknown scenario${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; available: ${available.join(', ') || '(none)'}`);
  }
  return [...new Set(requested)];
}

export async function loadScenario(dir: string, name: string): Promise<Scenario> {
  const module = (await import(pathToFileURL(path.join(dir, `${name}.ts`)).href)) as { scenario?: Scenario };
  const scenario = module.scenario;
  if (!scenario || typeof scenario.run !== 'function') throw new Error(`bench/scenarios/${name}.ts does not export \`scenario: Scenario\``);
  return scenario;
}
