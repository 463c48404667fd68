import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `contents` beside `path` and renames it into place, so a reader (another process
 * starting, say) finds the whole file or the one before, never a partial one. The scratch name
 * is unique per writer, so concurrent writers of one path do not clobber each other's halves.
 */
export async function writeAtomically(path: string, contents: Uint8Array | string, mode?: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const scratch = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(scratch, contents, mode === undefined ? {} : { mode });
    await rename(scratch, path);
  } finally {
    await rm(scratch, { force: true });
  }
}
