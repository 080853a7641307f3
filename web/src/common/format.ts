/**
 * How the pages write numbers, durations and times: the same on the live view and the experiment page. A missing
 * figure (null or undefined) is written as an en dash.
 */

export const fmtInt = (n: number | null | undefined): string =>
  n == null ? '–' : Math.round(n).toLocaleString('en-US')

/** Rates: 12.5k, 1.25M; below 100 with up to two decimals. */
export function fmtRate(n: number | null | undefined): string {
  if (n == null) return '–'
  const a = Math.abs(n)
  if (a >= 1e6) return (n / 1e6).toFixed(a >= 1e7 ? 1 : 2) + 'M'
  if (a >= 1e4) return (n / 1e3).toFixed(a >= 1e5 ? 0 : 1) + 'k'
  if (a >= 100 || Number.isInteger(n)) return fmtInt(n)
  return String(Math.round(n * (a >= 10 ? 10 : 100)) / (a >= 10 ? 10 : 100))
}

/** Latencies are µs everywhere in Benchstream; axes switch to ms and s where that reads better. */
export function fmtUs(v: number | null | undefined): string {
  if (v == null) return '–'
  if (v < 1000) return Math.round(v) + ' µs'
  if (v < 1e6) return (v / 1000).toFixed(v < 1e4 ? 2 : 1) + ' ms'
  return (v / 1e6).toFixed(2) + ' s'
}

export const fmtMs = (ms: number | null | undefined): string =>
  ms == null ? '–' : (Math.abs(ms) >= 100 ? Math.round(ms) : Math.round(ms * 10) / 10) + ' ms'

export const fmtPct = (r: number | null | undefined): string => (r == null ? '–' : (100 * r).toFixed(1) + '%')

/** A time of day in the browser's zone, ms since the epoch. */
export const fmtTime = (ms: number | null | undefined): string =>
  ms == null ? '–' : new Date(ms).toLocaleTimeString('en-GB')

/** A date and time in the browser's zone, ms since the epoch. */
export const fmtDateMs = (ms: number | null | undefined): string =>
  ms == null ? '–' : new Date(ms).toLocaleString('en-GB')

/** A date and time as ClickHouse writes it in UTC ('2026-12-03 10:00:00.200000'), in the browser's zone. */
export function fmtSqlDate(text: string | null | undefined): string {
  if (!text) return '–'
  const d = new Date(text.replace(' ', 'T') + 'Z')
  return isNaN(d.getTime()) ? text : d.toLocaleString('en-GB')
}
