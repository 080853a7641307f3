/**
 * Produces synthetic operation events straight into Kafka (no driver), fast,
 * and remembers the truth: exact counts and latency sums per operation, so
 * tests can check what the pipeline stored.
 */
import type { Kafka, Producer } from 'kafkajs'
import { OPERATIONS, type Operation } from '../../schemas/events.v1.js'
import { OpsBatchWriter } from '../../services/core/codec/ops-batch-writer.js'

export interface Truth {
  events: number
  /** Kafka messages (OPS batches) sent. */
  messages: number
  byOp: Record<string, number>
  latencySumByOp: Record<string, number>
}

export function emptyTruth(): Truth {
  return { events: 0, messages: 0, byOp: {}, latencySumByOp: {} }
}

export class EventProducer {
  private seq = 0
  private seed: number
  readonly truth = emptyTruth()
  private constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    readonly runId: string,
    seed: number,
  ) {
    this.seed = seed
  }

  static async open(kafka: Kafka, topic: string, runId: string, seed = 1): Promise<EventProducer> {
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    return new EventProducer(producer, topic, runId, seed)
  }

  private rnd(): number {
    this.seed = (this.seed * 48271) % 2147483647
    return this.seed / 2147483647
  }

  /** Sends `events` events in messages of `perMessage`, spread over `clients` clients and the last few seconds. */
  async send(
    events: number,
    opts: { clients?: number; perMessage?: number; messagesPerRequest?: number } = {},
  ): Promise<void> {
    const clients = opts.clients ?? 3
    const perMessage = opts.perMessage ?? 2000
    const perRequest = opts.messagesPerRequest ?? 20
    let pending: Array<{ key: string; value: Buffer }> = []
    let left = events
    while (left > 0) {
      const n = Math.min(perMessage, left)
      const client = `client-${this.seq % clients}`
      const w = new OpsBatchWriter(this.runId, client)
      const now = Date.now() * 1000
      for (let i = 0; i < n; i++) {
        const op: Operation = OPERATIONS[Math.floor(this.rnd() * 4)]!
        // Log-uniform latencies from 1 µs to ~100 ms.
        const latency = Math.floor(Math.exp(this.rnd() * 11.5))
        w.add(i % 16, OPERATIONS.indexOf(op) + 1, 0, 0, now - Math.floor(this.rnd() * 3e6), latency, latency, 100)
        this.truth.byOp[op] = (this.truth.byOp[op] ?? 0) + 1
        this.truth.latencySumByOp[op] = (this.truth.latencySumByOp[op] ?? 0) + latency
      }
      this.truth.events += n
      this.truth.messages++
      left -= n
      pending.push({ key: `${this.runId}:${client}:${this.seq++}`, value: w.finish() })
      if (pending.length >= perRequest) {
        await this.producer.send({ topic: this.topic, acks: -1, messages: pending })
        pending = []
      }
    }
    if (pending.length > 0) await this.producer.send({ topic: this.topic, acks: -1, messages: pending })
  }

  /** Sends raw messages (junk for dead-letter tests). */
  async sendRaw(values: Buffer[]): Promise<void> {
    for (let i = 0; i < values.length; i += 500) {
      await this.producer.send({
        topic: this.topic,
        acks: -1,
        messages: values.slice(i, i + 500).map((value, j) => ({ key: `junk-${i + j}`, value })),
      })
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect()
  }
}
