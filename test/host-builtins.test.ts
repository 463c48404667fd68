import t from 'tap';
import { hostBuiltins, withEvaluationClock } from '../policies/engine/host-builtins.ts';

const call = (name: string, ...args: unknown[]): unknown => {
  const fn = hostBuiltins[name];
  if (!fn) throw new Error(`no host builtin ${name}`);
  return fn(...args);
};

/**
 * An integer builtin's result: the exact integer of the JSON text it returns in an ArrayBuffer
 * (what the SDK hands to the module), or whatever else it returned (undefined).
 */
const integerCall = (name: string, ...args: unknown[]): unknown => {
  const result = call(name, ...args);
  return result instanceof ArrayBuffer ? BigInt(new TextDecoder().decode(result)) : result;
};

t.test('every host builtin of the compiler is implemented', async (t) => {
  const { BUILTINS } = await import('../policies/compiler/builtins.ts');
  const host = Object.entries(BUILTINS)
    .filter(([, spec]) => spec.impl === 'host')
    .map(([name]) => name)
    .sort();
  t.same(Object.keys(hostBuiltins).sort(), host);
});

t.test('lower and upper map code points like Go', async (t) => {
  t.equal(call('lower', 'AbC'), 'abc');
  t.equal(call('upper', 'AbC'), 'ABC');
  t.equal(call('upper', 'straße'), 'STRAßE', 'ß has no single-code-point uppercase');
  t.equal(call('lower', 'İSTANBUL'), 'istanbul', 'İ lowercases to a plain i');
  t.equal(call('lower', 'ΟΔΟΣ'), 'οδοσ', 'no final-sigma context rule');
  t.equal(call('upper', 'ﬁ'), 'ﬁ', 'ligatures stay');
  t.equal(call('upper', 'ᾳ'), 'ᾼ', 'simple mapping to the prosgegrammeni form');
  t.equal(call('upper', 'émigré ǆ'), 'ÉMIGRÉ Ǆ');
  t.equal(call('lower', 1), undefined);
  t.equal(call('upper', null), undefined);
});

t.test('regex.match uses RE2 syntax and semantics', async (t) => {
  t.equal(call('regex.match', '^a+b$', 'aaab'), true);
  t.equal(call('regex.match', 'b', 'abc'), true, 'unanchored search');
  t.equal(call('regex.match', '^b', 'abc'), false);
  t.equal(call('regex.match', '(?i)^admin$', 'ADMIN'), true);
  t.equal(call('regex.match', '(?s)a.b', 'a\nb'), true);
  t.equal(call('regex.match', 'a.b', 'a\nb'), false);
  t.equal(call('regex.match', '(?m)^b$', 'a\nb\nc'), true);
  t.equal(call('regex.match', '^b$', 'a\nb\nc'), false);
  t.equal(call('regex.match', '(?i:ab)c', 'ABc'), true, 'scoped flags');
  t.equal(call('regex.match', '^[[:alpha:]]+$', 'abc'), true, 'POSIX classes');
  t.equal(call('regex.match', '^\\pL+$', 'héllo'), true, 'one-letter Unicode classes');
  t.equal(call('regex.match', '^\\Qa.b\\E$', 'a.b'), true);
  t.equal(call('regex.match', '^\\Qa.b\\E$', 'axb'), false);
  t.equal(call('regex.match', '^(?P<user>[a-z]+)@', 'ann@example.com'), true);
  t.equal(call('regex.match', '^x{,3}$', 'x{,3}'), true, 'an invalid repeat is literal text in RE2');
  t.equal(call('regex.match', '\\s', '\u000b'), false, '\\s is ASCII whitespace without \\v');
  t.equal(call('regex.match', '(?<=a)b', 'ab'), undefined, 'lookbehind is refused');
  t.equal(call('regex.match', '(?=a)', 'a'), undefined, 'lookahead is refused');
  t.equal(call('regex.match', '(a)\\1', 'aa'), undefined, 'backreferences are refused');
  t.equal(call('regex.match', '[', 'a'), undefined, 'invalid pattern');
  t.equal(call('regex.match', 'a', 1), undefined);
  t.equal(call('regex.match', 1, 'a'), undefined);
});

t.test('regex.match stays fast on patterns that make backtracking engines explode', async (t) => {
  const started = Date.now();
  t.equal(call('regex.match', '^(a+)+$', 'a'.repeat(5000) + 'b'), false);
  t.ok(Date.now() - started < 2000, 'linear-time matching');
});

