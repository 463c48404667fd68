import type { Env } from './env.ts';

/**
 * Who is calling, as policies and handlers see it: an API key, or a JWT identity
 * (core/jwt-identities.ts) whose `keyId` is `jwt:<iss>#<sub>`.
 */
export interface Principal {
  keyId: string;
  env: Env;
  scopes: string[];
  roles: string[];
  /** A JWT identity's verified claims; absent for API keys. */
  claims?: Record<string, unknown>;
}
