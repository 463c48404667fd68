import { createHash, createHmac } from 'node:crypto';
import t from 'tap';
import { RE2JS } from 're2js';
import { BUILTINS, nativeExportName } from '../policies/compiler/builtins.ts';
import { ensureRuntime } from '../policies/runtime/build.ts';
import { goCase } from '../scripts/case-tables/go-case.ts';
import { RFC3339_CASES } from './fixtures/rfc3339-cases.ts';

// The string, collection, type and encoding builtins of the policy runtime, called directly as
// Wasm exports. Expected results are what OPA 1.x (Go topdown) returns; undefined stands for
// OPA's type errors, as the runtime does not use strict builtin errors.

type Exports = Record<string, (...args: number[]) => number>;

/** An operand: JSON text, or a value already in the runtime (e.g. a set). */
type Operand = string | number;

// A copy typed over a plain ArrayBuffer, as WebAssembly.compile requires.
const compiled = await WebAssembly.compile(new Uint8Array(await ensureRuntime()));
const memory = new WebAssembly.Memory({ initial: 5 });
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function cString(ptr: number): string {
  const bytes = new Uint8Array(memory.buffer);
  let end = ptr;
  while (bytes[end] !== 0) end++;
  return decoder.decode(bytes.subarray(ptr, end));
}

const instance = await WebAssembly.instantiate(compiled, {
  env: {
    memory,
    opa_abort: (ptr: number) => {
      throw new Error(cString(ptr));
    },
    opa_println: () => {},
  },
  gen: { init: () => {}, eval: () => 0, builtins: () => 0, entrypoints: () => 0, zone_offset: () => 0 },
});
const x = instance.exports as unknown as Exports;

/** Parses JSON text into a value with opa_malloc and opa_json_parse. */
function value(text: string): number {
  const bytes = encoder.encode(text);
  const ptr = x.opa_malloc!(bytes.length);
  new Uint8Array(memory.buffer).set(bytes, ptr);
  const v = x.opa_json_parse!(ptr, bytes.length);
  if (v === 0) throw new Error(`not JSON: ${text}`);
  return v;
}

/** A set holding the elements of a JSON array. */
function set(elements: string): number {
  const s = x.rt_make_set!();
  const array = value(elements);
  for (let i = 0; i < x.rt_iter_count!(array); i++) x.rt_set_add!(s, x.rt_iter_value!(array, i));
  return s;
}

/** A set of sets, each given as a JSON array. */
function setOfSets(...members: string[]): number {
  const s = x.rt_make_set!();
  for (const m of members) x.rt_set_add!(s, set(m));
  return s;
}

function dump(v: number): string | undefined {
  return v === 0 ? undefined : cString(x.opa_json_dump!(v));
}

/** Calls builtin `name` and returns the raw result value (0 for undefined). */
function callValue(name: string, ...operands: Operand[]): number {
  const fn = x[nativeExportName(name)];
  if (!fn) throw new Error(`no export for ${name}`);
  return fn(...operands.map((o) => (typeof o === 'number' ? o : value(o))));
}

/** Calls builtin `name`; the result as JSON text (sets as arrays), or undefined. */
function call(name: string, ...operands: Operand[]): string | undefined {
  return dump(callValue(name, ...operands));
}

/** Calls builtin `name`; the result decoded from JSON, or undefined. */
function result(name: string, ...operands: Operand[]): unknown {
  const text = call(name, ...operands);
  return text === undefined ? undefined : JSON.parse(text);
}

const json = (v: unknown): string => JSON.stringify(v);
const isSet = (v: number): boolean => v !== 0 && x.rt_is_set!(v) === 1;

const MINE = [
  'concat', 'split', 'sprintf', 'trim', 'trim_space', 'trim_prefix', 'trim_suffix', 'trim_left',
  'trim_right', 'replace', 'startswith', 'endswith', 'contains', 'indexof', 'substring',
  'object.get', 'object.keys', 'object.union', 'object.remove', 'array.concat', 'array.slice',
  'union', 'intersection', 'is_string', 'is_number', 'is_boolean', 'is_array', 'is_object',
  'is_set', 'is_null', 'type_name', 'json.marshal', 'json.unmarshal', 'base64.encode',
  'base64.decode', 'regex.match', 'regex.is_valid', 'regex.find_n', 'regex.find_all_string_submatch_n',
  'regex.replace', 'regex.split', 'lower', 'upper', 'net.cidr_contains', 'glob.match', 'time.parse_rfc3339_ns',
  'time.parse_duration_ns', 'time.add_date', 'time.date', 'time.clock', 'time.weekday', 'time.diff',
  'time.format', 'time.parse_ns',
];

t.test('each of these builtins is native and exported with its arity', async (t) => {
  const exported = new Set(WebAssembly.Module.exports(compiled).map((e) => e.name));
  for (const name of MINE) {
    t.equal(BUILTINS[name]?.impl, 'native', `${name} is native`);
    t.ok(exported.has(nativeExportName(name)), `${name} is exported`);
    t.equal(x[nativeExportName(name)]!.length, BUILTINS[name]!.arity, `${name} takes ${BUILTINS[name]!.arity}`);
  }
});

t.test('concat', async (t) => {
  t.equal(result('concat', json(', '), json(['a', 'b', 'c'])), 'a, b, c');
  t.equal(result('concat', json('→'), json(['grüße', '日本', '😀'])), 'grüße→日本→😀');
  t.equal(result('concat', json('-'), set(json(['b', 'a', 'c']))), 'a-b-c', 'a set joins in value order');
  t.equal(result('concat', json('-'), json([])), '');
  t.equal(result('concat', json('-'), json(['only'])), 'only');
  t.equal(result('concat', json(''), json(['a', 'b'])), 'ab');
  t.equal(call('concat', json('-'), json(['a', 1])), undefined, 'a non-string element');
  t.equal(call('concat', json(1), json(['a'])), undefined);
  t.equal(call('concat', json('-'), json('ab')), undefined);
});

t.test('split', async (t) => {
  t.same(result('split', json('a,b,,c'), json(',')), ['a', 'b', '', 'c']);
  t.same(result('split', json('héllo wörld'), json('ö')), ['héllo w', 'rld']);
  t.same(result('split', json('a→b→c'), json('→')), ['a', 'b', 'c'], 'multi-byte delimiter');
  t.same(result('split', json('héllo😀'), json('')), ['h', 'é', 'l', 'l', 'o', '😀'], 'empty delimiter: code points');
  t.same(result('split', json(''), json('')), []);
  t.same(result('split', json(''), json(',')), ['']);
  t.same(result('split', json('abc'), json(',')), ['abc']);
  t.same(result('split', json(',a,'), json(',')), ['', 'a', '']);
  t.same(result('split', json('aaa'), json('aa')), ['', 'a'], 'non-overlapping matches');
  t.equal(call('split', json(1), json(',')), undefined);
  t.equal(call('split', json('a'), json(null)), undefined);
});

t.test('lower and upper map code points like Go', async (t) => {
  t.equal(result('lower', json('AbC')), 'abc');
  t.equal(result('upper', json('AbC')), 'ABC');
  t.equal(result('upper', json('straße')), 'STRAßE', 'ß has no single-code-point uppercase');
  t.equal(result('lower', json('İSTANBUL')), 'istanbul', 'İ lowercases to a plain i');
  t.equal(result('lower', json('ΟΔΟΣ')), 'οδοσ', 'no final-sigma context rule');
  t.equal(result('upper', json('ﬁ')), 'ﬁ', 'ligatures stay');
  t.equal(result('upper', json('ᾳ')), 'ᾼ', 'simple mapping to the prosgegrammeni form');
  t.equal(result('upper', json('émigré ǆ')), 'ÉMIGRÉ Ǆ');
  t.equal(result('lower', json('Ā ā Ǆ ǅ K')), 'ā ā ǆ ǆ k', 'alternating pairs, title case, the Kelvin sign');
  t.equal(result('upper', json('𐐨 😀')), '𐐀 😀', 'beyond the BMP');
  t.equal(result('lower', json('')), '');
  t.equal(result('lower', callValue('base64.decode', json('QcOB/0I='))), 'aá\ufffdb', 'an invalid byte becomes U+FFFD');
  t.equal(call('lower', json(1)), undefined);
  t.equal(call('upper', json(null)), undefined);
});

t.test('lower and upper map every code point by the simple case mapping of the Unicode Go carries', async (t) => {
  const { toLower, toUpper } = await goCase();
  const heap = x.opa_heap_ptr_get!();
  let differences = 0;
  for (let from = 0; from <= 0x10ffff; from += 0x1000) {
    let text = '';
    for (let cp = from; cp < from + 0x1000 && cp <= 0x10ffff; cp++) {
      if (cp < 0xd800 || cp > 0xdfff) text += String.fromCodePoint(cp);
    }
    if (result('lower', json(text)) !== toLower(text)) differences++;
    if (result('upper', json(text)) !== toUpper(text)) differences++;
    x.opa_heap_ptr_set!(heap);
  }
  t.equal(differences, 0, 'blocks of 4096 code points mapped differently');
});

t.test('trim, trim_left, trim_right: cutsets are sets of code points', async (t) => {
  t.equal(result('trim', json('  hello  '), json(' ')), 'hello');
  t.equal(result('trim', json('xyhixy'), json('yx')), 'hi', 'any order, not a prefix');
  t.equal(result('trim', json('ééhéllo!é'), json('é!')), 'héllo');
  t.equal(result('trim', json('😀a😀'), json('😀')), 'a');
  t.equal(result('trim', json('abc'), json('')), 'abc');
  t.equal(result('trim', json('aaa'), json('a')), '');
  t.equal(result('trim_left', json('ééhé'), json('é')), 'hé');
  t.equal(result('trim_left', json('xxaxx'), json('x')), 'axx');
  t.equal(result('trim_right', json('héllo!!'), json('!')), 'héllo');
  t.equal(result('trim_right', json('xxaxx'), json('x')), 'xxa');
  t.equal(result('trim_right', json('aöö'), json('ö')), 'a');
  t.equal(call('trim', json(1), json(' ')), undefined);
  t.equal(call('trim_left', json('a'), json(1)), undefined);
  t.equal(call('trim_right', json(null), json('a')), undefined);
});

t.test('trim_prefix and trim_suffix', async (t) => {
  t.equal(result('trim_prefix', json('héllo'), json('hé')), 'llo');
  t.equal(result('trim_prefix', json('héllo'), json('llo')), 'héllo');
  t.equal(result('trim_prefix', json('aaa'), json('a')), 'aa', 'once');
  t.equal(result('trim_suffix', json('日本語'), json('語')), '日本');
  t.equal(result('trim_suffix', json('héllo'), json('hé')), 'héllo');
  t.equal(result('trim_suffix', json('x'), json('')), 'x');
  t.equal(call('trim_prefix', json(1), json('a')), undefined);
  t.equal(call('trim_suffix', json('a'), json([])), undefined);
});

