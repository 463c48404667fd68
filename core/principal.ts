import type { Env } from './env.ts';

/** Who is calling: the authenticated API key, as policies and handlers see it. */
export interface Principal {
  keyId: string;
  env: Env;
  scopes: string[];
  roles: string[];
}
