import type binaryen from 'binaryen';

/**
 * Validates the module and throws with binaryen's own explanation when it is invalid (an emitter
 * bug). binaryen prints that explanation to stderr rather than returning it, so stderr is
 * captured for the duration of the call.
 */
export function validateModule(module: binaryen.Module): void {
  const write = process.stderr.write;
  let report = '';
  process.stderr.write = ((chunk: string | Uint8Array): boolean => {
    report += typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk);
    return true;
  }) as typeof process.stderr.write;
  let valid: number;
  try {
    valid = module.validate();
  } finally {
    process.stderr.write = write;
  }
  if (!valid) throw new Error(`emitted module is invalid: ${report.trim() || 'binaryen gave no reason'}`);
}