t.test('trim_space removes Unicode white space', async (t) => {
  t.equal(result('trim_space', json(' \t\n hi \r\n')), 'hi');
  t.equal(result('trim_space', json('\u00a0\u3000héllo wörld\u2003\u0085')), 'héllo wörld');
  t.equal(result('trim_space', json('\u200bx\u200b')), '\u200bx\u200b', 'a zero-width space is not white space');
  t.equal(result('trim_space', json('   ')), '');
  t.equal(call('trim_space', json(1)), undefined);
});

t.test('replace', async (t) => {
  t.equal(result('replace', json('a.b.c'), json('.'), json('::')), 'a::b::c');
  t.equal(result('replace', json('héllo héllo'), json('é'), json('e')), 'hello hello');
  t.equal(result('replace', json('aaaa'), json('aa'), json('b')), 'bb', 'non-overlapping, left to right');
  t.equal(result('replace', json('abc'), json('x'), json('y')), 'abc');
  t.equal(result('replace', json('日本'), json(''), json('-')), '-日-本-', 'an empty pattern matches between code points');
  t.equal(result('replace', json(''), json(''), json('-')), '-');
  t.equal(call('replace', json('a'), json(1), json('b')), undefined);
  t.equal(call('replace', json(1), json('a'), json('b')), undefined);
  t.equal(call('replace', json('a'), json('a'), json(null)), undefined);
});

t.test('startswith, endswith, contains', async (t) => {
  t.equal(result('startswith', json('héllo'), json('hé')), true);
  t.equal(result('startswith', json('héllo'), json('e')), false);
  t.equal(result('startswith', json('a'), json('')), true);
  t.equal(result('endswith', json('日本語'), json('語')), true);
  t.equal(result('endswith', json('日本語'), json('日')), false);
  t.equal(result('endswith', json('a'), json('ab')), false);
  t.equal(result('contains', json('wörld'), json('ör')), true);
  t.equal(result('contains', json('wörld'), json('or')), false);
  t.equal(result('contains', json(''), json('')), true);
  t.equal(call('startswith', json(1), json('a')), undefined);
  t.equal(call('endswith', json('a'), json(1)), undefined);
  t.equal(call('contains', json(['a']), json('a')), undefined);
});

t.test('indexof, indexof_n, contains and strings.count find what a plain search finds, even where every candidate almost matches', async (t) => {
  // Long runs of one byte make the candidate-by-candidate search give way to the linear one.
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const text = (n: number, b: number) => Array.from({ length: n }, () => (random() < b ? 'b' : 'a')).join('');
  for (let round = 0; round < 40; round++) {
    const hay = text(200 + Math.floor(random() * 3000), 0.02);
    const needle = round % 4 === 0 ? hay.slice(hay.length - 150) : `${'a'.repeat(20 + Math.floor(random() * 200))}${random() < 0.5 ? 'b' : ''}${'a'.repeat(Math.floor(random() * 5))}`;
    t.equal(result('indexof', json(hay), json(needle)), hay.indexOf(needle), `round ${round}: indexof`);
    t.equal(result('contains', json(hay), json(needle)), hay.includes(needle), `round ${round}: contains`);
    t.equal(result('strings.count', json(hay), json(needle)), hay.split(needle).length - 1, `round ${round}: strings.count`);
    const every: number[] = [];
    for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + 1)) every.push(at);
    t.same(result('indexof_n', json(hay), json(needle)), every, `round ${round}: indexof_n, overlapping matches too`);
  }
  const late = `${'a'.repeat(5000)}b${'a'.repeat(10)}`;
  t.equal(result('indexof', json(late), json(`${'a'.repeat(100)}b`)), 4900, 'a match after the search turned linear');
  t.equal(result('indexof', json('a'.repeat(100_000)), json(`${'a'.repeat(50_000)}b`)), -1, 'none, in linear time');
});

t.test('indexof counts code points', async (t) => {
  t.equal(result('indexof', json('hello'), json('l')), 2);
  t.equal(result('indexof', json('héllo'), json('l')), 2, 'é is one position');
  t.equal(result('indexof', json('😀日本語'), json('本語')), 2);
  t.equal(result('indexof', json('héllo'), json('z')), -1);
  t.equal(result('indexof', json('héllo'), json('héllo!')), -1);
  t.equal(call('indexof', json('héllo'), json('')), undefined, 'an empty search string is an error');
  t.equal(call('indexof', json(1), json('a')), undefined);
  t.equal(call('indexof', json('a'), json(1)), undefined);
});

t.test('substring counts code points', async (t) => {
  t.equal(result('substring', json('hello world'), json(6), json(5)), 'world');
  t.equal(result('substring', json('héllo wörld'), json(1), json(4)), 'éllo');
  t.equal(result('substring', json('日本語です'), json(2), json(-1)), '語です', 'negative length: to the end');
  t.equal(result('substring', json('日本語'), json(1), json(100)), '本語');
  t.equal(result('substring', json('héllo'), json(5), json(2)), '');
  t.equal(result('substring', json('héllo'), json(99), json(2)), '');
  t.equal(result('substring', json('héllo'), json(0), json(0)), '');
  t.equal(result('substring', json(''), json(0), json(3)), '');
  t.equal(call('substring', json('héllo'), json(-1), json(2)), undefined, 'negative offset');
  t.equal(call('substring', json('héllo'), '1.5', json(2)), undefined, 'not an integer');
  t.equal(call('substring', json('héllo'), '1.0', json(2)), undefined, 'written as a float');
  t.equal(call('substring', json(1), json(0), json(1)), undefined);
});

t.test('sprintf: strings and integers', async (t) => {
  t.equal(result('sprintf', json('%s is %d years'), json(['Ann', 42])), 'Ann is 42 years');
  t.equal(result('sprintf', json('%v|%5d|%-5d|%05d|%+d|% d'), json(['x', 42, 42, 42, 42, 42])), 'x|   42|42   |00042|+42| 42');
  t.equal(result('sprintf', json('%x %X %#x %o %#o %O %b %#b'), json([255, 255, 255, 8, 8, 8, 5, 5])), 'ff FF 0xff 10 010 0o10 101 0b101');
  t.equal(result('sprintf', json('%d %x'), '[-9223372036854775808, -255]'), '-9223372036854775808 -ff');
  t.equal(result('sprintf', json('%.3d|%6.3d|%.0d|%08d'), json([7, 7, 0, -42])), '007|   007||-0000042');
  t.equal(result('sprintf', json('%c%c %U %#U %q'), json([72, 0x1f600, 0x1f600, 0x41, 0xe9])), "H😀 U+1F600 U+0041 'A' 'é'");
  t.equal(result('sprintf', json('%10s|%-7s|%.2s'), json(['héllo', '日本語', 'héllo'])), '     héllo|日本語    |hé', 'widths count code points');
  t.equal(result('sprintf', json('%q %+q %#q'), json(['héllo\n', 'héllo', 'a`b'])), '"héllo\\n" "h\\u00e9llo" "a`b"');
  t.equal(result('sprintf', json('%q'), json(['\u00a0\u200b\u007f\u0001'])), '"\\u00a0\\u200b\\x7f\\x01"', 'non-printable code points are escaped');
  t.equal(result('sprintf', json('%x % X %#x'), json(['hé', 'hé', 'hé'])), '68c3a9 68 C3 A9 0x68c3a9');
  t.equal(result('sprintf', json('100%% %s'), json(['sûr'])), '100% sûr');
  t.equal(result('sprintf', json('日本 %s'), json(['語'])), '日本 語');
  t.equal(result('sprintf', json(''), json([])), '');
});

t.test('sprintf: floats print as Go prints float64', async (t) => {
  t.equal(result('sprintf', json('%v %v %v %v'), '[2.5, 1e6, 0.1, 1234567.5]'), '2.5 1e+06 0.1 1.2345675e+06');
  t.equal(result('sprintf', json('%f %.2f %.0f %.0f %.0f'), '[3.14159, 2.675, 0.5, 1.5, 2.5]'), '3.141590 2.67 0 2 2', 'exact ties round to even');
  t.equal(result('sprintf', json('%e %.3E %g %.3g %G'), '[123456.789, 0.000123456, 0.00001234, 3.14159, 1e-7]'), '1.234568e+05 1.235E-04 1.234e-05 3.14 1E-07');
  t.equal(result('sprintf', json('%08.3f|%-8.2f|%+.1f|% .1f|%010.2f'), '[3.14159, 3.14159, 2.5, 2.5, -3.14159]'), '0003.142|3.14    |+2.5| 2.5|-000003.14');
  t.equal(result('sprintf', json('%#g %#.0f %#.4g'), '[1.0, 1.0, 123000.0]'), '1.00000 1. 1.230e+05');
  t.equal(result('sprintf', json('%x %b'), '[1.5, 1.0]'), '0x1.8p+00 4503599627370496p-52');
  t.equal(result('sprintf', json('%v %.20f'), '[0.30000000000000004, 0.1]'), '0.30000000000000004 0.10000000000000000555');
  t.equal(result('sprintf', json('%d'), '[1.5]'), '%!d(float64=1.5)');
  t.equal(result('sprintf', json('%d %v'), '[1.0, 1.0]'), '%!d(float64=1) 1', 'a number written with a fraction is a float64');
});

t.test('sprintf: other values are their Rego text', async (t) => {
  const values = x.rt_make_array!(6);
  for (const v of ['[1, "a", [true]]', '{"b": 1, "a": {"c": null}}', 'true', 'null', '"é"']) x.rt_array_append!(values, value(v));
  x.rt_array_append!(values, set('[3, "x", 1]'));
  t.equal(result('sprintf', json('%v|%v|%v|%v|%v|%v'), values), '[1, "a", [true]]|{"a": {"c": null}, "b": 1}|true|null|é|{1, 3, "x"}');
  const empty = x.rt_make_array!(2);
  x.rt_array_append!(empty, set('[]'));
  x.rt_array_append!(empty, value('{}'));
  t.equal(result('sprintf', json('%v %v'), empty), 'set() {}');
  t.equal(result('sprintf', json('%v'), json([['héllo\t"q"', 'a\u00a0b']])), '["héllo\\t\\"q\\"", "a\\u00a0b"]', 'strings inside are Go-quoted');
  t.equal(result('sprintf', json('%s|%d|%t|%q'), json([[1], true, true, { k: 'v' }])), '[1]|%!d(string=true)|%!t(string=true)|"{\\"k\\": \\"v\\"}"');
});

t.test('sprintf: integers beyond 64 bits are big.Int', async (t) => {
  const big = '12345678901234567890123';
  t.equal(result('sprintf', json('%d %v %s'), `[${big}, ${big}, ${big}]`), `${big} ${big} ${big}`);
  t.equal(result('sprintf', json('%x %X %#x %o %b'), `[${big}, ${big}, ${big}, 99999999999999999999, 18446744073709551616]`),
    '29d42b64e76714244cb 29D42B64E76714244CB 0x29d42b64e76714244cb 12657072742654303777777 1' + '0'.repeat(64));
  t.equal(result('sprintf', json('%+d|%30d|%-25d|%025d|%T'), `[${big}, ${big}, -${big}, ${big}, ${big}]`),
    `+${big}|${' '.repeat(7)}${big}|-${big} |00${big}|*big.Int`);
  t.equal(result('sprintf', json('%f'), `[${big}]`), `%!f(big.Int=${big})`);
});

