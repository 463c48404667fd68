import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { formatModule } from '../policies/compiler/format/index.ts';

const REGO = fileURLToPath(new URL('../policies/rego/', import.meta.url));

t.test("the project's policies format to a fixed point that parses to the same module", async (t) => {
  const files = (await readdir(REGO, { recursive: true })).filter((f) => f.endsWith('.rego'));
  t.ok(files.length >= 10);
  for (const file of files) {
    const source = await readFile(path.join(REGO, file), 'utf8');
    // formatModule itself refuses output that parses differently or loses a comment.
    const once = formatModule(file, source);
    t.equal(formatModule(file, once), once, file);
  }
});

t.test('precedence, comprehensions, else chains and with survive formatting', async (t) => {
  const source = [
    'package p',
    '',
    'x := (1 + 2) * 3 - (4 - 5)',
    '',
    'f(a) := "big" if a > 10 else := "small"',
    '',
    's := {k: v | some k, v in {"a": 1}; v > 0}',
    '',
    't if not data.p.x == 1 with input as {"a": [1, set()]}',
    '',
    'u if {',
    '\tevery v in [1] {',
    '\t\tv > 0',
    '\t}',
    '}',
    '',
  ].join('\n');
  t.equal(formatModule('p.rego', source), source, 'canonical text is left as it is');
  t.equal(formatModule('p.rego', source.replace('(1 + 2) * 3', '(1+2)*3')), source);
});