t.test('glob.match follows OPA (gobwas/glob)', async (t) => {
  // The examples of OPA's documentation.
  t.equal(call('glob.match', '*.github.com', [], 'api.github.com'), true);
  t.equal(call('glob.match', '*.github.com', [], 'api.cdn.github.com'), false);
  t.equal(call('glob.match', '*hub.com', null, 'api.cdn.github.com'), true);
  t.equal(call('glob.match', '*:github:com', [':'], 'api:github:com'), true);
  t.equal(call('glob.match', 'api.**.com', [], 'api.github.com'), true);
  t.equal(call('glob.match', 'api.**.com', [], 'api.cdn.github.com'), true);
  t.equal(call('glob.match', '?at', [], 'cat'), true);
  t.equal(call('glob.match', '?at', [], 'at'), false);
  t.equal(call('glob.match', '[abc]at', [], 'bat'), true);
  t.equal(call('glob.match', '[abc]at', [], 'fat'), false);
  t.equal(call('glob.match', '[!abc]at', [], 'fat'), true);
  t.equal(call('glob.match', '[!abc]at', [], 'cat'), false);
  t.equal(call('glob.match', '[a-c]at', [], 'cat'), true);
  t.equal(call('glob.match', '[a-c]at', [], 'fat'), false);
  t.equal(call('glob.match', '[!a-c]at', [], 'fat'), true);
  t.equal(call('glob.match', '{cat,bat,[fr]at}', [], 'rat'), true);
  t.equal(call('glob.match', '{cat,bat,[fr]at}', [], 'at'), false);

  t.equal(call('glob.match', '*', [], 'a.b'), false, '* stops at the default delimiter');
  t.equal(call('glob.match', '*', null, 'a.b'), true, 'null means no delimiters');
  t.equal(call('glob.match', '?', [], '.'), false, '? does not match a delimiter');
  t.equal(call('glob.match', '[.]', [], '.'), true, 'a class matches delimiters too');
  t.equal(call('glob.match', '/api/*', ['/'], '/api/users'), true);
  t.equal(call('glob.match', '/api/*', ['/'], '/api/users/1'), false);
  t.equal(call('glob.match', '/api/**', ['/'], '/api/users/1'), true);
  t.equal(call('glob.match', 'a\\*b', [], 'a*b'), true, 'escapes');
  t.equal(call('glob.match', 'a\\*b', [], 'axb'), false);
  t.equal(call('glob.match', 'a(b)+c|d', [], 'a(b)+c|d'), true, 'regex characters are literal');
  t.equal(call('glob.match', '{a,{b,c}d}', [], 'cd'), true, 'nested alternatives');
  t.equal(call('glob.match', 'x,y}', [], 'x,y}'), true, ', and } are text outside braces');
  t.equal(call('glob.match', '', [], ''), true);

  t.equal(call('glob.match', '[a', [], 'a'), undefined, 'unclosed class');
  t.equal(call('glob.match', '[]', [], 'a'), undefined, 'empty class');
  t.equal(call('glob.match', '[z-a]', [], 'a'), undefined, 'reversed range');
  t.equal(call('glob.match', '*', 'x', 'a'), undefined, 'delimiters must be an array or null');
  t.equal(call('glob.match', '*', ['ab'], 'a'), undefined, 'delimiters are single characters');
  t.equal(call('glob.match', 1, [], 'a'), undefined);
  t.equal(call('glob.match', '*', [], 1), undefined);
});

t.test('time.now_ns is nanoseconds since the epoch, fixed within one evaluation', async (t) => {
  const before = BigInt(Date.now()) * 1_000_000n;
  const now = integerCall('time.now_ns');
  t.type(now, 'bigint');
  t.ok((now as bigint) >= before && (now as bigint) <= BigInt(Date.now()) * 1_000_000n);
  t.type(call('time.now_ns'), ArrayBuffer, 'returned as JSON text, which the SDK passes through unrounded');

  const [a, b] = withEvaluationClock(() => {
    const first = integerCall('time.now_ns');
    const end = Date.now() + 3;
    while (Date.now() < end);
    return [first, integerCall('time.now_ns')];
  });
  t.equal(a, b, 'one value for the whole evaluation');
  const end = Date.now() + 3;
  while (Date.now() < end);
  t.not(integerCall('time.now_ns'), a, 'the clock runs again afterwards');
});