t.test('sprintf: errors are written as Go writes them', async (t) => {
  t.equal(result('sprintf', json('%d %d'), json([1])), '1 %!d(MISSING)');
  t.equal(result('sprintf', json('%d'), json([1, 'a', 2.5])), '1%!(EXTRA string=a, float64=2.5)');
  t.equal(result('sprintf', json('%s %d %z'), json([1, 'x', 1])), '%!s(int=1) %!d(string=x) %!z(int=1)');
  t.equal(result('sprintf', json('%[2]s %[1]s %[3]d'), json(['a', 'b'])), 'b a %!d(BADINDEX)');
  t.equal(result('sprintf', json('%*d|%-*d|%.*f'), json([5, 42, 4, 7, 2, 3.14159])), '   42|7   |3.14');
  t.equal(result('sprintf', json('%*d'), json(['w', 42])), '%!(BADWIDTH)42');
  t.equal(result('sprintf', json('abc%'), json([])), 'abc%!(NOVERB)');
  t.equal(result('sprintf', json('%!'), json([1])), '%!!(int=1)');
  t.equal(result('sprintf', json('%é'), json([1])), '%!é(int=1)');
  t.equal(call('sprintf', json(1), json([])), undefined);
  t.equal(call('sprintf', json('%v'), json('x')), undefined, 'the operands must be an array');
  t.equal(call('sprintf', json('%v'), set('[1]')), undefined);
});

t.test('object.get', async (t) => {
  const doc = json({ a: { b: [10, { c: 'ç' }] }, 'ké': 1 });
  t.equal(result('object.get', doc, json('ké'), json('none')), 1);
  t.equal(result('object.get', doc, json('zz'), json('none')), 'none');
  t.equal(result('object.get', doc, json(['a', 'b', 1, 'c']), json('none')), 'ç', 'a path through objects and arrays');
  t.equal(result('object.get', doc, json(['a', 'b', 2]), json('none')), 'none');
  t.equal(result('object.get', doc, json(['a', 'b', '1']), json('none')), 'none', 'array indexes are numbers');
  t.same(result('object.get', json({ a: 1 }), json([]), json(0)), { a: 1 }, 'the empty path is the object');
  const withSet = x.rt_make_object!();
  x.rt_object_insert!(withSet, value('"s"'), set('["é", "x"]'));
  t.equal(result('object.get', withSet, json(['s', 'é']), json(false)), 'é', 'a set member is its own value');
  t.equal(result('object.get', withSet, json(['s', 'y']), json(false)), false);
  t.equal(call('object.get', json(['a']), json(0), json(1)), undefined, 'not an object');
});

t.test('object.keys', async (t) => {
  const keys = callValue('object.keys', json({ b: 1, 'é': 2, a: 3 }));
  t.ok(isSet(keys), 'a set');
  t.equal(dump(keys), json(['a', 'b', 'é']));
  t.equal(call('object.keys', json({})), '[]');
  t.equal(call('object.keys', json(['a'])), undefined);
  t.equal(call('object.keys', set('["a"]')), undefined);
});

t.test('object.union merges recursively, right wins', async (t) => {
  t.same(result('object.union', json({ a: 1, b: 2 }), json({ b: 3, c: 4 })), { a: 1, b: 3, c: 4 });
  t.same(
    result('object.union', json({ a: { x: 1, y: { p: 1 } }, k: 'é' }), json({ a: { y: { q: 2 }, z: 3 } })),
    { a: { x: 1, y: { p: 1, q: 2 }, z: 3 }, k: 'é' },
  );
  t.same(result('object.union', json({ a: { x: 1 } }), json({ a: 'ü' })), { a: 'ü' }, 'a non-object replaces an object');
  t.same(result('object.union', json({ a: 5 }), json({ a: { x: 1 } })), { a: { x: 1 } });
  t.same(result('object.union', json({}), json({})), {});
  t.equal(call('object.union', json({}), json([])), undefined);
  t.equal(call('object.union', json('a'), json({})), undefined);
});

t.test('object.remove takes keys as an array, a set or an object', async (t) => {
  const doc = json({ a: 1, b: 2, 'ç': 3 });
  t.same(result('object.remove', doc, json(['a', 'ç', 'zz'])), { b: 2 });
  t.same(result('object.remove', doc, set('["b"]')), { a: 1, 'ç': 3 });
  t.same(result('object.remove', doc, json({ a: 0, b: 0 })), { 'ç': 3 }, 'an object: its keys');
  t.same(result('object.remove', doc, json([])), { a: 1, b: 2, 'ç': 3 });
  t.equal(call('object.remove', doc, json('a')), undefined);
  t.equal(call('object.remove', json(['a']), json(['a'])), undefined);
});

t.test('array.concat', async (t) => {
  t.same(result('array.concat', json([1, 2]), json([3])), [1, 2, 3]);
  t.same(result('array.concat', json(['é']), json([])), ['é']);
  t.same(result('array.concat', json([]), json([])), []);
  t.equal(call('array.concat', json([1]), set('[2]')), undefined);
  t.equal(call('array.concat', json('ab'), json([1])), undefined);
});

t.test('array.slice clamps its indexes', async (t) => {
  const a = json(['a', 'é', 'c', 'd']);
  t.same(result('array.slice', a, json(1), json(3)), ['é', 'c']);
  t.same(result('array.slice', a, json(-5), json(10)), ['a', 'é', 'c', 'd']);
  t.same(result('array.slice', a, json(3), json(1)), [], 'start past stop');
  t.same(result('array.slice', a, json(2), json(-1)), []);
  t.same(result('array.slice', a, json(4), json(9)), []);
  t.equal(call('array.slice', a, '1.5', json(2)), undefined, 'indexes must be integers');
  t.equal(call('array.slice', json('abc'), json(0), json(1)), undefined);
});

t.test('union and intersection of a set of sets', async (t) => {
  const u = callValue('union', setOfSets('[1, 2]', '[2, 3]', '["é"]'));
  t.ok(isSet(u));
  t.equal(dump(u), json([1, 2, 3, 'é']));
  t.equal(call('union', setOfSets()), '[]');
  t.equal(call('union', setOfSets('[[1], {"a": 1}]')), json([[1], { a: 1 }]));
  const i = callValue('intersection', setOfSets('[1, 2, "ü"]', '[2, "ü", 4]', '["ü", 2]'));
  t.ok(isSet(i));
  t.equal(dump(i), json([2, 'ü']));
  t.equal(call('intersection', setOfSets('[1]', '[2]')), '[]');
  t.equal(call('intersection', setOfSets()), '[]');
  t.equal(call('union', json([[1]])), undefined, 'an array is not a set');
  const mixed = set('[1]');
  x.rt_set_add!(mixed, set('[2]'));
  t.equal(call('union', mixed), undefined, 'every member must be a set');
  t.equal(call('intersection', mixed), undefined);
});

t.test('type tests and type_name', async (t) => {
  const samples: [string, Operand][] = [
    ['null', 'null'], ['boolean', 'false'], ['number', '1.5'], ['string', json('ü')],
    ['array', '[]'], ['object', '{}'], ['set', set('[1]')],
  ];
  for (const [type, operand] of samples) {
    t.equal(result('type_name', operand), type, `type_name of ${type}`);
    for (const test of ['null', 'boolean', 'number', 'string', 'array', 'object', 'set']) {
      t.equal(result(`is_${test}`, operand), test === type, `is_${test} of ${type}`);
    }
  }
});

t.test('json.marshal writes what Go json.Marshal writes', async (t) => {
  t.equal(result('json.marshal', json({ b: [1, 'x'], a: { c: null, d: true } })), '{"a":{"c":null,"d":true},"b":[1,"x"]}');
  t.equal(result('json.marshal', json('héllo "wörld"\n')), '"héllo \\"wörld\\"\\n"');
  t.equal(result('json.marshal', json('<a href="x">&</a>\u2028')), '"\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e\\u2028"', 'HTML-safe escaping');
  t.equal(result('json.marshal', json('\u0001\b\f\t')), '"\\u0001\\b\\f\\t"');
  t.equal(result('json.marshal', set('[3, 1, "a"]')), '[1,3,"a"]', 'a set is an array');
  t.equal(result('json.marshal', '2.5'), '2.5');
  const keys = x.rt_make_object!();
  x.rt_object_insert!(keys, value('1'), value('"one"'));
  x.rt_object_insert!(keys, value('"0"'), value('"zero"'));
  x.rt_object_insert!(keys, value('[1, "<"]'), value('"array"'));
  t.equal(result('json.marshal', keys), '{"0":"zero","1":"one","[1,\\"\\\\u003c\\"]":"array"}', 'keys that are not strings are their JSON text');
  const invalid = callValue('base64.decode', json('/w=='));
  t.equal(result('json.marshal', invalid), '"\\ufffd"', 'invalid UTF-8 is written as U+FFFD');
});

t.test('json.unmarshal', async (t) => {
  t.same(result('json.unmarshal', json('{"a": [1, 2.5, "é", null, true]}')), { a: [1, 2.5, 'é', null, true] });
  t.equal(result('json.unmarshal', json(' "\\u00e9\\ud83d\\ude00" ')), 'é😀');
  t.same(result('json.unmarshal', json('[]')), []);
  t.equal(call('json.unmarshal', json('{"a":')), undefined, 'invalid JSON');
  t.equal(call('json.unmarshal', json('[1] [2]')), undefined, 'trailing content');
  t.equal(call('json.unmarshal', json('')), undefined);
  t.equal(call('json.unmarshal', json(['{}'])), undefined);
});

t.test('base64.encode and base64.decode', async (t) => {
  t.equal(result('base64.encode', json('hello')), 'aGVsbG8=');
  t.equal(result('base64.encode', json('héllo 😀')), 'aMOpbGxvIPCfmIA=');
  t.equal(result('base64.encode', json('')), '');
  t.equal(result('base64.encode', json('ab')), 'YWI=');
  t.equal(result('base64.decode', json('aMOpbGxvIPCfmIA=')), 'héllo 😀');
  t.equal(result('base64.decode', json('YWI=')), 'ab');
  t.equal(result('base64.decode', json('YW==')), 'a', 'unused low bits may be set, as StdEncoding allows');
  t.equal(result('base64.decode', json('YW\nI=\r\n')), 'ab', 'line breaks are skipped');
  t.equal(result('base64.decode', json('')), '');
  t.equal(result('base64.decode', json('+/+/')), '\ufffd\ufffd\ufffd', 'bytes that are not UTF-8 are kept (and print as U+FFFD)');
  for (const bad of ['YWI', 'Y===', 'YWI=YWI=', 'YWI=x', 'YW!=', 'aGVsbG8']) {
    t.equal(call('base64.decode', json(bad)), undefined, `invalid: ${bad}`);
  }
  t.equal(call('base64.encode', json(1)), undefined);
  t.equal(call('base64.decode', json(null)), undefined);
});

