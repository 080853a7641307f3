/**
 * Golden vectors of schemas/events.v1.ts (schemas/test-vectors/events.v1.json),
 * shared with the Java encoder of the YCSB bridge (services/ycsb, GoldenVectorsTest):
 * the TS codec must still write exactly these bytes, and read them back to the inputs.
 * Regenerate after a deliberate wire change: node test/tools/gen-event-vectors.mjs
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import {
  CACHE_OUTCOMES,
  OPERATIONS,
  RECORD_KIND,
  STATUSES,
  type CacheOutcome,
  type IntervalHistogram,
  type Operation,
  type RunLifecycle,
  type Status,
} from '../../schemas/events.v1.js'
import type { DecodedOp } from '../../services/core/codec/decode-result.js'
import { decodeMessage } from '../../services/core/codec/event-codec.js'
import { OpsBatchWriter } from '../../services/core/codec/ops-batch-writer.js'
import { encodeIntervalHistogram, encodeJsonRecord, opCodes } from '../../services/core/codec/record-encoders.js'

interface VectorEvent {
  thread: number
  op: Operation
  status: Status
  cache: CacheOutcome
  startUs: number
  latencyUs: number
  intendedUs: number
  bytes: number
}
interface Vectors {
  ops: Array<{
    name: string
    runId: string
    clientId: string
    events: VectorEvent[]
    decodedIntendedUs?: number[]
    hex: string
  }>
  lifecycle: Array<{ name: string; record: RunLifecycle; hex: string }>
  intervalHistogram: Array<{ name: string; record: Omit<IntervalHistogram, 'kind'>; hex: string }>
}

// dist/test/unit/ -> repository root
const vectors = JSON.parse(
  readFileSync(new URL('../../../schemas/test-vectors/events.v1.json', import.meta.url), 'utf8'),
) as Vectors
// Wide enough for every vector (they are around 2025-12-02, ±1 h).
const limits = { minStartUs: 0, maxStartUs: Number.MAX_SAFE_INTEGER }

test('the vectors cover the edge cases they promise', () => {
  const events = vectors.ops.flatMap((c) => c.events)
  assert.ok(
    events.some((e) => e.thread === 65_535),
    'max thread',
  )
  assert.ok(
    events.some((e) => e.intendedUs > e.latencyUs),
    'intended > latency',
  )
  assert.ok(
    events.some((e) => e.latencyUs >= 2 ** 28),
    'five-byte varint',
  )
  assert.ok(
    vectors.ops.some((c) => c.events.some((e) => e.startUs < c.events[0]!.startUs)),
    'negative start delta',
  )
  assert.deepEqual(new Set(events.map((e) => e.op)), new Set(OPERATIONS))
  assert.deepEqual(new Set(events.map((e) => e.status)), new Set(STATUSES))
  assert.deepEqual(new Set(events.map((e) => e.cache)), new Set(CACHE_OUTCOMES))
})

for (const c of vectors.ops) {
  test(`OPS vector "${c.name}": the TS writer produces the golden bytes and reads them back`, () => {
    const w = new OpsBatchWriter(c.runId, c.clientId)
    for (const e of c.events) {
      const [opCode, statusIndex, cacheIndex] = opCodes(e.op, e.status, e.cache)
      w.add(e.thread, opCode, cacheIndex, statusIndex, e.startUs, e.latencyUs, e.intendedUs, e.bytes)
    }
    assert.equal(w.finish().toString('hex'), c.hex)

    const seen: DecodedOp[] = []
    const r = decodeMessage(Buffer.from(c.hex, 'hex'), limits, {
      event: (e) => seen.push({ ...e }),
      reject: (reason, i) => assert.fail(`event ${i} rejected: ${reason}`),
    })
    assert.ok(
      r.ok &&
        r.kind === RECORD_KIND.OPS &&
        r.runId === c.runId &&
        r.clientId === c.clientId &&
        r.count === c.events.length,
    )
    assert.deepEqual(
      seen,
      c.events.map((e, i) => {
        const [opCode, statusIndex, cacheIndex] = opCodes(e.op, e.status, e.cache)
        return {
          thread: e.thread,
          opCode,
          statusIndex,
          cacheIndex,
          startUs: e.startUs,
          latencyUs: e.latencyUs,
          intendedUs: c.decodedIntendedUs?.[i] ?? e.intendedUs,
          bytes: e.bytes,
        }
      }),
    )
  })
}

for (const c of vectors.lifecycle) {
  test(`lifecycle vector "${c.name}": encodeJsonRecord produces the golden bytes and reads them back`, () => {
    assert.equal(encodeJsonRecord(c.record).toString('hex'), c.hex)
    const r = decodeMessage(Buffer.from(c.hex, 'hex'), limits, {
      event: () => assert.fail('no events'),
      reject: () => assert.fail('no events'),
    })
    assert.ok(r.ok && r.kind === RECORD_KIND.RUN_LIFECYCLE)
    assert.deepEqual(r.ok && r.kind === RECORD_KIND.RUN_LIFECYCLE && r.record, c.record)
  })
}

for (const c of vectors.intervalHistogram) {
  test(
    `interval histogram vector "${c.name}": encodeIntervalHistogram produces the golden bytes and ` + `reads them back`,
    () => {
      assert.equal(encodeIntervalHistogram(c.record).toString('hex'), c.hex)
      const r = decodeMessage(Buffer.from(c.hex, 'hex'), limits, {
        event: () => assert.fail('no events'),
        reject: () => assert.fail('no events'),
      })
      assert.ok(r.ok && r.kind === RECORD_KIND.INTERVAL_HISTOGRAM, JSON.stringify(r))
      assert.deepEqual(r.record, { kind: RECORD_KIND.INTERVAL_HISTOGRAM, ...c.record })
    },
  )
}

test('an interval histogram without the intended section is the same bytes as before the section existed', () => {
  const plain = vectors.intervalHistogram.find((c) => c.record.intended === undefined)!
  const withSection = vectors.intervalHistogram.find(
    (c) => c.record.intended !== undefined && c.record.intended.length > 0,
  )!
  // The section is a suffix: tag 1, count, pairs. Cutting it leaves a valid measured-only record.
  const bytes = Buffer.from(withSection.hex, 'hex')
  const tagAt = bytes.length - (1 + 1 + withSection.record.intended!.length * 3)
  assert.equal(bytes[tagAt], 1)
  const r = decodeMessage(bytes.subarray(0, tagAt), limits, { event: () => assert.fail(), reject: () => assert.fail() })
  assert.ok(r.ok && r.kind === RECORD_KIND.INTERVAL_HISTOGRAM && r.record.intended === undefined)
  assert.ok(plain.hex.length > 0)
  // An unknown section tag is refused, not skipped.
  const bad = Buffer.from(bytes)
  bad[tagAt] = 2
  const rb = decodeMessage(bad, limits, { event: () => assert.fail(), reject: () => assert.fail() })
  assert.ok(!rb.ok && rb.reason === 'trailing_bytes', JSON.stringify(rb))
})
