/**
 * Number and time formats of YCSB 0.17.0's own output, so that what we print
 * in YCSB's layouts reads exactly like YCSB: java.text.DecimalFormat("#.##")
 * for status-line figures and Client.RemainingFormatter for "est completion
 * in". (Sources: site.ycsb:core:0.17.0, StatusThread.computeStats and
 * OneMeasurementHdrHistogram.getSummary.)
 */

/** DecimalFormat("#.##"): at most two decimals, HALF_EVEN rounding, no trailing zeros, no grouping. */
export function decimal2(x: number): string {
  if (!Number.isFinite(x)) return x > 0 ? '∞' : x < 0 ? '-∞' : 'NaN' // Java's DecimalFormat symbols
  // Java rounds the double's exact decimal value: read it from toFixed(20)
  // (exact to 20 places), then round half-even at the second decimal.
  const [whole, frac] = Math.abs(x).toFixed(20).split('.') as [string, string]
  let cents = BigInt(whole + frac.slice(0, 2))
  const rest = frac.slice(2)
  const half = '5'.padEnd(rest.length, '0')
  if (rest > half || (rest === half && cents % 2n === 1n)) cents += 1n
  const sign = x < 0 ? '-' : '' // Java keeps the sign of a negative value that rounds to 0: "-0"
  const units = cents / 100n
  const c = cents % 100n
  return `${sign}${units}${c === 0n ? '' : `.${String(c).padStart(2, '0').replace(/0$/, '')}`}`
}

/** Client.RemainingFormatter.format(seconds), including its quirks. */
export function remainingText(totalSeconds: number): string {
  let seconds = Math.max(0, Math.floor(totalSeconds))
  let time = ''
  const days = Math.floor(seconds / 86400)
  if (days > 0) {
    time += `${days}${days === 1 ? ' day ' : ' days '}`
    seconds -= days * 86400
  }
  const hours = Math.floor(seconds / 3600)
  if (hours > 0) {
    time += `${hours}${hours === 1 ? ' hour ' : ' hours '}`
    seconds -= hours * 3600
  }
  if (days < 1) {
    const minutes = Math.floor(seconds / 60)
    if (minutes > 0) time += `${minutes}${minutes === 1 ? ' minute ' : ' minutes '}`
  }
  // YCSB prints seconds only when nothing larger was printed, always as "seconds".
  if (time.length === 0) time += `${seconds} seconds `
  return time
}

/** SimpleDateFormat("yyyy-MM-dd HH:mm:ss:SSS") in local time. */
export function statusTimestamp(d: Date): string {
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0')
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}:${pad(d.getMilliseconds(), 3)}`
  )
}
