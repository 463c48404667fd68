import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { AuditLog } from '../../core/audit-log.ts';
import { Store } from '../../core/store.ts';

/**
 * `gatehouse audit`: check and export the audit log in the data directory.
 *
 *   gatehouse audit verify [--data-dir D]       walk the hash chain; exit 1 naming the first broken link
 *   gatehouse audit export [--out F] [--data-dir D]   every entry as NDJSON (stdout by default)
 */
export const summary = 'verify the audit hash chain or export it as NDJSON';

const USAGE = 'usage: gatehouse audit verify|export [--out FILE] [--data-dir D]';

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'data-dir': { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [verb] = positionals;
  if (values.help || (verb !== 'verify' && verb !== 'export')) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const store = Store.open({ dataDir: values['data-dir'] ?? process.env.GATEHOUSE_DATA_DIR ?? '.gatehouse' });
  try {
    const audit = new AuditLog(store);
    if (verb === 'verify') {
      const result = audit.verify();
      if (result.ok) {
        console.log(`audit chain intact: ${result.entries} entries, head ${result.head}`);
        return 0;
      }
      console.error(`audit chain broken at entry ${result.broken!.seq}: ${result.broken!.reason} (${result.entries} entries before it hold)`);
      return 1;
    }
    const out = values.out ? createWriteStream(values.out) : process.stdout;
    let count = 0;
    for (const entry of audit.all()) {
      if (!out.write(`${JSON.stringify(entry)}\n`)) await once(out, 'drain');
      count++;
    }
    if (values.out) {
      out.end();
      await once(out, 'finish');
      console.error(`exported ${count} entries to ${values.out}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}
