/**
 * Everything the processor holds for one Kafka partition between two
 * flushes. Pure: no Kafka, no ClickHouse. A flush turns the state into a
 * FlushBatch, a deterministic function of the offsets it covers, which is
 * what makes a repeated flush (after a crash) carry the same deduplication
 * token and the same rows.
 */
import {
  OPERATIONS,
  RECORD_KIND,
  STATUSES,
  type ProfileRecord,
  type RunLifecycle,
  type ServerMetrics,
  type SummaryReportRecord,
} from '../../../schemas/events.v1.js'
import type { DecodedOp, DecodeLimits, OpsVisitor, RejectReason } from '../codec/decode-result.js'
import { decodeMessage } from '../codec/event-codec.js'
import { bucketValue } from './histogram.js'
import { WindowAggregator, type WindowOptions, type WindowRow } from './windows.js'

export interface DeadLetter {
  offset: number
  reason: RejectReason
  runId: string
  /** Events rejected (0 when the whole message could not be read). */
  events: number
  detail: string
  /** Original message bytes for whole-message rejects; for event rejects a JSON description. */
  payload: Buffer
}

/**
 * Raw events, column by column in typed arrays: appending allocates nothing
 * per event (a plain number[] would box the 1.7e15 µs timestamps), and the
 * store serializes straight from the columns.
 */
export class RawOps {
  runIds: string[] = []
  clientIds: string[] = []
  length = 0
  /** Index into runIds/clientIds for each event. */
  group: Uint32Array
  thread: Uint16Array
  opCode: Uint8Array
  statusIndex: Uint8Array
  cacheIndex: Uint8Array
  startUs: Float64Array
  latencyUs: Uint32Array
  intendedUs: Uint32Array
  bytes: Uint32Array
  offset: Float64Array

  /** @param capacity events held before the columns grow (they double). */
  constructor(capacity = 4096) {
    this.group = new Uint32Array(capacity)
    this.thread = new Uint16Array(capacity)
    this.opCode = new Uint8Array(capacity)
    this.statusIndex = new Uint8Array(capacity)
    this.cacheIndex = new Uint8Array(capacity)
    this.startUs = new Float64Array(capacity)
    this.latencyUs = new Uint32Array(capacity)
    this.intendedUs = new Uint32Array(capacity)
    this.bytes = new Uint32Array(capacity)
    this.offset = new Float64Array(capacity)
  }

  push(group: number, e: DecodedOp, offset: number): void {
    const i = this.length
    if (i === this.group.length) this.grow()
    this.group[i] = group
    this.thread[i] = e.thread
    this.opCode[i] = e.opCode
    this.statusIndex[i] = e.statusIndex
    this.cacheIndex[i] = e.cacheIndex
    this.startUs[i] = e.startUs
    this.latencyUs[i] = e.latencyUs
    this.intendedUs[i] = e.intendedUs
    this.bytes[i] = e.bytes
    this.offset[i] = offset
    this.length = i + 1
  }

  private grow(): void {
    const n = this.group.length * 2
    const copy = <T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(n)
      b.set(a)
      return b
    }
    this.group = copy(this.group, (k) => new Uint32Array(k))
    this.thread = copy(this.thread, (k) => new Uint16Array(k))
    this.opCode = copy(this.opCode, (k) => new Uint8Array(k))
    this.statusIndex = copy(this.statusIndex, (k) => new Uint8Array(k))
    this.cacheIndex = copy(this.cacheIndex, (k) => new Uint8Array(k))
    this.startUs = copy(this.startUs, (k) => new Float64Array(k))
    this.latencyUs = copy(this.latencyUs, (k) => new Uint32Array(k))
    this.intendedUs = copy(this.intendedUs, (k) => new Uint32Array(k))
    this.bytes = copy(this.bytes, (k) => new Uint32Array(k))
    this.offset = copy(this.offset, (k) => new Float64Array(k))
  }
}

/** Rejected events of one message kept in its dead letter as examples. */
const DEAD_LETTER_SAMPLE = 20

