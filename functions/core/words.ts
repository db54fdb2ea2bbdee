// How a count reads in what the CLI and the report print: "1 file", "2 files" — never "1 files".

/**
 * `n` and `word`, the word in the plural unless `n` is 1 (`plural(1, 'group')` → "1 group"). `pluralWord` for a
 * word whose plural is not `word` + "s" (`plural(n, 'entry', 'entries')`).
 */
export function plural(n: number, word: string, pluralWord = `${word}s`): string {
  return `${n} ${n === 1 ? word : pluralWord}`;
}
