/**
 * "Did you mean ...?" for flags, properties, commands and threshold metrics.
 * A misspelt name that is close to exactly one valid name is almost always
 * that name; listing every valid name instead makes the user search.
 */

/** Optimal string alignment distance (Levenshtein plus adjacent swaps). */
export function editDistance(a: string, b: string): number {
  const m = a.length
  const n = b.length
  let prev2 = Array.from({ length: n + 1 }, () => 0)
  let prev = Array.from({ length: n + 1 }, (_, j) => j)
  let cur = Array.from({ length: n + 1 }, () => 0)
  for (let i = 1; i <= m; i++) {
    cur[0] = i
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2]! + 1)
      cur[j] = d
    }
    ;[prev2, prev, cur] = [prev, cur, prev2]
  }
  return prev[n]!
}

/**
 * The valid name closest to `input`, or undefined when none is close enough.
 * Case and leading dashes are ignored (`--threads` finds `-threads`, `readproportion`
 * finds `readProportion`); "close" is at most one edit per three characters.
 */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  const norm = (s: string): string => s.replace(/^-+/, '').toLowerCase()
  const x = norm(input)
  if (x === '') return undefined
  const limit = Math.max(1, Math.floor(x.length / 3))
  let best: string | undefined
  let bestD = Number.POSITIVE_INFINITY
  for (const c of candidates) {
    const d = editDistance(x, norm(c))
    if (d < bestD || (d === bestD && best !== undefined && c.length < best.length)) {
      best = c
      bestD = d
    }
  }
  return bestD <= limit ? best : undefined
}

/** "; did you mean X?" or the empty string, to append to an error message. */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const c = closest(input, candidates)
  return c === undefined ? '' : `; did you mean ${c}?`
}
