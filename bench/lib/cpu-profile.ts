/**
 * CPU profiles for `--profile`: recording one of this process (where the scenarios run the
 * sidecar in-process) and naming the functions a `.cpuprofile` spent its time in, so a missed
 * target comes with where the time went. Child processes can be profiled with `--cpu-prof`;
 * their files summarise the same way.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { SourceMap, type SourceMapPayload } from 'node:module';
import path from 'node:path';

export interface CpuProfileRecording {
  /** Stops recording and writes the profile to `file`; resolves with the path. */
  stop(file: string): Promise<string>;
}

/** Starts sampling this process's main thread (every 100 µs). */
export async function startCpuProfile(): Promise<CpuProfileRecording> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop');
      const sourceMaps = await loadedSourceMaps(session);
      session.disconnect();
      for (const node of profile.nodes) toOriginalPosition(node.callFrame, sourceMaps);
      writeFileSync(file, JSON.stringify(profile));
      return file;
    },
  };
}

/**
 * The inline source maps of the scripts loaded in this process, by URL. tsx serves each
 * TypeScript module as one line of JavaScript with an inline map; without it every function
 * would be reported at line 1. Enabling the debugger replays `scriptParsed` for every script
 * already loaded, so this costs nothing while recording.
 */
async function loadedSourceMaps(session: Session): Promise<Map<string, SourceMap>> {
  const maps = new Map<string, SourceMap>();
  const onScript = (message: { params: { url: string; sourceMapURL?: string } }) => {
    const { url, sourceMapURL } = message.params;
    const inline = sourceMapURL?.match(/^data:application\/json[^,]*;base64,(.*)$/);
    if (!url.startsWith('file://') || !inline) return;
    try {
      maps.set(url, new SourceMap(JSON.parse(Buffer.from(inline[1]!, 'base64').toString('utf8')) as SourceMapPayload));
    } catch {
      // A map that does not parse leaves that script's positions as they are.
    }
  };
  session.on('Debugger.scriptParsed', onScript);
  await session.post('Debugger.enable');
  await session.post('Debugger.disable');
  session.off('Debugger.scriptParsed', onScript);
  return maps;
}

function toOriginalPosition(frame: { url: string; lineNumber: number; columnNumber: number }, maps: Map<string, SourceMap>): void {
  const entry = maps.get(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry && 'originalLine' in entry) {
    frame.lineNumber = entry.originalLine;
    frame.columnNumber = entry.originalColumn;
  }
}

/** One function's share of the samples. */
export interface HotFunction {
  function: string;
  /** `file:line` (1-based), relative to the working directory when inside it; empty for V8 internals like `(garbage collector)`. */
  location: string;
  selfMs: number;
  selfPercent: number;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * The functions with the most self time (time on top of the stack), summed over every call
 * site. `(idle)` is kept: a server idle half the time is waiting, not computing, and that is
 * the first thing to know about a latency miss.
 */
export function summariseCpuProfile(file: string, top = 15): HotFunction[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<string, { fn: string; location: string; us: number }>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    // Each sample's delta is the time until it, so it belongs to the sample it leads to.
    const us = profile.timeDeltas[i] ?? 0;
    const frame = byNode.get(id)?.callFrame;
    if (!frame) return;
    totalUs += us;
    const location = frame.url ? `${displayPath(frame.url)}:${frame.lineNumber + 1}` : '';
    const fn = frame.functionName || '(anonymous)';
    const key = `${fn}\u0000${location}`;
    const entry = selfUs.get(key) ?? { fn, location, us: 0 };
    entry.us += us;
    selfUs.set(key, entry);
  });
  return [...selfUs.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((e) => ({
      function: e.fn,
      location: e.location,
      selfMs: Math.round(e.us / 100) / 10,
      selfPercent: totalUs > 0 ? Math.round((e.us / totalUs) * 1000) / 10 : 0,
    }));
}

function displayPath(url: string): string {
  const file = url.startsWith('file://') ? new URL(url).pathname : url;
  const relative = path.relative(process.cwd(), file);
  return relative.startsWith('..') ? file : relative;
}

/** A plain-text table of hot functions, for the terminal and the file beside the results. */
export function formatHotFunctions(label: string, rows: HotFunction[]): string {
  const lines = [`top functions by self time — ${label}`, `${'self %'.padStart(7)}  ${'self ms'.padStart(9)}  function  (location)`];
  for (const r of rows) lines.push(`${r.selfPercent.toFixed(1).padStart(7)}  ${r.selfMs.toFixed(1).padStart(9)}  ${r.function}${r.location ? `  (${r.location})` : ''}`);
  return lines.join('\n');
}
