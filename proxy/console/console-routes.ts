import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatehouseError } from '../../core/errors.ts';
import type { RequestContext } from '../context.ts';
import type { Reply } from '../http/reply.ts';
import { problemResponse, type RouteDef } from '../route.ts';

/**
 * The approvals console (docs/console.md): a page and its ES modules, served as files with no
 * build step. The browser code lives in console/; Preact and htm come straight from
 * node_modules. No key is needed to load them: the page holds no data until it signs in.
 *
 * Every answer carries a strict Content-Security-Policy: scripts, styles and connections only
 * from this server (the stream included), nothing inline, no framing. Together with Preact,
 * which sets text rather than markup, a decision's title or context cannot run script here.
 */
const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The files the console may serve, by the name in its URL: nothing else on disk is reachable. */
const ASSETS = new Map<string, string>([
  ...readdirSync(CONSOLE_DIR)
    .filter((name) => name !== 'index.html' && extname(name) in TYPES)
    .map((name): [string, string] => [name, join(CONSOLE_DIR, name)]),
  ['preact.mjs', fileURLToPath(import.meta.resolve('preact'))],
  ['htm.mjs', fileURLToPath(import.meta.resolve('htm'))],
]);

/** A host as a Host header may name one (name or address, optional port): anything else stays out of the policy. */
const PLAIN_HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/**
 * `'self'` covers ws: and wss: to the page's own host in CSP Level 3; the explicit stream URLs
 * keep browsers that predate that able to connect.
 */
function contentSecurityPolicy(host: string | undefined): string {
  const stream = host && PLAIN_HOST.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src 'self'${stream}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

async function serveFile(ctx: RequestContext, file: string): Promise<Reply> {
  return {
    status: 200,
    headers: {
      'content-type': TYPES[extname(file)]!,
      'content-security-policy': contentSecurityPolicy(ctx.headers['host']),
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
      'cache-control': 'no-cache',
    },
    body: await readFile(file, 'utf8'),
  };
}

const page: RouteDef = {
  method: 'GET',
  path: '/console',
  operationId: 'console',
  summary: 'The approvals console: inbox, decisions, actions, audit and policies, for a signed-in reviewer (docs/console.md).',
  scope: null,
  audited: false,
  responses: { 200: { description: 'The page.', contentType: 'text/html' } },
  handle: (ctx) => serveFile(ctx, join(CONSOLE_DIR, 'index.html')),
};

const asset: RouteDef = {
  method: 'GET',
  path: '/console/{asset}',
  operationId: 'consoleAsset',
  summary: "One of the console's scripts or its style sheet.",
  scope: null,
  audited: false,
  responses: {
    200: { description: 'The file.', contentType: 'text/javascript' },
    404: problemResponse('Not a file of the console.'),
  },
  handle(ctx) {
    const file = ASSETS.get(ctx.params.asset!);
    if (!file) throw new GatehouseError('not_found', `the console has no file ${ctx.params.asset}`);
    return serveFile(ctx, file);
  },
};

/** GET / — a person who opens the server's address in a browser is sent to the console. */
const root: RouteDef = {
  method: 'GET',
  path: '/',
  operationId: 'root',
  summary: 'Redirects to the console.',
  scope: null,
  audited: false,
  responses: { 302: { description: 'To /console.' } },
  handle: () => ({ status: 302, headers: { location: '/console' }, body: '' }),
};

export const consoleRoutes: RouteDef[] = [page, asset, root];
