// The console's calls to the /v1 API. After sign-in the browser authenticates them with the
// session cookie (HttpOnly: no script, this one included, can read it); the API key itself is
// sent once, to POST /v1/sessions, and kept nowhere. A session opened with a sign-in code (keys
// that must sign) also signs every call with the page's own key (request-signing.js).
import { forgetSessionKey, hasSessionKey, newSessionKey, signatureHeaders, useSessionKey } from './request-signing.js';

/** A refusal from the API: its problem document (RFC 9457), with `reasons` for a policy's. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem ?? {};
  }
}

let unauthenticated = () => {};

/** Called with the reason when the session has ended (a 401): the console goes back to its sign-in form. */
export function onUnauthenticated(handler) {
  unauthenticated = handler;
}

async function send(method, path, { body, headers = {} } = {}) {
  const init = { method, headers: { accept: 'application/json', ...headers }, credentials: 'same-origin', cache: 'no-store' };
  // Requests that change something prove they come from this page (docs/console.md, CSRF).
  if (method !== 'GET') init.headers['x-gatehouse-csrf'] = '1';
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = new TextEncoder().encode(JSON.stringify(body));
  }
  // The target as the browser sends it, which is what the signature covers.
  const url = new URL(path, location.origin).href;
  Object.assign(init.headers, await signatureHeaders(method, url, init.body ?? null));
  const response = await fetch(url, init);
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (response.ok) return parsed;
  throw new ApiError(response.status, parsed);
}

/**
 * A call made with the session; a 401 `unauthenticated` means it has ended. So does any 401 while
 * the page signs with a session key (another tab may have replaced the session, or the clock is
 * far off): the page cannot go on with it. Without a key, a signature a policy asks for is shown
 * like any refusal.
 */
export async function api(method, path, options) {
  try {
    return await send(method, path, options);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401 && (error.problem.code === 'unauthenticated' || hasSessionKey())) {
      forgetSessionKey();
      unauthenticated(error.message);
    }
    throw error;
  }
}

/** `/v1/...?a=1&b=2` from the non-empty members of `query`. */
export function withQuery(path, query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export function signIn(key) {
  return send('POST', '/v1/sessions', { headers: { authorization: `Bearer ${key}` } });
}

/** Sign-in codes are what a key that must sign signs in with (POST /v1/sessions/codes). */
export const SIGN_IN_CODE = /^ghc_/;

/** Redeems a sign-in code with a fresh key pair, which signs every later call of the session. */
export async function redeemCode(code) {
  const { key, jwk } = await newSessionKey();
  const me = await send('POST', '/v1/sessions/redeem', { body: { code, jwk } });
  useSessionKey(key, me.session.signingKey.kid);
  return me;
}

export async function signOut() {
  try {
    return await send('DELETE', '/v1/sessions/current');
  } finally {
    forgetSessionKey();
  }
}

export function whoAmI() {
  return send('GET', '/v1/sessions/current');
}
