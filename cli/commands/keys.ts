import { parseArgs } from 'node:util';
import { AuditLog, operationDraft, type AuditDraft } from '../../core/audit-log.ts';
import { DecisionStore } from '../../core/decision-store.ts';
import { DecisionWorkflow } from '../../core/decision-workflow.ts';
import { isEnv, type Env } from '../../core/env.ts';
import { decisionEvent } from '../../core/events/decision-events.ts';
import { EventLog } from '../../core/events/event-log.ts';
import { keyEvent } from '../../core/events/key-events.ts';
import { KeyReview } from '../../core/key-review.ts';
import { keyView, KeyRegistry } from '../../core/keys.ts';
import { UNSIGNED } from '../../core/policy-input.ts';
import type { Principal } from '../../core/principal.ts';
import { SCOPES, type Scope } from '../../core/scopes.ts';
import { Store } from '../../core/store.ts';

/**
 * `gatehouse keys`: issue, list and revoke API keys straight in the data directory, for an
 * operator with access to it (works while the server runs: LMDB serialises the writers). Every
 * change is audited like its HTTP counterpart, with method `CLI`.
 *
 *   gatehouse keys create --env sandbox --scopes decisions:read,decisions:write [--name N] [--roles a,b]
 *   gatehouse keys create --role creator|reviewer [--env …]   (a preset's scopes; sandbox unless told)
 *   gatehouse keys list [--env sandbox|production]
 *   gatehouse keys revoke <id>
 *
 * A production key starts `pending_review` with a security-review decision, exactly as through
 * the API, so this command compiles the policies to open it.
 */
export const summary = 'create, list or revoke API keys in the data directory';

/**
 * Keys for the two sides of a gated decision, so a first try needs no list of scopes: one key
 * creates decisions and a second approves and executes them (the bundled policies refuse an
 * approval by the decision's creator). Both read decisions, their traces and memory.
 */
const PRESETS: Record<string, readonly Scope[]> = {
  creator: ['decisions:read', 'decisions:write', 'impact:read', 'memory:read', 'memory:write', 'context:read', 'stream:subscribe'],
  reviewer: ['decisions:read', 'decisions:approve', 'decisions:execute', 'impact:read', 'memory:read', 'context:read', 'stream:subscribe'],
};

const USAGE = `usage: gatehouse keys create --env sandbox|production --scopes a,b [--name N] [--roles a,b] [--data-dir D]
       gatehouse keys create --role ${Object.keys(PRESETS).join('|')} [--env E] [--scopes more] [--name N] [--data-dir D]
       gatehouse keys list [--env sandbox|production] [--data-dir D]
       gatehouse keys revoke <id> [--data-dir D]
scopes: ${SCOPES.join(', ')}
--role: ${Object.entries(PRESETS).map(([role, scopes]) => `${role} = ${scopes.join(',')}`).join('; ')} (a sandbox key named after the role unless --env or --name says otherwise)`;

/** The operator acting through the CLI, as policies see it. */
const OPERATOR: Principal = { keyId: 'operator:cli', env: 'production', scopes: ['admin'], roles: ['operator'] };

function cliEntry(route: string, status: number, extra: Partial<AuditDraft> = {}): AuditDraft {
  return operationDraft('CLI', route, OPERATOR.keyId, status, extra);
}

