/**
 * A stand-in for one ad hoc result (AdHocStream) in the API's unit tests:
 * the given pieces in order, a piece that is an Error failing the stream
 * there, as the guard's stream fails part-way. The real guard and engine are
 * in the integration tests.
 */
import type { AdHocQueries, AdHocStream, ResultLimits } from '../../services/core/ports/ad-hoc-queries.js'

export interface FakeResult {
  format: string
  pieces: Array<string | Uint8Array | Error>
  rows?: number
  truncated?: boolean
  limits?: { cut: ResultLimits; fail: ResultLimits }
}

export function fakeStream(r: FakeResult): AdHocStream & { cancelled: boolean } {
  const ac = new AbortController()
  let bytes = 0
  const s = {
    format: r.format,
    rows: r.rows ?? 0,
    get bytes() {
      return bytes
    },
    truncated: r.truncated ?? false,
    complete: false,
    limits: r.limits ?? { cut: {}, fail: {} },
    elapsedMs: 1,
    stopped: ac.signal,
    cancelled: false,
    cancel() {
      s.cancelled = true
      ac.abort()
    },
    async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      for (const p of r.pieces) {
        if (p instanceof Error) throw p
        const b = typeof p === 'string' ? Buffer.from(p) : p
        bytes += b.length
        yield b
      }
    },
  }
  return s
}

/** Ad hoc queries that must not be asked for in a test. */
export const NO_AD_HOC: AdHocQueries = {
  stream: async () => {
    throw new Error('no ad hoc SQL in this test')
  },
  close: async () => undefined,
}
