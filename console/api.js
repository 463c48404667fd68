// The console's calls to the /v1 API. After sign-in the browser authenticates them with the
// session cookie (HttpOnly: no script, this one included, can read it); the API key itself is
// sent once, to POST /v1/sessions, and kept nowhere.

/** A refusal from the API: its problem document (RFC 9457), with `reasons` for a policy's. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem ?? {};
  }
}

let unauthenticated = () => {};

/** Called when the session has ended (a 401): the console goes back to its sign-in form. */
export function onUnauthenticated(handler) {
  unauthenticated = handler;
}

async function send(method, path, { body, headers = {} } = {}) {
  const init = { method, headers: { accept: 'application/json', ...headers }, credentials: 'same-origin', cache: 'no-store' };
  // Requests that change something prove they come from this page (docs/console.md, CSRF).
  if (method !== 'GET') init.headers['x-gatehouse-csrf'] = '1';
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (response.ok) return parsed;
  throw new ApiError(response.status, parsed);
}

/** A call made with the session; a 401 means it has ended. */
export async function api(method, path, options) {
  try {
    return await send(method, path, options);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) unauthenticated();
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

export function signOut() {
  return send('DELETE', '/v1/sessions/current');
}

export function whoAmI() {
  return send('GET', '/v1/sessions/current');
}
