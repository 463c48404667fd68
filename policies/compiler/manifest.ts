/**
 * `manifest.json`, the index of a policy build directory: which module holds which policy, the
 * entrypoints in id order, and hashes that tie each module to the sources it came from.
 */
export const MANIFEST_FILE = 'manifest.json';
/**
 * The directory of a build holding the Rego text of every module a policy was compiled from, at
 * its path relative to the sources: what a reviewer reads the policy as, exactly as compiled, even
 * after the source files change (the console and `GET /v1/policies/{name}` show it). Hidden, so
 * that a build directory inside a source tree never offers its copies as sources (source-tree.ts
 * skips hidden entries) to `policies test`, `check` or a later build.
 */
export const SOURCES_DIR = '.sources';
export const MANIFEST_VERSION = 1;

export interface ManifestPolicy {
  /** The module's file name inside the build directory: `<name>.wasm`. */
  module: string;
  /** The policy's package as a slash path: `gatehouse/spend_approval/v2`. */
  package: string;
  /** Entrypoints by id: 0 is the package document, then each non-function rule of the package. */
  entrypoints: string[];
  /** `sha256:<hex>` over every source compiled into the module (paths and contents, in order). */
  sourceHash: string;
  /** `sha256:<hex>` of the module bytes. */
  moduleHash: string;
  /** The source files compiled into the module, relative to the source directory; their text is in `.sources/`. */
  sources: string[];
}

export interface Manifest {
  version: typeof MANIFEST_VERSION;
  policies: Record<string, ManifestPolicy>;
  /** The base data document's file inside the build directory, when the sources had one. */
  data?: string;
}
