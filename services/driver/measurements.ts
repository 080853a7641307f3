/**
 * The driver's own measurements: per (operation, status) count, sum, min,
 * max and a latency histogram, kept by each client thread's JS thread and
 * merged exactly (bucket counts added) for status lines and the final report.
 * With a target, the same per (operation, status) for the intended latency
 * (from the scheduled start; YCSB's Intended- measurements). Cells are posted
 * between worker threads as plain arrays (WireCell).
 */
import { OPERATIONS, STATUSES, type Operation } from '../../schemas/events.v1.js'
import { Histogram } from '../core/stats/histogram.js'
import type { OpStatusAggregate } from '../core/reports/ycsb-report.js'

/** Wire code of an operation (index + 1), as the event schema numbers them. */
export const OP_CODE: Readonly<Record<Operation, number>> = Object.fromEntries(
  OPERATIONS.map((o, i) => [o, i + 1]),
) as Record<Operation, number>
export const STATUS_INDEX: Readonly<Record<string, number>> = Object.fromEntries(STATUSES.map((s, i) => [s, i]))

/**
 * Cell key: opCode * 16 + statusIndex (op codes 1..6, 16 statuses at most); the intended cell of a key is at key +
 * KEYS.
 */
const KEYS = (OPERATIONS.length + 1) * 16

export interface Cell {
  count: number
  sumUs: number
  minUs: number
  maxUs: number
  hist: Histogram
}

/**
 * A cell as posted between threads: key (intended cells past the measured ones), count, sum, min, max, then bucket
 * index/count pairs.
 */
export type WireCell = [key: number, count: number, sumUs: number, minUs: number, maxUs: number, buckets: number[]]

/** What one status interval shows per operation name (YCSB: READ, READ-FAILED, ...). */
export type IntervalCells = Map<string, Cell>

export class Measurements {
  /** Dense by key, measured then intended; undefined until the first operation with that key. */
  private readonly cells: Array<Cell | undefined> = Array.from({ length: 2 * KEYS }, () => undefined)

  /** @param withIntended keep the intended latency too (the phase has a target). */
  constructor(private readonly withIntended = false) {}

  add(key: number, latencyUs: number, intendedUs: number): void {
    this.record(key, latencyUs)
    if (this.withIntended) this.record(key + KEYS, intendedUs)
  }

  private record(key: number, us: number): void {
    let c = this.cells[key]
    if (c === undefined) {
      c = { count: 0, sumUs: 0, minUs: Number.MAX_SAFE_INTEGER, maxUs: 0, hist: new Histogram() }
      this.cells[key] = c
    }
    c.count++
    c.sumUs += us
    if (us < c.minUs) c.minUs = us
    if (us > c.maxUs) c.maxUs = us
    c.hist.record(us)
  }

  /** Operations measured. */
  count(): number {
    let n = 0
    for (let key = 0; key < KEYS; key++) n += this.cells[key]?.count ?? 0
    return n
  }

  aggregates(): OpStatusAggregate[] {
    const out: OpStatusAggregate[] = []
    for (let key = 0; key < KEYS; key++) {
      const c = this.cells[key]
      if (c === undefined) continue
      const i = this.cells[key + KEYS]
      out.push({
        op: OPERATIONS[(key >> 4) - 1]!,
        status: STATUSES[key & 15]!,
        count: c.count,
        sumUs: c.sumUs,
        minUs: c.minUs,
        maxUs: c.maxUs,
        hist: c.hist.entries(),
        ...(i === undefined
          ? {}
          : { intended: { sumUs: i.sumUs, minUs: i.minUs, maxUs: i.maxUs, hist: i.hist.entries() } }),
      })
    }
    return out
  }

  /**
   * Per operation name as YCSB's status line groups them: `OP` for OK,
   * `OP-FAILED` for every other status, and with a target `Intended-OP`,
   * `Intended-OP-FAILED`.
   */
  intervals(): IntervalCells {
    const out: IntervalCells = new Map()
    this.cells.forEach((c, cellKey) => {
      if (c === undefined) return
      const key = cellKey % KEYS
      const op = OPERATIONS[(key >> 4) - 1]!
      const name = `${cellKey >= KEYS ? 'Intended-' : ''}${(key & 15) === STATUS_INDEX.OK ? op : `${op}-FAILED`}`
      const prev = out.get(name)
      if (prev === undefined) {
        const hist = new Histogram()
        hist.merge(c.hist)
        out.set(name, { count: c.count, sumUs: c.sumUs, minUs: c.minUs, maxUs: c.maxUs, hist })
      } else {
        prev.count += c.count
        prev.sumUs += c.sumUs
        prev.minUs = Math.min(prev.minUs, c.minUs)
        prev.maxUs = Math.max(prev.maxUs, c.maxUs)
        prev.hist.merge(c.hist)
      }
    })
    return out
  }

  toWire(): WireCell[] {
    const out: WireCell[] = []
    this.cells.forEach((c, key) => {
      if (c === undefined) return
      const buckets: number[] = []
      for (const [i, n] of c.hist.entries()) buckets.push(i, n)
      out.push([key, c.count, c.sumUs, c.minUs, c.maxUs, buckets])
    })
    return out
  }

  /** Adds another thread's cells: counts and buckets add up, min and max combine, so the merge is exact. */
  merge(wire: readonly WireCell[]): void {
    for (const [key, count, sumUs, minUs, maxUs, buckets] of wire) {
      let c = this.cells[key]
      if (c === undefined) {
        c = { count: 0, sumUs: 0, minUs: Number.MAX_SAFE_INTEGER, maxUs: 0, hist: new Histogram() }
        this.cells[key] = c
      }
      c.count += count
      c.sumUs += sumUs
      if (minUs < c.minUs) c.minUs = minUs
      if (maxUs > c.maxUs) c.maxUs = maxUs
      for (let i = 0; i < buckets.length; i += 2) c.hist.recordBucket(buckets[i]!, buckets[i + 1]!)
    }
  }
}
