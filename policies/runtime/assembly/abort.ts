// Every way the runtime can fail ends in the host's `opa_abort`, which takes a NUL-terminated
// string. AssemblyScript's own `abort` (bounds checks, `unreachable` paths in the standard
// library) is redirected here by the build (`--use abort=...`), so `env.abort` is never imported.

@external("env", "opa_abort")
declare function opa_abort(message: usize): void;

// @ts-ignore: decorator
@inline const MESSAGE_CAPACITY: i32 = 256;

// Static, so that reporting "out of memory" does not itself need memory.
const messageBuffer = memory.data(MESSAGE_CAPACITY);

/** Aborts with the bytes at ptr (truncated to the buffer), e.g. a Rego string's UTF-8. */
export function abortWithBytes(ptr: usize, len: i32): void {
  const n = min(len, MESSAGE_CAPACITY - 1);
  memory.copy(messageBuffer, ptr, n);
  store<u8>(messageBuffer + n, 0);
  opa_abort(messageBuffer);
  unreachable();
}

/** Aborts with an AssemblyScript string; characters above U+00FF are replaced by '?'. */
export function abortWithMessage(message: string): void {
  abortWithUTF16(changetype<usize>(message));
}

// Takes the string as a plain address: the build's stack pass has already run when the
// compiler first emits a call to `abort`, so this path must hold no managed references.
function abortWithUTF16(message: usize): void {
  const n = min(<i32>(load<u32>(message - 4) >>> 1), MESSAGE_CAPACITY - 1);
  for (let i = 0; i < n; i++) {
    const c = load<u16>(message + (<usize>i << 1));
    store<u8>(messageBuffer + i, c < 0x100 ? <u8>c : 0x3f);
  }
  store<u8>(messageBuffer + n, 0);
  opa_abort(messageBuffer);
  unreachable();
}

/** Replaces AssemblyScript's `abort` (message, file name, line, column); the strings arrive as addresses. */
export function runtimeAbort(message: usize, fileName: usize, line: u32, column: u32): void {
  abortWithUTF16(message ? message : changetype<usize>("runtime error"));
}
