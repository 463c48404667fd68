// The result set of an evaluation: a set of {"result": value} objects, filled by generated code
// (rt_result_set_add) and written as JSON by the ABI's opa_eval on every evaluation.

import { ByteBuffer } from "./buffer";
import { dumpJSON } from "./json-dump";
import { Value, newObject, objectInsert, objectValueAt, setAdd, setAt, setLength, stringValue } from "./value";

const RESULT_BYTES = memory.data<u8>([0x72, 0x65, 0x73, 0x75, 0x6c, 0x74]);

// Allocated when the module starts, below the heap pointer the host resets to, so it is shared
// by every evaluation.
const RESULT_KEY: Value = stringValue(RESULT_BYTES, 6);

// `{"result":` as little-endian words: 8 bytes, then 2.
// @ts-ignore: decorator
@inline const ENTRY_PREFIX_8: u64 = 0x746c75736572227b;
// @ts-ignore: decorator
@inline const ENTRY_PREFIX_2: u16 = 0x3a22;

/** Adds {"result": v}. */
export function resultSetAdd(resultSet: Value, v: Value): void {
  const entry = newObject(1);
  objectInsert(entry, RESULT_KEY, v);
  setAdd(resultSet, entry);
}

/**
 * The result set's JSON as a NUL-terminated string: what dumping it as a value writes, with the
 * entries' shared `{"result":` copied rather than written key by key.
 */
export function dumpResultSet(resultSet: Value): usize {
  const out = ByteBuffer.create(256);
  out.writeByte(0x5b);
  const n = setLength(resultSet);
  for (let i = 0; i < n; i++) {
    if (i) out.writeByte(0x2c);
    const at = out.reserve(10);
    store<u64>(at, ENTRY_PREFIX_8);
    store<u16>(at, ENTRY_PREFIX_2, 8);
    out.len += 10;
    dumpJSON(out, objectValueAt(setAt(resultSet, i), 0), false);
    out.writeByte(0x7d);
  }
  out.writeByte(0x5d);
  return out.toCString();
}
