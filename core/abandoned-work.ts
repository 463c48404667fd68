/**
 * Whether work marked with `owner` (the instance doing it, in cluster mode) was left unfinished
 * by a stopped process: unmarked work (a single node), this instance's own from before its
 * restart, or that of an instance that is no longer alive.
 */
export function abandoned(owner: string | undefined, me: string | null, alive: (node: string) => boolean): boolean {
  return owner === undefined || owner === me || !alive(owner);
}
