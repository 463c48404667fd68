/**
 * The cost of RFC 9421 request signatures, in the same run:
 *
 * (a) verification per algorithm, in process: a complete `RequestSignatureVerifier.verify` of a
 *     signed POST — parsing Signature-Input and Signature, building the signature base, the
 *     signature check, the Content-Digest check over the body and the replay claim in LMDB —
 *     each call timed on its own (a verification takes tens of µs, far above the clock's cost).
 *     Every request is signed beforehand with its own nonce, since a replay would be refused.
 *     Beside it, in turns of 200 calls, the **crypto floor**: the same requests' SHA-256 content
 *     digest and `crypto.verify` of their signature bases, built beforehand — the work no
 *     verifier can skip (`verify.<alg>.ratioToCryptoFloor`).
 *
 * (b) governed decision creation (POST /v1/decisions, decision-gate-v1) through the server,
 *     unsigned and ed25519-signed by the same sandbox key against the same server, alternating
 *     at each load level so both see the same machine.
 */
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { SIGNATURE_ALGORITHMS, verifyBase, type SignatureAlgorithm } from '../../core/signatures/algorithms.ts';
import { buildSignatureBase } from '../../core/signatures/signature-base.ts';
import { parseSignatureFields } from '../../core/signatures/signature-fields.ts';
import { ReplayGuard } from '../../core/signatures/replay-guard.ts';
import { RequestSignatureVerifier, type SignedRequest, type VerificationKey } from '../../core/signatures/request-verifier.ts';
import { signRequest, viewOf, type SigningKey } from '../../core/signatures/signer.ts';
import { Store } from '../../core/store.ts';
import { DECISION_BODY } from '../lib/decision-body.ts';
import { createHistogram, encodeHistogram, summarise } from '../lib/histogram.ts';
import { runLoad } from '../lib/load.ts';
import { describeLoad, seriesFromLoad } from '../lib/load-series.ts';
import { startScenarioGatehouse } from '../lib/scenario-gatehouse.ts';
import type { SignRequestsOptions } from '../lib/sign-requests.ts';
import { generateSigningKeyPair } from '../lib/signing-key-pairs.ts';
import type { Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';

/** A signing key and the matching verification key, for one algorithm. */
function keysFor(alg: SignatureAlgorithm): { signer: SigningKey; verifier: VerificationKey } {
  const kid = `bench-${alg}`;
  const { signer, verificationKey } = generateSigningKeyPair(alg, kid);
  return { signer, verifier: { kid, alg, key: verificationKey, signer: kid } };
}

/** A signed request as the server would see it, and what the crypto floor checks of it. */
interface PooledRequest {
  request: SignedRequest;
  /** Its signature base and signature, built beforehand for the floor. */
  base: Buffer;
  signature: Buffer;
}

/** Signed requests, each with its own nonce. */
function signedRequests(signer: SigningKey, count: number): PooledRequest[] {
  const url = new URL('http://gatehouse.bench/v1/decisions');
  const body = Buffer.from(DECISION_BODY);
  return Array.from({ length: count }, () => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    Object.assign(headers, signRequest({ method: 'POST', url, headers, body }, signer));
    const view = viewOf(url, 'POST', headers);
    const [entry] = parseSignatureFields(headers['signature-input']!, headers['signature']);
    return { request: { view, body }, base: Buffer.from(buildSignatureBase(entry!.input, view).base), signature: entry!.signature };
  });
}

/** Calls timed in turns of this many, the verifier's and the floor's alternating, so both see the host at the same speed. */
const TURN = 200;

/**
 * Verifies the pool in order, each call timed, for up to `durationS` after `warmupS` of
 * untimed calls (the pool bounds both: slow signing, RSA's above all, limits how many can be
 * prepared), and the crypto floor over the same requests in alternating turns. Every
 * verification must succeed.
 */