t.test('net.cidr_contains handles IPv4, IPv6 and networks like Go net', async (t) => {
  const contains = (cidr: unknown, cidrOrIp: unknown) => result('net.cidr_contains', json(cidr), json(cidrOrIp));
  t.equal(contains('10.0.0.0/8', '10.1.2.3'), true);
  t.equal(contains('10.0.0.0/8', '11.0.0.1'), false);
  t.equal(contains('10.0.0.0/8', '10.20.0.0/16'), true);
  t.equal(contains('10.0.0.0/16', '10.0.0.0/8'), false);
  t.equal(contains('10.0.0.0/8', '10.0.0.0/8'), true);
  t.equal(contains('0.0.0.0/0', '0.0.0.0/8'), true);
  t.equal(contains('192.168.1.7/24', '192.168.1.200'), true, 'host bits are masked');
  t.equal(contains('2001:db8::/32', '2001:db8:1::1'), true);
  t.equal(contains('2001:db8::/32', '2001:db9::1'), false);
  t.equal(contains('2001:db8::/32', '2001:db8:ab00::/40'), true);
  t.equal(contains('fd00::/8', 'fd12:3456:789a:1::1'), true);
  t.equal(contains('10.0.0.0/8', '::ffff:10.1.1.1'), true, 'IPv4-mapped IPv6 is IPv4');
  t.equal(contains('::ffff:10.0.0.0/104', '10.9.9.9'), true);
  t.equal(contains('::/0', '1.2.3.4'), false, 'an IPv6 network holds no IPv4 address');
  t.equal(contains('::/0', '::1'), true);
  t.equal(contains('10.0.0.0/8', '2001:db8::1'), false);
  t.equal(contains('10.0.0.0/33', '10.0.0.1'), undefined, 'prefix too long');
  t.equal(contains('10.0.0.0', '10.0.0.1'), undefined, 'not a CIDR');
  t.equal(contains('010.0.0.0/8', '10.0.0.1'), undefined, 'leading zeros refused');
  t.equal(contains('10.0.0.0/8', '10.0.0.256'), undefined);
  t.equal(contains('10.0.0.0/8', 'fe80::1%eth0'), undefined, 'zones refused');
  t.equal(contains('2001:db8::/32', '2001:db8:::1'), undefined);
  t.equal(contains('2001:db8::/32', '1:2:3:4:5:6:7::8'), undefined, ':: must replace a group');
  t.equal(contains('2001:db8::/32', '2001:db8:0:0:0:0:0:1'), true);
  t.equal(contains('::ffff:0:0/96', '::ffff:1.2.3.4'), true);
  t.equal(contains('::/0', '::'), true, 'the unspecified address');
  t.equal(contains('::/96', '::1.2.3.4'), true, 'an embedded IPv4 address after ::');
  t.equal(contains('::/0', '1:2:3:4:5:6:1.2.3.4'), true, 'an embedded IPv4 address in the last 32 bits');
  t.equal(contains('::/0', '1:2:3:4:5:1.2.3.4'), undefined, 'an embedded IPv4 address elsewhere');
  t.equal(contains('::/0', '1::2::3'), undefined, 'two ::');
  t.equal(contains('::/0', '12345::'), undefined, 'a group of five digits');
  t.equal(contains('10.0.0.0/8', '10.1.2.3.'), undefined);
  t.equal(contains('10.0.0.0/', '10.1.2.3'), undefined, 'no prefix length');
  t.equal(contains('10.0.0.0/8', '1000.1.2.3'), undefined);
  t.equal(contains(1, '10.0.0.1'), undefined);
  t.equal(contains('10.0.0.0/8', null), undefined);
});

t.test('glob.match follows OPA (gobwas/glob)', async (t) => {
  const glob = (pattern: unknown, delimiters: unknown, match: unknown) => result('glob.match', json(pattern), json(delimiters), json(match));
  // The examples of OPA's documentation.
  t.equal(glob('*.github.com', [], 'api.github.com'), true);
  t.equal(glob('*.github.com', [], 'api.cdn.github.com'), false);
  t.equal(glob('*hub.com', null, 'api.cdn.github.com'), true);
  t.equal(glob('*:github:com', [':'], 'api:github:com'), true);
  t.equal(glob('api.**.com', [], 'api.github.com'), true);
  t.equal(glob('api.**.com', [], 'api.cdn.github.com'), true);
  t.equal(glob('?at', [], 'cat'), true);
  t.equal(glob('?at', [], 'at'), false);
  t.equal(glob('[abc]at', [], 'bat'), true);
  t.equal(glob('[abc]at', [], 'fat'), false);
  t.equal(glob('[!abc]at', [], 'fat'), true);
  t.equal(glob('[!abc]at', [], 'cat'), false);
  t.equal(glob('[a-c]at', [], 'cat'), true);
  t.equal(glob('[a-c]at', [], 'fat'), false);
  t.equal(glob('[!a-c]at', [], 'fat'), true);
  t.equal(glob('{cat,bat,[fr]at}', [], 'rat'), true);
  t.equal(glob('{cat,bat,[fr]at}', [], 'at'), false);

  t.equal(glob('*', [], 'a.b'), false, '* stops at the default delimiter');
  t.equal(glob('*', null, 'a.b'), true, 'null means no delimiters');
  t.equal(glob('?', [], '.'), false, '? does not match a delimiter');
  t.equal(glob('[.]', [], '.'), true, 'a class matches delimiters too');
  t.equal(glob('/api/*', ['/'], '/api/users'), true);
  t.equal(glob('/api/*', ['/'], '/api/users/1'), false);
  t.equal(glob('/api/**', ['/'], '/api/users/1'), true);
  t.equal(glob('a\\*b', [], 'a*b'), true, 'escapes');
  t.equal(glob('a\\*b', [], 'axb'), false);
  t.equal(glob('a(b)+c|d', [], 'a(b)+c|d'), true, 'regex characters are literal');
  t.equal(glob('{a,{b,c}d}', [], 'cd'), true, 'nested alternatives');
  t.equal(glob('x,y}', [], 'x,y}'), true, ', and } are text outside braces');
  t.equal(glob('', [], ''), true);

  t.equal(glob('[a', [], 'a'), undefined, 'unclosed class');
  t.equal(glob('[]', [], 'a'), undefined, 'empty class');
  t.equal(glob('[z-a]', [], 'a'), undefined, 'reversed range');
  t.equal(glob('*', 'x', 'a'), undefined, 'delimiters must be an array or null');
  t.equal(glob('*', ['ab'], 'a'), undefined, 'delimiters are single characters');
  t.equal(glob('*', [1], 'a'), undefined, 'delimiters are strings');
  t.equal(glob('*', [''], 'a'), undefined);
  t.equal(glob('*', ['😀'], 'a😀b'), false, 'a delimiter beyond the BMP');
  t.equal(glob('[😀-😂]', null, '😁'), true, 'ranges of code points');
  t.equal(glob('{a,b', [], 'b'), true, 'a group left open ends with the pattern');
  t.equal(glob('{}x', [], 'x'), true, 'an empty group matches nothing');
  t.equal(glob('a\\', [], 'a'), true, 'a trailing backslash is dropped');
  t.equal(glob('[\\]]', [], ']'), true, 'escapes in a class');
  t.equal(glob('***', [], 'a.b'), true, '** then *');
  t.equal(glob(1, [], 'a'), undefined);
  t.equal(glob('*', [], 1), undefined);
});

t.test('glob.match takes time bounded by pattern × subject', async (t) => {
  const started = Date.now();
  t.equal(result('glob.match', json('*a*a*a*a*a*a*a*a*b'), json(null), json('a'.repeat(20000))), false);
  t.equal(result('glob.match', json('{a,{a,{a,aa}}}*{a,aa}*c'), json(null), json('a'.repeat(20000))), false);
  t.ok(Date.now() - started < 2000, 'no backtracking');
});

/** A builtin's integer result as the exact integer of its JSON text, or undefined. */
const integer = (name: string, ...operands: Operand[]): bigint | undefined => {
  const text = call(name, ...operands);
  return text === undefined ? undefined : BigInt(text);
};

t.test('time.parse_rfc3339_ns parses like Go time.RFC3339, to exact nanoseconds', async (t) => {
  for (const [text, ns, why] of RFC3339_CASES) t.equal(integer('time.parse_rfc3339_ns', json(text)), ns, why ?? JSON.stringify(text));
});

t.test('time.parse_duration_ns parses like Go time.ParseDuration', async (t) => {
  const duration = (s: unknown) => integer('time.parse_duration_ns', json(s));
  t.equal(duration('1h30m'), 5_400_000_000_000n);
  t.equal(duration('1.5s'), 1_500_000_000n);
  t.equal(duration('-2m'), -120_000_000_000n);
  t.equal(duration('+300ms'), 300_000_000n);
  t.equal(duration('1µs'), 1_000n, 'micro sign');
  t.equal(duration('1μs'), 1_000n, 'Greek mu');
  t.equal(duration('1us2ns'), 1_002n);
  t.equal(duration('0'), 0n);
  t.equal(duration('-0'), 0n);
  t.equal(duration('.5h1.m'), 1_860_000_000_000n, 'a number may start or end with its point');
  t.equal(duration('1.0000000001s'), 1_000_000_000n, 'the fraction is truncated to nanoseconds');
  t.equal(duration('2562047h47m16.854775807s'), 2n ** 63n - 1n, 'the largest duration');
  t.equal(duration('-2562047h47m16.854775808s'), -(2n ** 63n), 'the smallest');
  t.equal(duration('2562047h47m16.854775808s'), undefined, 'beyond int64');
  t.equal(duration('99999999999999999999h'), undefined);
  t.equal(duration('1'), undefined, 'a unit is required');
  t.equal(duration('1d'), undefined, 'no days');
  t.equal(duration('.s'), 0n, "Go reads '.' as zero");
  t.equal(duration(''), undefined);
  t.equal(duration('1.2.3s'), undefined);
  t.equal(duration(1), undefined);
});