export interface FlushBatch {
  topic: string
  partition: number
  /** First offset covered (the committed position the flush started from). */
  firstOffset: number
  /** Last offset covered, inclusive. */
  lastOffset: number
  /** insert_deduplication_token prefix: identical for a repeated flush of the same range. */
  token: string
  windows: WindowRow[]
  ops: RawOps | undefined
  deadLetters: DeadLetter[]
  lifecycle: Array<{ offset: number; record: RunLifecycle }>
  serverMetrics: Array<{ offset: number; record: ServerMetrics }>
  /** PROFILE records (stacks with sample counts of a time slice). */
  profiles: Array<{ offset: number; record: ProfileRecord }>
  /** SUMMARY_REPORT records: old final reports, figures as reported. */
  summaries: Array<{ offset: number; record: SummaryReportRecord }>
  /** Events counted into windows by this flush. */
  events: number
}

export interface PartitionStateOptions extends WindowOptions {
  storeRawEvents: boolean
  /** Accepted event time range, relative to the processor's clock. */
  maxEventAgeUs: number
  maxEventFutureUs: number
}

export class PartitionState {
  readonly windows: WindowAggregator
  /** Offset this state starts at: the committed position. */
  startOffset: number
  /** Last offset added, -1 when nothing since the last flush. */
  lastOffset = -1
  /** When a replay of an interrupted flush is in progress: flush exactly at this offset. */
  replayEnd: number | undefined
  /** performance.now() of the first message since the last flush. */
  firstAddedAt = 0
  private raw: RawOps | undefined
  private deadLetters: DeadLetter[] = []
  private lifecycle: FlushBatch['lifecycle'] = []
  private serverMetrics: FlushBatch['serverMetrics'] = []
  private profiles: FlushBatch['profiles'] = []
  private summaries: FlushBatch['summaries'] = []
  private events = 0
  private messages = 0
  /** Totals since start, for metrics. */
  readonly rejectedByReason = new Map<RejectReason, number>()

  constructor(
    readonly topic: string,
    readonly partition: number,
    startOffset: number,
    private readonly opts: PartitionStateOptions,
  ) {
    this.startOffset = startOffset
    this.windows = new WindowAggregator(opts)
    this.raw = opts.storeRawEvents ? new RawOps() : undefined
  }

  /** Messages since the last flush. */
  get pendingMessages(): number {
    return this.messages
  }

  get pendingEvents(): number {
    return this.events
  }

  /** Decodes one message into the state. Never throws for bad input: it becomes a dead letter. */
  add(value: Buffer | null, offset: number, nowUs: number): void {
    if (this.messages === 0) this.firstAddedAt = performance.now()
    this.messages++
    this.lastOffset = offset
    const limits: DecodeLimits = {
      minStartUs: nowUs - this.opts.maxEventAgeUs,
      maxStartUs: nowUs + this.opts.maxEventFutureUs,
    }
    // Rejected events: counted by reason, and the first few kept as a sample
    // for the dead letter (a message may reject thousands).
    const rejectedByReason = new Map<RejectReason, number>()
    const sample: Array<{ reason: RejectReason; index: number; event: DecodedOp }> = []
    let groupIndex = -1
    const raw = this.raw
    const visitor: OpsVisitor = {
      event: (e) => {
        this.windows.add(e)
        this.events++
        if (raw !== undefined) raw.push(groupIndex, e, offset)
      },
      reject: (reason, index, e) => {
        rejectedByReason.set(reason, (rejectedByReason.get(reason) ?? 0) + 1)
        if (sample.length < DEAD_LETTER_SAMPLE) sample.push({ reason, index, event: { ...e } })
      },
    }
    // The aggregator needs the (run, client) before the first event: begin the
    // group once per message, lazily, when its first valid event arrives.
    let begun = false
    const wrapped: OpsVisitor = {
      event: (e) => {
        if (!begun) {
          begun = true
          groupIndex = this.beginGroup(value!)
        }
        visitor.event(e)
      },
      reject: (reason, index, e) => visitor.reject(reason, index, e),
    }
    const r = decodeMessage(value, limits, wrapped)
    if (!r.ok) {
      this.reject(offset, r.reason, '', 0, r.detail, value ?? Buffer.alloc(0))
      return
    }
    switch (r.kind) {
      case RECORD_KIND.OPS:
        if (r.rejected > 0) {
          const detail = [...rejectedByReason].map(([k, v]) => `${v} ${k}`).join(', ')
          const described = sample.map((x) => ({ index: x.index, reason: x.reason, ...describe(x.event) }))
          const payload = Buffer.from(
            JSON.stringify({
              runId: r.runId,
              clientId: r.clientId,
              rejected: r.rejected,
              of: r.count,
              sample: described,
            }),
          )
          // One dead letter per message, under its most frequent reason; the detail lists all.
          const main = [...rejectedByReason].sort((a, b) => b[1] - a[1])[0]![0]
          this.reject(
            offset,
            main,
            r.runId,
            r.rejected,
            `${r.rejected} of ${r.count} events rejected: ${detail}`,
            payload,
          )
        }
        return
      case RECORD_KIND.INTERVAL_HISTOGRAM: {
        const h = r.record
        let n = 0
        for (const [, c] of h.buckets) n += c
        this.windows.addHistogram(
          h.runId,
          h.clientId,
          h.op,
          h.status,
          h.intervalStartUs,
          h.buckets,
          bucketValue,
          h.intervalLengthUs,
          h.intended,
        )
        this.events += n
        return
      }
      case RECORD_KIND.RUN_LIFECYCLE:
        this.lifecycle.push({ offset, record: r.record })
        return
      case RECORD_KIND.SERVER_METRICS:
        this.serverMetrics.push({ offset, record: r.record })
        return
      case RECORD_KIND.PROFILE:
        this.profiles.push({ offset, record: r.record })
        return
      case RECORD_KIND.SUMMARY_REPORT:
        this.summaries.push({ offset, record: r.record })
        return
    }
  }