t.test('time.parse_rfc3339_ns parses like Go time.RFC3339', async (t) => {
  const parse = (s: unknown) => integerCall('time.parse_rfc3339_ns', s);
  t.equal(parse('1970-01-01T00:00:00Z'), 0n);
  t.equal(parse('1970-01-01T00:00:01.5Z'), 1_500_000_000n);
  t.equal(parse('1970-01-01T01:00:00+01:00'), 0n);
  t.equal(parse('1969-12-31T23:59:59Z'), -1_000_000_000n);
  t.equal(parse('2024-02-29T12:00:00Z'), BigInt(Date.UTC(2024, 1, 29, 12)) * 1_000_000n);
  t.equal(parse('2024-05-01T10:30:00-04:30'), BigInt(Date.UTC(2024, 4, 1, 15, 0)) * 1_000_000n);
  t.equal(parse('1970-01-01T00:00:00.123456789123Z'), 123456789n, 'digits past ns are dropped');
  t.equal(parse('1970-01-01T00:00:00,25Z'), 250_000_000n, 'comma fraction');
  t.equal(parse('2021-01-01T00:00:00.000000001Z'), 1609459200000000001n, 'exact beyond 2^53');
  t.equal(parse('2262-04-11T23:47:16.854775807Z'), 2n ** 63n - 1n, 'the last int64 nanosecond');
  t.equal(parse('1677-09-21T00:12:43.145224192Z'), -(2n ** 63n), 'the first int64 nanosecond');
  t.equal(parse('2023-02-29T00:00:00Z'), undefined, 'not a leap year');
  t.equal(parse('2024-01-01T24:00:00Z'), undefined);
  t.equal(parse('2024-01-01 00:00:00Z'), undefined, 'T is required');
  t.equal(parse('2024-01-01T00:00:00'), undefined, 'zone is required');
  t.equal(parse('2024-01-01T00:00:00z'), undefined);
  t.equal(parse('2300-01-01T00:00:00Z'), undefined, 'outside int64 nanoseconds');
  t.equal(parse(0), undefined);
  t.equal(new TextDecoder().decode(call('time.parse_rfc3339_ns', '1969-12-31T23:59:59Z') as ArrayBuffer), '-1000000000', 'JSON text');
});

t.test('net.cidr_contains handles IPv4, IPv6 and networks like Go net', async (t) => {
  t.equal(call('net.cidr_contains', '10.0.0.0/8', '10.1.2.3'), true);
  t.equal(call('net.cidr_contains', '10.0.0.0/8', '11.0.0.1'), false);
  t.equal(call('net.cidr_contains', '10.0.0.0/8', '10.20.0.0/16'), true);
  t.equal(call('net.cidr_contains', '10.0.0.0/16', '10.0.0.0/8'), false);
  t.equal(call('net.cidr_contains', '10.0.0.0/8', '10.0.0.0/8'), true);
  t.equal(call('net.cidr_contains', '0.0.0.0/0', '0.0.0.0/8'), true);
  t.equal(call('net.cidr_contains', '192.168.1.7/24', '192.168.1.200'), true, 'host bits are masked');
  t.equal(call('net.cidr_contains', '2001:db8::/32', '2001:db8:1::1'), true);
  t.equal(call('net.cidr_contains', '2001:db8::/32', '2001:db9::1'), false);
  t.equal(call('net.cidr_contains', '2001:db8::/32', '2001:db8:ab00::/40'), true);
  t.equal(call('net.cidr_contains', 'fd00::/8', 'fd12:3456:789a:1::1'), true);
  t.equal(call('net.cidr_contains', '10.0.0.0/8', '::ffff:10.1.1.1'), true, 'IPv4-mapped IPv6 is IPv4');
  t.equal(call('net.cidr_contains', '::ffff:10.0.0.0/104', '10.9.9.9'), true);
  t.equal(call('net.cidr_contains', '::/0', '1.2.3.4'), false, 'an IPv6 network holds no IPv4 address');
  t.equal(call('net.cidr_contains', '::/0', '::1'), true);
  t.equal(call('net.cidr_contains', '10.0.0.0/8', '2001:db8::1'), false);
  t.equal(call('net.cidr_contains', '10.0.0.0/33', '10.0.0.1'), undefined, 'prefix too long');
  t.equal(call('net.cidr_contains', '10.0.0.0', '10.0.0.1'), undefined, 'not a CIDR');
  t.equal(call('net.cidr_contains', '010.0.0.0/8', '10.0.0.1'), undefined, 'leading zeros refused');
  t.equal(call('net.cidr_contains', '10.0.0.0/8', '10.0.0.256'), undefined);
  t.equal(call('net.cidr_contains', '10.0.0.0/8', 'fe80::1%eth0'), undefined, 'zones refused');
  t.equal(call('net.cidr_contains', '2001:db8::/32', '2001:db8:::1'), undefined);
  t.equal(call('net.cidr_contains', '2001:db8::/32', '1:2:3:4:5:6:7::8'), undefined, ':: must replace a group');
  t.equal(call('net.cidr_contains', '2001:db8::/32', '2001:db8:0:0:0:0:0:1'), true);
  t.equal(call('net.cidr_contains', '::ffff:0:0/96', '::ffff:1.2.3.4'), true);
  t.equal(call('net.cidr_contains', 1, '10.0.0.1'), undefined);
  t.equal(call('net.cidr_contains', '10.0.0.0/8', null), undefined);
});
