import type { RunningServer } from '../../proxy/server.ts';
import { SESSION_COOKIE } from '../../proxy/http/session-cookie.ts';
import { call, enrollSigner, type Answer } from './gatehouse.ts';

/**
 * Console sessions for keys that must sign: an active production key with a signing key of its
 * own, and the one-time sign-in code that key's signed request gets (docs/console.md).
 */
export interface ProductionReviewer {
  id: string;
  key: string;
  /** The kid of its signing key, which `call` signs its requests with. */
  kid: string;
}

/**
 * An active production key with a registered signing key. It is activated directly in the store,
 * as an approved security review would (test/production-key-review.test.ts covers that review).
 */
export async function productionReviewer(server: RunningServer, url: string, scopes: string[], name: string): Promise<ProductionReviewer> {
  const { keys, store } = server.services;
  const { record, secret } = keys.draft({ env: 'production', scopes, name, createdBy: null });
  await store.commit(() => keys.write(keys.withStatus(record, 'active')));
  const signer = await enrollSigner(url, secret, record.id);
  return { id: record.id, key: secret, kid: signer.kid };
}

/** A sign-in code, asked for with the key's signed request. */
export async function signInCode(url: string, key: string): Promise<string> {
  const answer = await call(url, 'POST', '/v1/sessions/codes', { key });
  if (answer.status !== 201) throw new Error(`no sign-in code: ${answer.status} ${answer.text}`);
  return answer.json.code;
}

/** The session token from a sign-in answer's Set-Cookie. */
export function sessionTokenOf(answer: Answer): string {
  const match = new RegExp(`${SESSION_COOKIE}=([^;]*)`).exec(answer.headers.get('set-cookie') ?? '');
  if (!match?.[1]) throw new Error(`no session cookie in ${answer.headers.get('set-cookie')}`);
  return match[1];
}