  /** Hands out everything since the last flush as one batch and resets. */
  drain(groupId: string): FlushBatch {
    const batch: FlushBatch = {
      topic: this.topic,
      partition: this.partition,
      firstOffset: this.startOffset,
      lastOffset: this.lastOffset,
      token: `${groupId}/${this.topic}/${this.partition}/${this.startOffset}-${this.lastOffset}`,
      windows: this.windows.drain(),
      ops: this.raw !== undefined && this.raw.length > 0 ? this.raw : undefined,
      deadLetters: this.deadLetters,
      lifecycle: this.lifecycle,
      serverMetrics: this.serverMetrics,
      profiles: this.profiles,
      summaries: this.summaries,
      events: this.events,
    }
    // Sized like the batch just drained: the next one is usually as large, and
    // growing from 4,096 by doubling copied every column ~7 times per flush.
    this.raw = this.opts.storeRawEvents ? new RawOps(Math.max(4096, batch.ops?.length ?? 0)) : undefined
    this.deadLetters = []
    this.lifecycle = []
    this.serverMetrics = []
    this.profiles = []
    this.summaries = []
    this.events = 0
    this.messages = 0
    return batch
  }

  /** Called after the flush was stored and committed. */
  advance(): void {
    this.startOffset = this.lastOffset + 1
    this.lastOffset = -1
    this.replayEnd = undefined
  }

  /**
   * Takes a message without counting it: it goes to the dead letters with
   * the reason (e.g. its run uses another window length than this processor).
   */
  refuse(value: Buffer | null, offset: number, reason: RejectReason, runId: string, detail: string): void {
    if (this.messages === 0) this.firstAddedAt = performance.now()
    this.messages++
    this.lastOffset = offset
    this.reject(offset, reason, runId, 0, detail, value ?? Buffer.alloc(0))
  }

  private beginGroup(value: Buffer): number {
    // Bytes 4.. hold run id and client id, each length-prefixed (schemas/events.v1.ts).
    const runLen = value[4]!
    const runId = value.toString('utf8', 5, 5 + runLen)
    const clientLen = value[5 + runLen]!
    const clientId = value.toString('utf8', 6 + runLen, 6 + runLen + clientLen)
    this.windows.begin(runId, clientId)
    if (this.raw === undefined) return -1
    this.raw.runIds.push(runId)
    this.raw.clientIds.push(clientId)
    return this.raw.runIds.length - 1
  }

  private reject(
    offset: number,
    reason: RejectReason,
    runId: string,
    events: number,
    detail: string,
    payload: Buffer,
  ): void {
    this.deadLetters.push({ offset, reason, runId, events, detail, payload })
    this.rejectedByReason.set(reason, (this.rejectedByReason.get(reason) ?? 0) + 1)
  }
}

function describe(e: DecodedOp): Record<string, unknown> {
  return {
    thread: e.thread,
    op: OPERATIONS[e.opCode - 1] ?? `code ${e.opCode}`,
    status: STATUSES[e.statusIndex] ?? `index ${e.statusIndex}`,
    startUs: e.startUs,
    latencyUs: e.latencyUs,
    intendedUs: e.intendedUs,
    bytes: e.bytes,
  }
}