t.test('time.date, time.clock, time.weekday and time.add_date in UTC', async (t) => {
  t.same(result('time.date', json(1577836800000000000)), [2020, 1, 1]);
  t.same(result('time.clock', json(1577840523000000000)), [1, 2, 3]);
  t.same(result('time.date', '[1577836800000000000, "UTC"]'), [2020, 1, 1]);
  t.same(result('time.date', '[1577836800000000000, ""]'), [2020, 1, 1], '"" is UTC');
  t.same(result('time.date', '[1577836800000000000]'), [2020, 1, 1], 'a zone is optional');
  t.same(result('time.date', '[1577836800000000000, "UTC", "2006"]'), [2020, 1, 1], "time.format's layout is allowed");
  t.same(result('time.date', json(-1)), [1969, 12, 31], 'before the epoch, floored');
  t.same(result('time.clock', json(-1)), [23, 59, 59]);
  t.same(result('time.date', '-9223372036854775808'), [1677, 9, 21], 'the first int64 nanosecond');
  t.same(result('time.date', '9223372036854775807'), [2262, 4, 11], 'the last');
  t.same(result('time.date', json(951782400000000000)), [2000, 2, 29], 'a leap day of a century divisible by 400');
  t.equal(result('time.weekday', json(1577836800000000000)), 'Wednesday');
  t.equal(result('time.weekday', json(0)), 'Thursday');
  t.equal(result('time.weekday', json(-1)), 'Wednesday');
  t.equal(call('time.date', json(1.5)), undefined, 'not an integer');
  t.equal(call('time.date', '1e19'), undefined, 'beyond int64');
  t.equal(call('time.date', '[]'), undefined);
  t.equal(call('time.date', '[0, 1]'), undefined, 'a zone is a string');
  t.equal(call('time.date', json('2020-01-01')), undefined);
  t.equal(call('time.date', '[0, "Europe/Paris"]'), undefined, 'a named zone the host did not answer for');

  const add = (...operands: string[]) => integer('time.add_date', ...operands);
  t.equal(add('1577836800000000000', '0', '1', '30'), 1583107200000000000n);
  t.equal(add('1548892800000000000', '0', '1', '0'), 1551571200000000000n, '2019-01-31 plus a month is 2019-03-03');
  t.equal(add('1577836800000000000', '-1', '0', '0'), 1546300800000000000n);
  t.equal(add('1609459200000000001', '0', '0', '1'), 1609545600000000001n, 'exact beyond 2^53');
  t.equal(add('[1577836800000000000, "UTC"]', '0', '0', '1'), 1577923200000000000n, 'a time in UTC');
  t.equal(add('0', '300', '0', '0'), undefined, 'beyond int64');
  t.equal(add('0', '0', '0', '1e12'), undefined);
  t.equal(add('0', '0', '0', '1.5'), undefined, 'not an integer');
  t.equal(add(json('2020-01-01'), '0', '0', '1'), undefined);
});

t.test('time.diff borrows as OPA does', async (t) => {
  t.same(result('time.diff', json(1577836800000000000), json(1614834367000000000)), [1, 2, 3, 5, 6, 7]);
  t.same(result('time.diff', json(1614834367000000000), json(1577836800000000000)), [1, 2, 3, 5, 6, 7], 'either order');
  t.same(result('time.diff', json(1580428800000000000), json(1583020800000000000)), [0, 1, 1, 0, 0, 0], "the earlier month's days");
  t.same(result('time.diff', json(0), json(0)), [0, 0, 0, 0, 0, 0]);
  t.equal(call('time.diff', json(0), json('x')), undefined);
});

t.test('time.format writes every element of a Go layout', async (t) => {
  const format = (ns: string, layout: string) => result('time.format', `[${ns}, "UTC", ${json(layout)}]`);
  const t0 = '1257894000000000000'; // Tuesday 2009-11-10 23:00:00 UTC, day 314 of the year
  t.equal(result('time.format', t0), '2009-11-10T23:00:00Z', 'RFC3339Nano by default');
  t.equal(result('time.format', `[${t0}, "", ""]`), '2009-11-10T23:00:00Z', 'an empty layout is the default');
  t.equal(format(t0, 'Kitchen'), 'Kitchen', 'a name OPA does not list is a layout like any other');
  t.equal(format(t0, 'RFC850'), 'Tuesday, 10-Nov-09 23:00:00 UTC');
  t.equal(format(t0, 'ANSIC'), 'Tue Nov 10 23:00:00 2009');
  t.equal(format(t0, '3:04PM 03 pm'), '11:00PM 11 pm', '12-hour clock');
  t.equal(format(t0, 'Jan January Mon Monday'), 'Nov November Tue Tuesday');
  t.equal(format(t0, 'Janu Mond'), 'Janu Mond', 'a name followed by a lower-case letter is text');
  t.equal(format(t0, '_2 __2 002 1 2 06 _2006'), '10 314 314 11 10 09 _2009');
  t.equal(format(t0, 'Z07 Z07:00 -07:00:00 -0700 MST'), 'Z Z +00:00:00 +0000 UTC');
  t.equal(format(t0, '.000 ,999'), '.000 ', 'zeros kept, or trimmed away with the separator');
  const t1 = '1257894000123456789';
  t.equal(format(t1, '05.000 05,999999 .999999999999'), '00.123 00,123456 .123456789');
  t.equal(result('time.format', '1257894000120000000'), '2009-11-10T23:00:00.12Z', 'RFC3339Nano trims trailing zeros');
  t.equal(format('-1', '2006-01-02 15:04:05.000000000'), '1969-12-31 23:59:59.999999999', 'before the epoch');
  t.equal(format(t0, '15:04:05 PM'), '23:00:00 PM');
  t.equal(format('1257811200000000000', '3PM'), '12AM', 'midnight');
  t.equal(call('time.format', `[${t0}, "UTC", 1]`), undefined, 'a layout is a string');
  t.equal(call('time.format', `[${t0}, "Europe/Paris", "MST"]`), undefined, 'a named zone the host did not answer for');
  t.equal(call('time.format', '1e19'), undefined, 'beyond int64');
});

t.test('time.parse_ns reads a value by a Go layout as Go time.Parse does', async (t) => {
  const parse = (layout: string, value: string) => integer('time.parse_ns', json(layout), json(value));
  t.equal(parse('2006-01-02', '2024-02-03'), 1706918400000000000n);
  t.equal(parse('Jan _2 2006', 'feb  3 2024'), 1706918400000000000n, 'names in any case, _2 after a space');
  t.equal(parse('Monday 2006-01-02', 'FRIDAY 2024-01-01'), 1704067200000000000n, 'the weekday is read and not checked');
  t.equal(parse('2006-01-02 3:04PM', '2024-01-01 12:30AM'), 1704069000000000000n, '12 AM is midnight');
  t.equal(parse('2006-01-02 3:04PM', '2024-01-01 12:30PM'), 1704112200000000000n, '12 PM is noon');
  t.equal(parse('2006-01-02 15:04:05', '2024-02-03 10:00:00.123'), 1706954400123000000n, 'a fraction the layout does not ask for');
  t.equal(parse('2006-01-02 15:04:05.999', '2024-02-03 10:00:00'), 1706954400000000000n, '.999 is optional');
  t.equal(parse('2006-01-02 15:04:05.000', '2024-02-03 10:00:00.12'), undefined, '.000 wants every digit');
  t.equal(parse('2006 002', '2024 060'), 1709164800000000000n, 'day 60 of a leap year');
  t.equal(parse('2006 002', '2023 060'), 1677628800000000000n);
  t.equal(parse('2006-01-02 MST', '2024-01-01 PST'), 1704067200000000000n, 'an abbreviation leaves the clock as read');
  t.equal(parse('2006-01-02 -0700', '2024-01-01 +0100'), 1704063600000000000n);
  t.equal(parse('2006-01-02 Z07:00', '2024-01-01 Z'), 1704067200000000000n);
  t.equal(parse('2006 1 2', '2024   1 2'), 1704153600000000000n, 'a space matches a run of spaces');
  t.equal(parse('RFC3339', '2017-06-02T19:00:00-07:00'), 1496455200000000000n);
  t.equal(parse('2006-01-02', '2021-02-30'), undefined, 'no February 30');
  t.equal(parse('2006-01-02', '2024-01-01 '), undefined, 'extra text');
  t.equal(parse('15:04:05', '10:00:00'), undefined, 'year 0 is beyond int64');
  t.equal(parse('2006-01-02 15:04', '2024-01-01 24:00'), undefined, 'hour out of range');
  t.equal(integer('time.parse_ns', json(1), json('2')), undefined, 'operands are strings');
});

t.test('walk: every [path, value] pair, the document first, children in order', async (t) => {
  t.equal(BUILTINS['walk']!.relation, true, 'a relation the planner iterates');
  t.same(result('walk', json({ a: [1, { b: 2 }], c: null })), [
    [[], { a: [1, { b: 2 }], c: null }],
    [['a'], [1, { b: 2 }]],
    [['a', 0], 1],
    [['a', 1], { b: 2 }],
    [['a', 1, 'b'], 2],
    [['c'], null],
  ]);
  t.same(result('walk', json(5)), [[[], 5]], 'a scalar is its own only pair');
  t.same(result('walk', json([])), [[[], []]]);
  const withSet = x.rt_make_object!();
  x.rt_object_insert!(withSet, value('"s"'), set('["y", "x"]'));
  t.same(result('walk', withSet), [[[], { s: ['x', 'y'] }], [['s'], ['x', 'y']], [['s', 'x'], 'x'], [['s', 'y'], 'y']],
    'a set element is its own key, in value order');
});

