import type { ProxyRoute } from './routes-config.ts';

/**
 * Which route a request belongs to: the first in file order whose host (if it names one), path
 * prefix and methods (if it lists them) all match. Prefixes match whole segments, like the
 * route policies' own path rules, so `/api` never captures `/apiary`.
 */
export function matchRoute(routes: readonly ProxyRoute[], method: string, host: string | undefined, path: string): ProxyRoute | null {
  const hostname = host === undefined ? null : hostOnly(host);
  for (const route of routes) {
    if (route.host !== null && route.host !== hostname) continue;
    if (route.methods !== null && !route.methods.has(method)) continue;
    if (!underPrefix(path, route.pathPrefix)) continue;
    return route;
  }
  return null;
}

/** As the route policies read their path rules: `/api` and `/api/` both cover `/api` and `/api/x`. */
function underPrefix(path: string, prefix: string): boolean {
  const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return base === '' || path === base || path.startsWith(`${base}/`);
}

/** `Example.com:8081` → `example.com`; `[::1]:8081` → `[::1]`. */
function hostOnly(host: string): string {
  const lower = host.toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.lastIndexOf(':');
  return colon === -1 ? lower : lower.slice(0, colon);
}
