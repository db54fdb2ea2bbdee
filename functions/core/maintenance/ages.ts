// The words and journal states vacuum's decisions share, whichever format's leftovers they judge: ages read
// the same in every reason, and a group's inputs count as retired in exactly the same states everywhere.

export const HOUR = 3_600_000;

/** Journal states in which a group's inputs have been retired (nothing can undo it any more). */
export const TERMINAL_RETIRED: readonly string[] = ['retired', 'done'];

/** `37 h ago`, as every vacuum reason says it. */
export function hoursAgo(now: number, at: number): string {
  return `${Math.floor((now - at) / HOUR)} h ago`;
}

/** An instant as vacuum reasons print it (ISO-8601, UTC). */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