t.test('json.patch applies RFC 6902 operations as OPA does', async (t) => {
  const patch = (doc: unknown, ops: unknown) => result('json.patch', json(doc), json(ops));
  t.same(patch({ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }]), { foo: 'bar', baz: 'qux' });
  t.same(patch({ foo: ['bar', 'baz'] }, [{ op: 'add', path: '/foo/1', value: 'qux' }]), { foo: ['bar', 'qux', 'baz'] });
  t.same(patch([1, 2], [{ op: 'add', path: '/-', value: 3 }]), [1, 2, 3], '- is the end of an array');
  t.same(patch([1, 2], [{ op: 'add', path: '/2', value: 3 }]), [1, 2, 3], 'the length is the end too');
  t.same(patch({ a: { b: 1 } }, [{ op: 'remove', path: '/a/b' }]), { a: {} });
  t.same(patch([1, 2, 3, 4], [{ op: 'remove', path: '/1' }, { op: 'remove', path: '/2' }]), [1, 3], 'operations apply in turn');
  t.same(patch({ a: 1 }, [{ op: 'replace', path: '/a', value: [2] }]), { a: [2] });
  t.same(patch({ foo: ['all', 'grass', 'cows', 'eat'] }, [{ op: 'move', from: '/foo/1', path: '/foo/3' }]), { foo: ['all', 'cows', 'eat', 'grass'] });
  t.same(patch({ a: { b: 1 } }, [{ op: 'copy', from: '/a', path: '/c' }]), { a: { b: 1 }, c: { b: 1 } });
  t.same(patch({ a: [1, { b: 2 }] }, [{ op: 'test', path: '/a', value: [1, { b: 2 }] }]), { a: [1, { b: 2 }] });
  t.same(patch({ '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: 10 }]), { '/': 9, '~1': 10 }, '~0 and ~1 escapes');
  t.same(patch({}, [{ op: 'add', path: '/', value: 1 }]), { '': 1 }, '"/" names the empty key');
  t.same(patch({}, [{ op: 'add', path: 'a', value: 1 }]), { a: 1 }, 'the leading slash may be left out');
  t.same(patch({ a: 1 }, [{ op: 'add', path: '', value: [2] }]), [2], 'an empty path is the whole document');
  t.same(patch({ a: { 1: 'x' } }, [{ op: 'test', path: '/a/1', value: 'x' }]), { a: { 1: 'x' } }, 'a pointer\'s keys are strings');
  t.equal(patch({ a: { 1: 'x' } }, [{ op: 'test', path: ['a', 1], value: 'x' }]), undefined, 'an array path keeps its key types');
  t.same(patch({ a: ['x'] }, [{ op: 'add', path: ['a', 0], value: 'y' }]), { a: ['y', 'x'] });
  t.equal(patch(7, [{ op: 'replace', path: '', value: 8 }]), 8, 'any document');
  t.same(patch({ a: 1 }, []), { a: 1 });

  t.equal(patch({ a: 1 }, [{ op: 'test', path: '/a', value: 2 }]), undefined, 'a failed test');
  t.equal(patch({ a: 1 }, [{ op: 'remove', path: '/b' }]), undefined, 'removing what is not there');
  t.equal(patch({ a: 1 }, [{ op: 'replace', path: '/b', value: 1 }]), undefined, 'replace needs the path to exist');
  t.equal(patch({ a: 1 }, [{ op: 'add', path: '/b/c', value: 1 }]), undefined, 'no missing parents are created');
  t.equal(patch([1, 2], [{ op: 'add', path: '/3', value: 1 }]), undefined, 'past the end');
  t.equal(patch([1, 2], [{ op: 'add', path: '/-1', value: 1 }]), undefined);
  t.equal(patch([1, 2], [{ op: 'test', path: '/01', value: 2 }]), undefined, 'leading zeros');
  t.equal(patch([1, 2], [{ op: 'test', path: '/1e0', value: 2 }]), undefined, 'not an integer');
  t.equal(patch([1, 2], [{ op: 'remove', path: '/2' }]), undefined);
  t.equal(patch({ a: 1 }, [{ op: 'remove', path: '' }]), undefined, 'the whole document cannot be removed');
  t.equal(patch({ a: 1 }, [{ op: 'move', from: '/b', path: '/c' }]), undefined);
  t.equal(patch({ a: 1 }, [{ op: 'copy', from: '/b', path: '/c' }]), undefined);
  t.equal(patch({ a: 1 }, [{ op: 'spam', path: '/a' }]), undefined, 'unknown operation');
  t.equal(patch({ a: 1 }, [{ op: 'add', path: '/b' }]), undefined, 'add without a value');
  t.equal(patch({ a: 1 }, [{ op: 'move', path: '/b' }]), undefined, 'move without from');
  t.equal(patch({ a: 1 }, [{ path: '/b', value: 1 }]), undefined, 'no op');
  t.equal(patch({ a: 1 }, [{ op: 'add', value: 1 }]), undefined, 'no path');
  t.equal(patch({ a: 1 }, [{ op: 'add', path: null, value: 1 }]), undefined, 'a path that is neither a string nor an array');
  t.equal(patch({ a: 1 }, [{ op: 1, path: '/a', value: 1 }]), undefined);
  t.equal(patch({ a: 1 }, ['add']), undefined, 'an operation that is not an object');
  t.equal(patch({ a: 1 }, { op: 'add', path: '/b', value: 1 }), undefined, 'operations come as an array');
  t.same(patch({ a: 1 }, [{ op: 'add', path: '/b', value: 1 }, { op: 'test', path: '/a', value: 1 }]), { a: 1, b: 1 });
});

t.test('json.patch on sets: a member is its own key', async (t) => {
  const doc = x.rt_make_object!();
  x.rt_object_insert!(doc, value('"foo"'), set('["a", "b", "c"]'));
  const patch = (ops: unknown) => callValue('json.patch', doc, json(ops));
  t.equal(dump(patch([{ op: 'remove', path: '/foo/b' }])), '{"foo":["a","c"]}');
  const added = patch([{ op: 'add', path: '/foo/d', value: 'd' }]);
  t.equal(dump(added), '{"foo":["a","b","c","d"]}');
  t.ok(isSet(x.rt_dot!(added, value('"foo"'))), 'still a set');
  t.equal(patch([{ op: 'add', path: '/foo/d', value: 'e' }]), 0, 'the value must be the key');
  t.equal(patch([{ op: 'remove', path: '/foo/z' }]), 0);
  t.equal(dump(patch([{ op: 'test', path: '/foo/a', value: 'a' }])), '{"foo":["a","b","c"]}');
  t.equal(dump(patch([{ op: 'move', from: '/foo/a', path: '/bar' }])), '{"bar":"a","foo":["b","c"]}');
  const nested = set('[[1]]');
  t.equal(dump(callValue('json.patch', nested, json([{ op: 'add', path: [[1], 1], value: 2 }]))), '[[1,2]]', 'into an array held in a set');
  t.equal(dump(doc), '{"foo":["a","b","c"]}', 'the document itself is left as it was');
});

t.test('regex.match uses RE2 syntax and semantics', async (t) => {
  t.equal(result('regex.match', json('^a+b$'), json('aaab')), true);
  t.equal(result('regex.match', json('b'), json('abc')), true, 'unanchored search');
  t.equal(result('regex.match', json('^b'), json('abc')), false);
  t.equal(result('regex.match', json('(?i)^admin$'), json('ADMIN')), true);
  t.equal(result('regex.match', json('(?s)a.b'), json('a\nb')), true);
  t.equal(result('regex.match', json('a.b'), json('a\nb')), false);
  t.equal(result('regex.match', json('(?m)^b$'), json('a\nb\nc')), true);
  t.equal(result('regex.match', json('^b$'), json('a\nb\nc')), false);
  t.equal(result('regex.match', json('(?i:ab)c'), json('ABc')), true, 'scoped flags');
  t.equal(result('regex.match', json('^[[:alpha:]]+$'), json('abc')), true, 'POSIX classes');
  t.equal(result('regex.match', json('^\\pL+$'), json('héllo')), true, 'one-letter Unicode classes');
  t.equal(result('regex.match', json('^\\Qa.b\\E$'), json('a.b')), true);
  t.equal(result('regex.match', json('^\\Qa.b\\E$'), json('axb')), false);
  t.equal(result('regex.match', json('^(?P<user>[a-z]+)@'), json('ann@example.com')), true);
  t.equal(result('regex.match', json('^x{,3}$'), json('x{,3}')), true, 'an invalid repeat is literal text in RE2');
  t.equal(result('regex.match', json('\\s'), json('\u000b')), false, '\\s is ASCII whitespace without \\v');
  t.equal(result('regex.match', json('(?<=a)b'), json('ab')), undefined, 'lookbehind is refused');
  t.equal(result('regex.match', json('(?=a)'), json('a')), undefined, 'lookahead is refused');
  t.equal(result('regex.match', json('(a)\\1'), json('aa')), undefined, 'backreferences are refused');
  t.equal(result('regex.match', json('['), json('a')), undefined, 'invalid pattern');
  t.equal(result('regex.match', json('a'), json(1)), undefined);
  t.equal(result('regex.match', json(1), json('a')), undefined);
});

t.test('regex.match stays fast on patterns that make backtracking engines explode', async (t) => {
  const started = Date.now();
  t.equal(result('regex.match', json('^(a+)+$'), json('a'.repeat(5000) + 'b')), false);
  t.ok(Date.now() - started < 2000, 'linear-time matching');
});

t.test('a repeated class is held once: \\pL{1000} compiles in little memory', async (t) => {
  const before = x.opa_heap_ptr_get!();
  t.equal(result('regex.match', json('^\\pL{1000}$'), json('é'.repeat(1000))), true);
  t.ok(x.opa_heap_ptr_get!() - before < 1 << 20, 'under 1 MiB of heap');
});

t.test('regex.split splits like Go regexp.Split(s, -1)', async (t) => {
  t.same(result('regex.split', json('a'), json('banana')), ['b', 'n', 'n', '']);
  t.same(result('regex.split', json('(\\d)'), json('a1b2c')), ['a', 'b', 'c'], 'groups are not kept, unlike JavaScript split');
  t.same(result('regex.split', json('(?i)B'), json('aBcbd')), ['a', 'c', 'd'], 'RE2 flags');
  t.same(result('regex.split', json('x*'), json('abc')), ['a', 'b', 'c'], 'empty matches between characters');
  t.same(result('regex.split', json(','), json('a,,b,')), ['a', '', 'b', '']);
  t.same(result('regex.split', json('^'), json('ab')), ['ab'], 'an empty match at the start adds no piece');
  t.same(result('regex.split', json('a'), json('')), [''], 'an empty text is one empty piece');
  t.same(result('regex.split', json(''), json('')), [], 'except for the empty pattern');
  t.same(result('regex.split', json(''), json('ab')), ['a', 'b']);
  t.same(result('regex.split', json('\\s+'), json('héllo  wörld')), ['héllo', 'wörld']);
  t.equal(result('regex.split', json('('), json('a')), undefined, 'invalid pattern');
  t.equal(result('regex.split', json('(?=a)'), json('a')), undefined, 'RE2 has no lookahead');
  t.equal(result('regex.split', json(1), json('a')), undefined);
  t.equal(result('regex.split', json('a'), json(1)), undefined);
});

t.test('regex.is_valid: whether Go regexp.Compile accepts the pattern', async (t) => {
  for (const pattern of ['a(b|c)*', '', '(?P<n>x)(?<m>y)', 'x{1000}', '(a{2}){3}', '[[:^alpha:]\\p{Greek}]', '\\Q(\\E', '\\x{10FFFF}', '(?i)(?-i:a)']) {
    t.equal(result('regex.is_valid', json(pattern)), true, pattern);
  }
  for (const pattern of ['(', ')', '[a', 'a**', 'a*+', 'a{2}{3}', '*a', 'x{1001}', '(x{500}){3}', '[z-a]', '\\8', '\\p{Klingon}', '[[:foo:]]', '(?P=n)', '(?<n!>a)', '(?-)', '\\C', '\\x{110000}', 'a\\']) {
    t.equal(result('regex.is_valid', json(pattern)), false, pattern);
  }
  t.equal(result('regex.is_valid', json(1)), false, 'a non-string is not a valid pattern');
});

t.test('regex.find_n: Go FindAllString(value, n)', async (t) => {
  t.same(result('regex.find_n', json('[0-9]+'), json('a1b22c333'), json(2)), ['1', '22']);
  t.same(result('regex.find_n', json('[0-9]+'), json('a1b22c333'), json(-1)), ['1', '22', '333']);
  t.same(result('regex.find_n', json('[0-9]+'), json('a1'), json(0)), []);
  t.same(result('regex.find_n', json('[0-9]+'), json('abc'), json(-1)), []);
  t.same(result('regex.find_n', json('a|ab'), json('ab'), json(-1)), ['a'], 'leftmost-first: the first alternative wins');
  t.same(result('regex.find_n', json('a*'), json('baaac'), json(-1)), ['', 'aaa', ''], 'no empty match right after a match');
  t.same(result('regex.find_n', json('a+?'), json('aaa'), json(-1)), ['a', 'a', 'a'], 'lazy');
  t.same(result('regex.find_n', json('(?U)a+'), json('aaa'), json(-1)), ['a', 'a', 'a'], '(?U) swaps greediness');
  t.same(result('regex.find_n', json('\\bfoo\\b'), json('foo food foo'), json(-1)), ['foo', 'foo']);
  t.same(result('regex.find_n', json('(?i)k'), json('kK\u212a'), json(-1)), ['k', 'K', '\u212a'], 'the Kelvin sign folds to k');
  t.same(result('regex.find_n', json('(?i)ſ+'), json('sSſ'), json(-1)), ['sSſ'], 'so does the long s to s');
  t.same(result('regex.find_n', json('\\p{Greek}+'), json('αβγ abc'), json(-1)), ['αβγ']);
  t.same(result('regex.find_n', json('[\\p{Lu}\\d]+'), json('AB12cd'), json(-1)), ['AB12']);
  t.same(result('regex.find_n', json('\\PL+'), json('ab12cd'), json(-1)), ['12']);
  t.same(result('regex.find_n', json('\\p{^L}+'), json('ab12cd'), json(-1)), ['12']);
  t.same(result('regex.find_n', json('\\x{41}\\101\\x41'), json('AAA'), json(-1)), ['AAA'], 'hex and octal escapes');
  t.equal(result('regex.find_n', json('a'), json('a'), json(1.5)), undefined, 'n must be an integer');
  t.equal(result('regex.find_n', json('('), json('a'), json(1)), undefined);
});

t.test('Unicode classes, folding and case mapping are those of Unicode 15.0, as Go carries it', async (t) => {
  // U+1C89/U+1C8A (Cyrillic tje) and the Garay script came with Unicode 16: unassigned for Go.
  t.equal(result('regex.match', json('^\\p{Lu}$'), json('\u1c89')), false, 'not a capital letter yet');
  t.equal(result('regex.match', json('^\\pC$'), json('\u1c89')), true, 'unassigned, so in C (which holds Cn since Go 1.25)');
  t.equal(result('regex.match', json('^\\p{Cn}$'), json('\u0378')), true);
  t.equal(result('regex.match', json('(?i)^\u1c89$'), json('\u1c8a')), false, 'no fold orbit yet');
  t.equal(result('lower', json('\u1c89')), '\u1c89', 'no case mapping yet');
  t.equal(result('regex.is_valid', json('\\p{Garay}')), false, 'a script Go does not know');
  t.equal(result('regex.is_valid', json('\\p{Kawi}')), true, 'a script of Unicode 15.0');
  t.equal(result('regex.match', json('^\\p{Kawi}$'), json('\u{11f00}')), true);
  t.equal(result('upper', json('\u{1e922}')), '\u{1e900}', 'Adlam, cased since Unicode 9');
});

t.test('\\p{…} names are looked up as Go 1.25 looks them up: loosely, with aliases, Any, Assigned and ASCII', async (t) => {
  const matches = (pattern: string, text: string) => result('regex.match', json(pattern), json(text));
  t.equal(matches('^\\p{greek}+$', 'αβ'), true, 'case does not matter');
  t.equal(matches('^\\p{Old_Italic}$', '\u{10300}'), true);
  t.equal(matches('^\\p{old italic}$', '\u{10300}'), true, 'nor do spaces, _ and -');
  t.equal(matches('^\\p{Letter}+$', 'aé'), true, 'a category alias');
  t.equal(matches('^\\p{uppercase-letter}$', 'A'), true);
  t.equal(matches('^\\p{uppercase-letter}$', 'a'), false);
  t.equal(matches('^\\p{digit}+$', '٣4'), true, 'digit is Nd');
  t.equal(matches('^\\p{Cased_Letter}$', 'ǅ'), true);
  t.equal(matches('^\\p{Unassigned}$', '\u0378'), true);
  t.equal(matches('^\\pl$', 'x'), true, 'a one-letter name too');
  t.equal(matches('^\\p{ASCII}+$', 'az~'), true);
  t.equal(matches('^\\p{ascii}$', 'é'), false);
  t.equal(matches('^\\P{Assigned}$', '\u0378'), true);
  t.equal(matches('(?i)^\\p{ASCII}$', '\u212a'), true, 'the Kelvin sign folds into ASCII');
  for (const pattern of ['\\p{Lettre}', '\\p{}', '\\p{Script=Greek}', '\\p{Is_Greek}']) {
    t.equal(result('regex.is_valid', json(pattern)), false, pattern);
  }
});

t.test('regex.find_all_string_submatch_n: Go FindAllStringSubmatch(value, n)', async (t) => {
  t.same(result('regex.find_all_string_submatch_n', json('(\\w)(\\d)?'), json('a1 b'), json(-1)), [['a1', 'a', '1'], ['b', 'b', '']], 'a group that did not take part is ""');
  t.same(result('regex.find_all_string_submatch_n', json('(a+)(b)?'), json('aab ab a'), json(2)), [['aab', 'aa', 'b'], ['ab', 'a', 'b']]);
  t.same(result('regex.find_all_string_submatch_n', json('(a|ab)(c|bcd)(d*)'), json('abcd'), json(-1)), [['abcd', 'a', 'bcd', '']], 'leftmost-first submatches');
  t.same(result('regex.find_all_string_submatch_n', json('x'), json('abc'), json(-1)), []);
  t.equal(result('regex.find_all_string_submatch_n', json('x'), json('abc'), json('1')), undefined);
});

t.test('regex.replace: Go ReplaceAllString with template expansion', async (t) => {
  t.equal(result('regex.replace', json('hello world'), json('o(\\w)?'), json('[$1]')), 'hell[] w[r]ld');
  t.equal(result('regex.replace', json('ab-cd'), json('(?P<x>\\w+)-(\\w+)'), json('${2}_$x')), 'cd_ab');
  t.equal(result('regex.replace', json('a'), json('a'), json('$$')), '$');
  t.equal(result('regex.replace', json('ab'), json('(a)(b)'), json('$1x|${1}x|$2')), '|ax|b', '$1x names the group "1x", which does not exist');
  t.equal(result('regex.replace', json('ab'), json('(a)'), json('[$é]')), '[]b', 'a name is Unicode letters, digits and _');
  t.equal(result('regex.replace', json('ab'), json('(a)'), json('$01 ${ $')), ' ${ $b', '$01 is the group named "01"; a $ starting no name stays');
  t.equal(result('regex.replace', json('baaac'), json('a*'), json('-')), '-b-c-');
  t.equal(result('regex.replace', json('abc'), json('x'), json('y')), 'abc');
  t.equal(result('regex.replace', json(1), json('a'), json('b')), undefined);
});

t.test('regular expressions read invalid UTF-8 as U+FFFD of width 1, as Go does', async (t) => {
  const bytes = (...b: number[]): number => {
    const text = new Uint8Array([0x22, ...b, 0x22]);
    const ptr = x.opa_malloc!(text.length);
    new Uint8Array(memory.buffer).set(text, ptr);
    return x.opa_json_parse!(ptr, text.length);
  };
  t.same(result('regex.find_n', json('.'), bytes(0x61, 0xff, 0x62), json(-1)), ['a', '\ufffd', 'b']);
  t.equal(result('regex.match', json('^\\x{FFFD}{3}$'), bytes(0xe2, 0x82, 0xff)), true, 'each byte of a broken sequence is one U+FFFD');
  t.equal(result('regex.match', json('^\\x{FFFD}\\x{FFFD}$'), bytes(0xc3, 0xff)), true);
  t.same(result('regex.split', json('b'), bytes(0xff, 0x62, 0xfe)), ['\ufffd', '\ufffd']);
  t.equal(result('regex.match', json('x'), bytes(0x78)), true);
});

t.test('regex builtins agree with re2js, a port of Go regexp, on generated patterns', async (t) => {
  // A seeded stream of patterns over the syntax (valid and not) and texts over letters that fold,
  // compared on whether the pattern compiles, whether it matches, and the first match's groups.
  // re2js refuses a group name used twice, which Go accepts, so names here are unique.
  let seed = 20240611;
  const pick = <T>(items: readonly T[]): T => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return items[seed % items.length]!;
  };
  const atoms = ['a', 'b', 'k', '.', '\\d', '\\w', '\\s', '\\W', '[a-c]', '[^ab]', '\\b', '\\B', '^', '$', '(?i:a)', '[[:alpha:]]',
    '[[:^alpha:]]', '\\pL', '\\p{Greek}', '\\PL', '\\p{^Lu}', 'é', '\\x{3b1}', '(?s:.)', '\\A', '\\z', '[\\d-]', 'K', 'ſ', '\\Q.*\\E',
    '(?i)', '(?-i)', '(?m)', '(?U)', '\\101', '\\8', '{', 'x{1001}', 'x{,2}', 'a{2}{3}', '**', '(?=a)', '\\1', '[z-a]', '[]a]',
    '[a-]', '\\x{FFFD}', '\\C', '[[:foo:]]', 'ς', '(?i)σ', 'ǅ', '(?i)ǆ', '\\p{Cn}', '\\pC', '\\p{LC}', '\\p{Any}', '(?i)\\p{Lu}'];
  const quantifiers = ['', '', '', '*', '+', '?', '*?', '+?', '??', '{2}', '{1,2}', '{0,}', '{2,}?', '{0}'];
  let names = 0;
  const pattern = (depth: number): string => {
    const kind = depth > 2 ? 2 : pick([0, 1, 2, 2, 2, 2]);
    if (kind === 0) return `${pattern(depth + 1)}|${pattern(depth + 1)}`;
    if (kind === 1) return `(${pick(['', '?:', `?P<n${names++}>`])}${pattern(depth + 1)})${pick(quantifiers)}`;
    let s = '';
    for (let i = pick([1, 2, 3]); i > 0; i--) s += pick(atoms) + pick(quantifiers);
    return s;
  };
  const letters = ['a', 'b', 'k', 'K', '\u212a', 'é', 'α', 'Σ', 'σ', 'ς', 'ǅ', 'ǆ', '\n', ' ', '1', 'ſ', 's', 'A', '\u0378', '日'];
  let disagreements = 0;
  for (let i = 0; i < 1500; i++) {
    const source = pick(['', '', '(?i)', '(?m)']) + pattern(0);
    let text = '';
    for (let j = pick([0, 3, 5, 8]); j > 0; j--) text += pick(letters);
    let re: RE2JS | undefined;
    try {
      re = RE2JS.compile(source);
    } catch {
      re = undefined;
    }
    const want = re && re.matcher(text);
    const found = want?.find();
    const groups = want && found ? Array.from({ length: want.groupCount() + 1 }, (_, g) => want.group(g) ?? '') : [];
    const got = [result('regex.is_valid', json(source)), result('regex.match', json(source), json(text)), result('regex.find_all_string_submatch_n', json(source), json(text), json(1))];
    const expected = [re !== undefined, re ? found : undefined, re ? (found ? [groups] : []) : undefined];
    if (JSON.stringify(got) !== JSON.stringify(expected) && disagreements++ < 5) t.same(got, expected, `${JSON.stringify(source)} on ${JSON.stringify(text)}`);
  }
  t.equal(disagreements, 0);
});

t.test('rt_set_of makes a host builtin\'s array a set', async (t) => {
  const s = x.rt_set_of!(value('["b", "a", "b"]'));
  t.ok(isSet(s));
  t.equal(dump(s), '["a","b"]');
  t.equal(dump(x.rt_set_of!(value('{"a": 1}'))), '{"a":1}', 'other values as they are');
  t.equal(x.rt_set_of!(0), 0, 'undefined stays undefined');
});

/**
 * Messages around the padding boundaries of 64- and 128-byte blocks (55/56 and 111/112 bytes
 * leave no room for the length field), several blocks, and UTF-8 of two, three and four bytes.
 */
const HASH_INPUTS = [
  ...[0, 1, 3, 54, 55, 56, 57, 63, 64, 65, 110, 111, 112, 113, 127, 128, 129, 200, 1000].map((n) =>
    Array.from({ length: n }, (_, i) => String.fromCharCode(0x20 + ((i * 7) % 95))).join(''),
  ),
  'grüße', '日本語のテキスト', '😀'.repeat(40), 'é'.repeat(64), 'x'.repeat(5000),
];

t.test('crypto.md5, crypto.sha1 and crypto.sha256 give what node:crypto gives, in lower-case hex', async (t) => {
  for (const [builtin, algorithm] of [['crypto.md5', 'md5'], ['crypto.sha1', 'sha1'], ['crypto.sha256', 'sha256']] as const) {
    for (const s of HASH_INPUTS) {
      t.equal(result(builtin, json(s)), createHash(algorithm).update(s, 'utf8').digest('hex'), `${builtin} of ${Buffer.byteLength(s)} bytes`);
    }
    t.equal(call(builtin, json(1)), undefined, `${builtin} of a number`);
  }
  t.equal(result('crypto.sha256', json('hello')), '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
});

t.test('crypto.hmac.* give what node:crypto gives for short, block-sized and long keys', async (t) => {
  const keys = ['', 'key', 'k'.repeat(63), 'k'.repeat(64), 'k'.repeat(65), 'k'.repeat(128), 'k'.repeat(129), 'schlüssel🔑'.repeat(20)];
  const builtins = [['crypto.hmac.md5', 'md5'], ['crypto.hmac.sha1', 'sha1'], ['crypto.hmac.sha256', 'sha256'], ['crypto.hmac.sha512', 'sha512']] as const;
  for (const [builtin, algorithm] of builtins) {
    for (const key of keys) {
      for (const s of HASH_INPUTS) {
        const want = createHmac(algorithm, Buffer.from(key, 'utf8')).update(s, 'utf8').digest('hex');
        t.equal(result(builtin, json(s), json(key)), want, `${builtin}, ${Buffer.byteLength(key)}-byte key, ${Buffer.byteLength(s)} bytes`);
      }
    }
    t.equal(call(builtin, json('x'), json(1)), undefined, `${builtin} with a number for key`);
    t.equal(call(builtin, json(1), json('k')), undefined, `${builtin} of a number`);
  }
});

t.test('crypto.hmac.equal compares the bytes', async (t) => {
  t.equal(result('crypto.hmac.equal', json('abc'), json('abc')), true);
  t.equal(result('crypto.hmac.equal', json('abc'), json('abd')), false);
  t.equal(result('crypto.hmac.equal', json('abc'), json('abcd')), false, 'a prefix');
  t.equal(result('crypto.hmac.equal', json(''), json('')), true);
  t.equal(result('crypto.hmac.equal', json('é'), json('e\u0301')), false, 'bytes, not canonical equivalence');
  t.equal(call('crypto.hmac.equal', json('abc'), json(1)), undefined);
});

t.test('semver.is_valid takes strict SemVer 2.0.0', async (t) => {
  const valid = ['0.0.0', '1.2.3', '10.20.30', '1.2.3-rc.1+build.5', '1.0.0-alpha-a.b-c', '1.0.0-0.3.7', '1.0.0+001', '1.0.0-x.7.z.92', '99999999999999999999999.0.0'];
  const invalid = ['v1.0.0', '1.0', '1.0.0.0', '01.0.0', '1.01.0', '1.0.0-01', '1.0.0-', '1.0.0+', '1.0.0-a..b', '1.0.0+a..b', ' 1.0.0', '1.0.0 ', '1.0.0-a_b', ''];
  for (const v of valid) t.equal(result('semver.is_valid', json(v)), true, v);
  for (const v of invalid) t.equal(result('semver.is_valid', json(v)), false, JSON.stringify(v));
  t.equal(result('semver.is_valid', json(1)), false, 'a non-string is not a version');
});

t.test('semver.compare ranks by precedence', async (t) => {
  const ascending = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.9.9', '1.10.0', '2.0.0', '10.0.0', '99999999999999999999999.0.0'];
  for (let i = 0; i < ascending.length; i++) {
    for (let j = 0; j < ascending.length; j++) {
      t.equal(result('semver.compare', json(ascending[i]), json(ascending[j])), Math.sign(i - j), `${ascending[i]} vs ${ascending[j]}`);
    }
  }
  t.equal(result('semver.compare', json('1.0.0+build.1'), json('1.0.0+build.2')), 0, 'build metadata is ignored');
  t.equal(result('semver.compare', json('1.0.0-1'), json('1.0.0-a')), -1, 'numeric identifiers rank below alphanumeric ones');
  t.equal(result('semver.compare', json('1.0.0-B'), json('1.0.0-a')), -1, 'alphanumeric identifiers compare as ASCII');
  t.equal(call('semver.compare', json('v1.0.0'), json('1.0.0')), undefined);
  t.equal(call('semver.compare', json('1.0.0'), json(1)), undefined);
});

t.test('units.parse_bytes: SI and IEC units, case-insensitive, truncated to an integer', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['10KB', '10000'], ['1KiB', '1024'], ['1.5ki', '1536'], ['100', '100'], ['1.9', '1'], ['2gb', '2000000000'],
    ['1kib', '1024'], ['"5MB"', '5000000'], ['5.', '5'], ['.5', '0'], ['0.0001k', '0'], ['10m', '10000000'],
    ['1EiB', '1152921504606846976'], ['999999999999Ei', '1152921504605694054495393153024'],
    ['123456789012345678901234567890', '123456789012345678901234567890'],
    ['1\u212A', '1000'], // the Kelvin sign lower-cases to k
    ['5 MB', undefined], ['10XB', undefined], ['K', undefined], ['.', undefined], ['1..2', undefined], ['1b', undefined], ['-1', undefined], ['1k2', undefined],
  ];
  for (const [s, want] of cases) t.equal(call('units.parse_bytes', json(s)), want, s);
  t.equal(call('units.parse_bytes', json(1)), undefined);
});

