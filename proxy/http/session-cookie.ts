import type { SignatureServices } from '../services.ts';

/**
 * The console's session cookie (docs/console.md). HttpOnly keeps the token out of page script,
 * SameSite=Strict keeps other sites' pages from sending it, and Secure is added whenever the
 * browser reached the server over https, so the token never travels in the clear after that.
 */
export const SESSION_COOKIE = 'gatehouse_session';

/** The session token a request carries in its Cookie header, if any. */
export function sessionToken(headers: Record<string, string>): string | null {
  const cookie = headers['cookie'];
  if (!cookie) return null;
  for (const pair of cookie.split(/;\s*/)) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === SESSION_COOKIE) return pair.slice(eq + 1).trim() || null;
  }
  return null;
}

/** Whether the browser reached the server over https: a public URL says so, or the TLS proxy in front does. */
export function overHttps(headers: Record<string, string>, signatures: Pick<SignatureServices, 'publicUrl'>): boolean {
  return signatures.publicUrl?.protocol === 'https:' || headers['x-forwarded-proto']?.toLowerCase() === 'https';
}

/** Set-Cookie for a session token, or (with null) the header that makes the browser forget it. */
export function sessionCookie(token: string | null, maxAgeSeconds: number, secure: boolean): string {
  const value = token ?? '';
  const age = token === null ? 0 : Math.max(0, Math.floor(maxAgeSeconds));
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${age}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
