/**
 * Extractive text units: the sentences of an item's text, exactly as written (trimmed). Lines are
 * sentences of their own (a decision's memory text is its title, then its context); within a line
 * a sentence ends at `.`, `!` or `?` followed by space and a capital, digit or opening mark, so
 * "v1.2" and "e.g. this" stay whole.
 */
export function sentences(text: string): string[] {
  return text
    .split(/\r?\n+/)
    .flatMap((line) => line.split(/(?<=[.!?])\s+(?=[A-Z0-9"'(“‘])/u))
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length > 0);
}
