import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { SIGNATURE_ALGORITHMS, type SignatureAlgorithm } from '../../core/signatures/algorithms.ts';
import { signingKeyFromJwk, type SigningKey } from '../../core/signatures/signer.ts';
import { impliedAlgorithm } from '../../core/signing-keys.ts';
import { GatehouseClient } from '../../proxy/client/gatehouse-client.ts';
import { GatehouseApiError } from '../../proxy/client/errors.ts';

/**
 * `gatehouse sessions code`: asks a server for a one-time console sign-in code for a key that
 * must sign its requests, signing the request with one of the key's registered signing keys
 * (docs/console.md, "Keys that must sign"). The reviewer pastes the code into the console; the
 * private key never leaves this machine and the page never sees it.
 */
export const summary = 'ask for a console sign-in code for a key that must sign (signed with its signing key)';

const USAGE = `usage: gatehouse sessions code --signing-key FILE [--kid KID] [--alg ALG] [--url URL]

  GATEHOUSE_API_KEY   the key to sign the console in for (read from the environment only, so that
                      it shows in no process list)
  --url URL           GATEHOUSE_URL   the server (http://127.0.0.1:8080)
  --signing-key FILE  the private half of one of the key's registered signing keys: a JWK (with "d",
                      or "k" for hmac-sha256) or a PEM private key
  --kid KID           the kid it was registered under (default: the JWK's "kid")
  --alg ALG           ${SIGNATURE_ALGORITHMS.join(' | ')} (default: from the key)

Prints the code (ghc_…, one use, 5 minutes) and the console's address; paste the code into its
sign-in field.`;

/** Input the command cannot use: exit 2 with the reason. */
class UsageError extends Error {}

/**
 * The signing key in `file`: a JWK, or a PEM private key read as one, with its kid and algorithm
 * from the options, else from the JWK (the algorithm its key type implies, as registration does).
 */
async function readSigningKey(file: string, kid: string | undefined, alg: string | undefined): Promise<SigningKey> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot read --signing-key ${file}: ${error.code ?? error.message}`);
  });
  let jwk: JsonWebKey;
  try {
    jwk = text.trimStart().startsWith('{') ? (JSON.parse(text) as JsonWebKey) : createPrivateKey(text).export({ format: 'jwk' });
  } catch (error) {
    throw new UsageError(`--signing-key ${file} is not a private key (JWK or PEM): ${(error as Error).message}`);
  }
  const id = kid ?? (typeof jwk.kid === 'string' ? jwk.kid : undefined);
  if (!id) throw new UsageError('--kid is needed: the key file names no kid');
  if (alg !== undefined && !SIGNATURE_ALGORITHMS.includes(alg as SignatureAlgorithm)) {
    throw new UsageError(`--alg is ${SIGNATURE_ALGORITHMS.join(', ')}, not '${alg}'`);
  }
  try {
    return signingKeyFromJwk(id, (alg as SignatureAlgorithm | undefined) ?? impliedAlgorithm(jwk as Record<string, unknown>), jwk);
  } catch (error) {
    throw new UsageError(`--signing-key ${file} is not a private key Gatehouse can sign with: ${(error as Error).message}`);
  }
}

export async function run(args: string[]): Promise<number> {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        'signing-key': { type: 'string' },
        kid: { type: 'string' },
        alg: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    console.error(`gatehouse sessions: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  try {
    if (positionals[0] !== 'code' || positionals.length !== 1) throw new UsageError('the command is: gatehouse sessions code');
    const apiKey = process.env.GATEHOUSE_API_KEY;
    if (!apiKey) throw new UsageError('set GATEHOUSE_API_KEY to the key to sign in for');
    if (!values['signing-key']) throw new UsageError('--signing-key is needed: the code must be asked for with the key\'s signature');
    const baseUrl = values.url ?? process.env.GATEHOUSE_URL ?? 'http://127.0.0.1:8080';
    const signer = await readSigningKey(values['signing-key'], values.kid, values.alg);
    const client = new GatehouseClient({ baseUrl, apiKey, signer });
    const { code, expiresAt } = await client.createSessionCode();
    console.log(code);
    console.error(`one use, until ${expiresAt}: paste it into the sign-in field of ${new URL('/console', baseUrl)}`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`gatehouse sessions: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof GatehouseApiError) {
      console.error(`gatehouse sessions: the server refused: ${error.status} ${error.code}: ${error.problem.detail ?? error.problem.title}`);
      return 1;
    }
    console.error(`gatehouse sessions: ${(error as Error).message}`);
    return 1;
  }
}
