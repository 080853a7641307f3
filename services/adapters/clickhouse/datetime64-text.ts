/**
 * Times as the text ClickHouse's DateTime64 columns parse exactly (no float rounding), and back: the stores write
 * `seconds.micros` and `seconds.millis` strings rather than JS numbers.
 */

/** `seconds.micros` text that DateTime64(6) parses exactly (no float rounding). */
export function usToDateTime64(us: number): string {
  const s = Math.floor(us / 1e6)
  return `${s}.${String(us - s * 1e6).padStart(6, '0')}`
}

/** The ms of a `seconds.millis` DateTime64(3) text (as msToDateTime64 and the profile rows write it). */
export function textToMs(text: string): number {
  const [s, ms = '0'] = text.split('.')
  return Number(s) * 1000 + Number(ms.padEnd(3, '0').slice(0, 3))
}

export function msToDateTime64(us: number): string {
  const ms = Math.floor(us / 1000)
  const s = Math.floor(ms / 1000)
  return `${s}.${String(ms - s * 1000).padStart(3, '0')}`
}
