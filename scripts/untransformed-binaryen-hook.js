/**
 * A module-loading hook (registered by register-typescript.js) that loads binaryen's one ES module
 * straight from disk, ending the chain before tsx's load hook would scan it.
 */
import { readFile } from 'node:fs/promises';

/** binaryen's module URL, as the main thread resolved it. */
let binaryenUrl;

/** Receives the `data` given to `register`: binaryen's URL. */
export function initialize(url) {
  binaryenUrl = url;
}

/** Loads binaryen as plain Node would; every other module goes down the chain (to tsx). */
export async function load(url, context, nextLoad) {
  if (url !== binaryenUrl) return nextLoad(url, context);
  return { format: 'module', source: await readFile(new URL(url)), shortCircuit: true };
}
