/**
 * The gatehouse package: the server, its typed client, and the core types they share.
 */
export { startServer, DEFAULTS, type RunningServer, type ServerConfig } from './proxy/server.ts';
export * from './proxy/client/index.ts';
export { signRequest, signingKeyFromJwk, type SigningKey, type SignOptions } from './core/signatures/signer.ts';
export { contentDigest } from './core/signatures/content-digest.ts';
export { openApiDocument } from './proxy/openapi.ts';
export type { PolicyEvaluator, PolicyEvaluation, PolicyInfo, Verdict } from './core/policy-evaluator.ts';
export type { AuditEntry, ChainVerification } from './core/audit-log.ts';
export type { Env } from './core/env.ts';
export { SCOPES, type Scope } from './core/scopes.ts';