function timeVerifications(alg: SignatureAlgorithm, options: ScenarioOptions, store: Store): Series[] {
  const { signer, verifier } = keysFor(alg);
  const poolSize = options.quick ? 300 : alg === 'rsa-pss-sha512' ? 3_000 : 20_000;
  const pool = signedRequests(signer, poolSize);
  const verify = new RequestSignatureVerifier(new ReplayGuard(store));
  const lookup = () => verifier;
  const check = ({ request }: PooledRequest) => {
    const outcome = verify.verify(request, lookup);
    if (outcome.outcome !== 'verified') throw new Error(`${alg}: verification failed: ${JSON.stringify(outcome)}`);
  };
  const floor = ({ request, base, signature }: PooledRequest) => {
    createHash('sha256').update(request.body!).digest();
    if (!verifyBase(alg, verifier.key, base, signature)) throw new Error(`${alg}: the floor's signature did not verify`);
  };
  let next = 0;
  const warmupEnd = performance.now() + options.warmupS * 1000;
  while (performance.now() < warmupEnd && next < pool.length / 4) check(pool[next++]!);
  const histograms = { verifier: createHistogram(), floor: createHistogram() };
  const calls = { verifier: 0, floor: 0 };
  const started = process.hrtime.bigint();
  const end = started + BigInt(Math.round(options.durationS * 1e9));
  const turn = (kind: 'verifier' | 'floor', from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const t0 = process.hrtime.bigint();
      (kind === 'verifier' ? check : floor)(pool[i]!);
      histograms[kind].recordValue(Math.max(1, Number(process.hrtime.bigint() - t0)));
      calls[kind]++;
    }
  };
  while (next < pool.length && process.hrtime.bigint() < end) {
    const to = Math.min(pool.length, next + TURN);
    turn('verifier', next, to);
    turn('floor', next, to);
    next = to;
  }
  const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  return (['verifier', 'floor'] as const).map((kind) => ({
    target: kind === 'verifier' ? `verify-${alg}` : `crypto-floor-${alg}`,
    baseline: kind === 'floor',
    mode: 'micro' as const,
    rate: null,
    throughput: Math.round(calls[kind] / (elapsedS / 2)),
    latencyMs: summarise(histograms[kind], 'ns'),
    operations: calls[kind],
    errors: 0,
    histogram: encodeHistogram(histograms[kind]),
    histogramUnit: 'ns' as const,
  }));
}

interface Gatehouse {
  url: string;
  headers: Record<string, string>;
  signing: SignRequestsOptions;
  stop(): Promise<void>;
}

