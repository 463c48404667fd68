/**
 * The one tokenizer both retrieval signals share, so "what is a word" means the same to BM25 and
 * to the embedder. Text is Unicode-normalised (NFKC, then accents dropped), lower-cased and split
 * on anything that is not a letter or a digit; an apostrophe inside a word is dropped rather than
 * splitting it (`don't` → `dont`, `team's` → `teams`). Tokens longer than 40 characters are noise
 * (hashes, base64) that would only bloat the index, so they are skipped.
 */
const MAX_TOKEN_LENGTH = 40;
const MARKS = /\p{M}+/gu;
const INNER_APOSTROPHE = /(\p{L})['’](\p{L})/gu;
const SEPARATOR = /[^\p{L}\p{N}]+/u;

const ASCII = /^[\x00-\x7f]*$/;

export function tokenize(text: string): string[] {
  // Most text is ASCII, where normalisation changes nothing: skip its cost.
  const folded = ASCII.test(text) ? text : text.normalize('NFKD').replace(MARKS, '').normalize('NFKC');
  const normalised = folded.toLowerCase().replace(INNER_APOSTROPHE, '$1$2');
  const tokens: string[] = [];
  for (const token of normalised.split(SEPARATOR)) {
    if (token.length > 0 && token.length <= MAX_TOKEN_LENGTH) tokens.push(token);
  }
  return tokens;
}

/**
 * Words too common to tell documents apart. BM25's IDF already discounts them; dropping them as
 * well keeps their long posting lists out of every query. The embedder weights them down by
 * frequency instead (core/memory/word-vectors.ts).
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be been but by for from had has have he her his i if in into is it its me my no not of on or our ' +
    'she so than that the their them then there these they this those to was we were what when where which while who will ' +
    'with would you your'
  ).split(' '),
);