const list = (text: string | undefined) => (text ? text.split(',').map((s) => s.trim()).filter(Boolean) : []);

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      env: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      roles: { type: 'string' },
      role: { type: 'string' },
      'data-dir': { type: 'string' },
      'policies-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [verb, id] = positionals;
  if (values.help || !verb) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const dataDir = values['data-dir'] ?? process.env.GATEHOUSE_DATA_DIR ?? '.gatehouse';
  if (values.env !== undefined && !isEnv(values.env)) {
    console.error(`gatehouse keys: --env must be sandbox or production\n${USAGE}`);
    return 2;
  }
  const preset = values.role === undefined ? undefined : PRESETS[values.role];
  if (values.role !== undefined && !preset) {
    console.error(`gatehouse keys: --role must be one of ${Object.keys(PRESETS).join(', ')}\n${USAGE}`);
    return 2;
  }
  const env = (values.env ?? (preset ? 'sandbox' : undefined)) as Env | undefined;
  const store = Store.open({ dataDir });
  try {
    const keys = new KeyRegistry(store);
    const audit = new AuditLog(store);
    // Key changes are events like the API's; a running server publishes them from the shared log.
    const events = new EventLog(store, audit);
    switch (verb) {
      case 'create': {
        const scopes = [...new Set([...(preset ?? []), ...list(values.scopes)])];
        const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
        if (!env || scopes.length === 0 || unknown.length) {
          console.error(`gatehouse keys: create needs --env and --scopes, or --role${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}\n${USAGE}`);
          return 2;
        }
        const issued = keys.draft({ env, scopes, roles: list(values.roles), name: values.name ?? values.role ?? null, createdBy: OPERATOR.keyId });
        if (env === 'sandbox') {
          await store.commit(() => {
            keys.write(issued.record);
            events.appendInTransaction(keyEvent('key.created', issued.record));
            audit.appendInTransaction(cliEntry('keys create', 201));
          });
          console.log(JSON.stringify({ ...keyView(issued.record), key: issued.secret }, null, 2));
          return 0;
        }
        // Loaded only here: compiling policies is the slow part, and sandbox keys never need it.
        const { openPolicies, policyCacheDirOf, PACKAGE_POLICIES } = await import('./serve.ts');
        const engine = await openPolicies(
          {
            policiesDir: values['policies-dir'] ?? process.env.GATEHOUSE_POLICIES_DIR ?? PACKAGE_POLICIES,
            dataDir,
            bundleKeysFile: process.env.GATEHOUSE_BUNDLE_VERIFICATION_KEYS,
            policyCacheDir: policyCacheDirOf(process.env.GATEHOUSE_POLICY_CACHE, process.env),
            policyMaxIterations: undefined,
          },
          false,
        );
        try {
          const workflow = new DecisionWorkflow(new DecisionStore(store), engine);
          const review = new KeyReview(keys, workflow);
          const facts = { method: 'CLI', path: 'keys create', signature: UNSIGNED };
          const draft = workflow.draft('production', OPERATOR, review.reviewRequest(issued.record), { type: 'key', id: issued.record.id });
          const check = workflow.check('create', draft, OPERATOR, facts);
          const result = check.verdict.allow ? workflow.applyCreate(draft, check) : null;
          const { allow, gate, nextAction, reasons, error } = check.verdict;
          const trail: Partial<AuditDraft> = {
            traceRef: draft.auditTrail,
            decisionId: result?.id ?? null,
            policy: check.policy,
            moduleHash: check.moduleHash,
            inputDigest: check.inputDigest,
            result: { allow, gate, nextAction, reasons, error },
            code: result ? null : 'policy_denied',
          };
          const record = { ...issued.record, reviewDecisionId: result?.id ?? null };
          await store.commit(() => {
            if (result) {
              workflow.write(result);
              keys.write(record);
              events.appendInTransaction(decisionEvent(result));
              events.appendInTransaction(keyEvent('key.created', record));
            }
            audit.appendInTransaction(cliEntry('keys create', result ? 201 : 403, trail));
          });
          if (!result) {
            console.error(`gatehouse keys: the security review was refused: ${check.verdict.reasons.join('; ')}`);
            return 1;
          }
          console.log(JSON.stringify({ ...keyView(record), key: issued.secret, review: { decisionId: result.id, auditTrail: result.auditTrail } }, null, 2));
          return 0;
        } finally {
          await engine.close();
        }
      }
      case 'list': {
        for (const record of keys.list(env ? [env] : ['sandbox', 'production'])) console.log(JSON.stringify(keyView(record)));
        return 0;
      }
      case 'revoke': {
        if (!id) {
          console.error(`gatehouse keys: revoke needs a key id\n${USAGE}`);
          return 2;
        }
        const revoked = keys.revoke(id);
        await store.commit(() => {
          keys.write(revoked);
          events.appendInTransaction(keyEvent('key.revoked', revoked));
          audit.appendInTransaction(cliEntry('keys revoke', 200));
        });
        console.log(JSON.stringify(keyView(revoked)));
        return 0;
      }
      default:
        console.error(`gatehouse keys: unknown action '${verb}'\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    console.error(`gatehouse keys: ${(error as Error).message}`);
    return 1;
  } finally {
    await store.close();
  }
}