t.test('units.parse: m is milli and M mega; whole results are exact integers, others as big.Rat.FloatString(10) writes them: ten decimals, rounded half away from zero', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['10m', '0.0100000000'], ['1.5K', '1500'], ['2Gi', '2147483648'], ['10M', '10000000'], ['7', '7'], ['0.5m', '0.0005000000'],
    ['1.25m', '0.0012500000'], ['1000m', '1'], ['01000m', '1'], ['1.5Mi', '1572864'], ['1MI', '1048576'], ['1mi', '1048576'],
    ['1.9', '1.9000000000'], ['3.3333333', '3.3333333000'], ['.5', '0.5000000000'], ['1.5E', '1500000000000000000'], ['1\u212Ai', '1024'],
    ['123456789012345678901234567890', '123456789012345678901234567890'],
    ['1.23456789012345', '1.2345678901'], ['0.1234567890123m', '0.0001234568'], ['0.00000000005', '0.0000000001'],
    ['0.00000000004999', '0.0000000000'], ['0.99999999999', '1.0000000000'], ['123456789012345678.5', '123456789012345678.5000000000'],
    ['K', undefined], ['1KB', undefined], ['1b', undefined], ['1mm', undefined], ['1 K', undefined],
  ];
  for (const [s, want] of cases) t.equal(call('units.parse', json(s)), want, s);
  t.equal(call('units.parse', json(null)), undefined);
});