/** Gatehouse with a sandbox key that has an ed25519 signing key; rate limits lifted. */
async function startGatehouse(workDir: string): Promise<Gatehouse> {
  const { signer, jwk } = generateSigningKeyPair('ed25519', 'bench-ed25519');
  const gatehouse = await startScenarioGatehouse(workDir, { scopes: ['decisions:write'], signingJwk: jwk });
  const headers = { ...gatehouse.auth, 'content-type': 'application/json' };
  const url = `${gatehouse.url}/v1/decisions`;
  const signing: SignRequestsOptions = { kid: signer.kid, alg: signer.alg, jwk: signer.key.export({ format: 'jwk' }), method: 'POST', body: DECISION_BODY };
  const probe = await fetch(url, { method: 'POST', headers: { ...headers, ...signRequest({ method: 'POST', url, headers, body: DECISION_BODY }, signer) }, body: DECISION_BODY });
  if (probe.status !== 200) throw new Error(`a signed decision was refused: ${probe.status} ${await probe.text()}`);
  return { url, headers, signing, stop: gatehouse.stop };
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const series: Series[] = [];
  const store = Store.open({ dataDir: mkdtempSync(path.join(options.workDir, 'signature-replay-')) });
  try {
    for (const alg of SIGNATURE_ALGORITHMS) {
      options.progress(`verifying ${alg} signatures in process`);
      series.push(...timeVerifications(alg, options, store));
    }
  } finally {
    await store.close();
  }

  options.progress('starting gatehouse (compiling the bundled policies)');
  const gatehouse = await startGatehouse(options.workDir);
  try {
    for (const rate of [0, ...options.rates]) {
      const common = { url: gatehouse.url, headers: gatehouse.headers, body: DECISION_BODY, rate, durationS: options.durationS, warmupS: options.warmupS, connections: options.connections };
      const unsigned = await runLoad(common);
      options.progress(describeLoad('unsigned', rate, unsigned));
      series.push(seriesFromLoad('decisions-unsigned', true, rate, unsigned));
      const signed = await runLoad({ ...common, perRequest: { module: fileURLToPath(new URL('../lib/sign-requests.ts', import.meta.url)), options: gatehouse.signing } });
      options.progress(describeLoad('ed25519-signed', rate, signed));
      series.push(seriesFromLoad('decisions-ed25519', false, rate, signed));
    }
  } finally {
    await gatehouse.stop();
  }

  const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;
  const metrics: Record<string, number> = {};
  for (const alg of SIGNATURE_ALGORITHMS) {
    const s = series.find((x) => x.target === `verify-${alg}`)!;
    metrics[`verify.${alg}.medianUs`] = round(s.latencyMs.p50 * 1000, 2);
    metrics[`verify.${alg}.p99Us`] = round(s.latencyMs.p99 * 1000, 2);
    const floor = series.find((x) => x.target === `crypto-floor-${alg}`)!;
    metrics[`verify.${alg}.cryptoFloorMedianUs`] = round(floor.latencyMs.p50 * 1000, 2);
    metrics[`verify.${alg}.ratioToCryptoFloor`] = round(s.latencyMs.p50 / floor.latencyMs.p50, 2);
  }
  const pick = (target: string, mode: Series['mode'], rate: number | null) => series.find((s) => s.target === target && s.mode === mode && s.rate === rate)!;
  const firstRate = options.rates[0];
  const at = (target: string) => (firstRate === undefined ? pick(target, 'max', null) : pick(target, 'rate', firstRate));
  const signedAt = at('decisions-ed25519');
  const unsignedAt = at('decisions-unsigned');
  metrics['decisions.signedOverheadP50Ms'] = round(signedAt.latencyMs.p50 - unsignedAt.latencyMs.p50);
  metrics['decisions.signedOverheadP99Ms'] = round(signedAt.latencyMs.p99 - unsignedAt.latencyMs.p99);
  metrics['decisions.signedThroughputRatio'] = round(pick('decisions-ed25519', 'max', null).throughput / Math.max(1, pick('decisions-unsigned', 'max', null).throughput));

  return {
    scenario: 'signatures',
    description: scenario.description,
    series,
    metrics,
    notes: [
      'verify-<alg>: one complete verification of a signed POST (parse, signature base, signature, Content-Digest, replay claim in LMDB), each call timed; histograms in ns.',
      `crypto-floor-<alg>: the same requests' SHA-256 content digest and crypto.verify of their signature bases (built beforehand), timed in turns of ${TURN} calls with the verifier's; ratioToCryptoFloor is the verifier's median over the floor's.`,
      'The signed requests cover @method, @target-uri and content-digest, with created, nonce, keyid and alg: what the project signer and the test helpers send.',
      `decisions-unsigned and decisions-ed25519: POST /v1/decisions by the same sandbox key against the same server, alternating per load level. The overhead metrics compare them ${firstRate === undefined ? 'at maximum throughput' : `at ${firstRate} req/s`}; signedThroughputRatio compares maximum throughputs.`,
      'Each signed request is signed afresh (new created and nonce) in the load generator process, so signing costs the generator, not the server.',
    ],
    profiles: {},
  };
}

export const scenario: Scenario = {
  name: 'signatures',
  description: 'RFC 9421 request signatures: verification cost per algorithm in process, and governed decision creation signed with ed25519 versus unsigned against the same server.',
  run,
};