/** Calls builtin `name`; the result decoded from JSON with integers of 16 or more digits as exact bigints. */
function exactResult(name: string, ...operands: Operand[]): unknown {
  const text = call(name, ...operands);
  if (text === undefined) return undefined;
  return JSON.parse(text.replace(/-?\d{16,}/g, '"$&n"'), (_k, v: unknown) => (typeof v === 'string' && /^-?\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v));
}

t.test('uuid.parse reads what Google uuid.Parse reads, with the fields OPA gives', async (t) => {
  t.same(exactResult('uuid.parse', json('c2fc67c2-47f2-11ee-b67a-9f3619c7493f')), {
    version: 1,
    variant: 'RFC4122',
    nodeid: '9f-36-19-c7-49-3f',
    macvariables: 'local:multicast',
    time: 1693481847404333000n,
    clocksequence: 13946,
  });
  const v2 = {
    version: 2,
    variant: 'RFC4122',
    nodeid: '32-50-96-b3-9f-47',
    macvariables: 'local:unicast',
    time: 1693566990121469600n,
    clocksequence: 12800,
    domain: 'Person',
    id: 1000,
  };
  t.same(exactResult('uuid.parse', json('000003e8-48b9-21ee-b200-325096b39f47')), v2);
  t.same(exactResult('uuid.parse', json('{000003e8-48b9-21ee-b200-325096b39f47}')), v2, 'between braces');
  t.same(exactResult('uuid.parse', json('x000003e8-48b9-21ee-b200-325096b39f47y')), v2, 'Go does not look at the two outer characters');
  t.same(exactResult('uuid.parse', json('URN:UUID:c2fc67c2-47f2-11ee-b67a-9f3619c7493f')), exactResult('uuid.parse', json('c2fc67c2-47f2-11ee-b67a-9f3619c7493f')));
  t.same(exactResult('uuid.parse', json('6bea8ef2-d3d3-3cd1-84e0-9bab06a52ece')), { version: 3, variant: 'RFC4122' });
  t.same(exactResult('uuid.parse', json('00000000000040008000000000000000')), { version: 4, variant: 'RFC4122' }, 'without dashes');
  t.same(exactResult('uuid.parse', json('00000000-0000-fcd1-f4e0-9bab06a52ece')), { version: 15, variant: 'Future' });
  t.same(exactResult('uuid.parse', json('00000000-0000-4000-c000-000000000000')), { version: 4, variant: 'Microsoft' });
  t.same(exactResult('uuid.parse', json('00000000-0000-4000-0000-000000000000')), { version: 4, variant: 'Reserved' });
  t.match(exactResult('uuid.parse', json('000003e8-48b9-21ee-b205-325096b39f47')), { domain: 'Domain5' });
  t.match(exactResult('uuid.parse', json('ffffffff-ffff-1fff-b67a-9f3619c7493f')), { time: -7607606781572612196n }, "Go's int64 arithmetic wraps");
  t.equal(call('uuid.parse', json('00000000000-123-222-222')), undefined);
  t.equal(call('uuid.parse', json('HijVnnS1-GGGG-1234-12345678')), undefined);
  t.equal(call('uuid.parse', json('c2fc67c2_47f2_11ee_b67a_9f3619c7493f')), undefined);
  t.equal(call('uuid.parse', json('urn:uuix:c2fc67c2-47f2-11ee-b67a-9f3619c7493f')), undefined);
  t.equal(call('uuid.parse', json('é000003e8-48b9-21ee-b200-325096b39f4')), undefined, 'a first character of two bytes is not skipped');
  t.same(exactResult('uuid.parse', json('C2FC67C2-47F2-11EE-B67A-9F3619C7493F')), exactResult('uuid.parse', json('c2fc67c2-47f2-11ee-b67a-9f3619c7493f')), 'upper-case hex');
  t.equal(call('uuid.parse', json(42)), undefined);
});

