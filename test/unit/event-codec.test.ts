import assert from 'node:assert/strict'
import { test } from 'node:test'
import { MAX_LATENCY_US, RECORD_KIND } from '../../schemas/events.v1.js'
import type { DecodedOp, OpsVisitor, RejectReason } from '../../services/core/codec/decode-result.js'
import { decodeMessage } from '../../services/core/codec/event-codec.js'
import { OpsBatchWriter } from '../../services/core/codec/ops-batch-writer.js'
import { encodeIntervalHistogram, encodeJsonRecord, opCodes } from '../../services/core/codec/record-encoders.js'

const NOW = 1_764_680_000_000_000
const limits = { minStartUs: NOW - 86_400e6, maxStartUs: NOW + 600e6 }

function collect(): { events: DecodedOp[]; rejects: Array<[RejectReason, number]>; visitor: OpsVisitor } {
  const events: DecodedOp[] = []
  const rejects: Array<[RejectReason, number]> = []
  return { events, rejects, visitor: { event: (e) => events.push({ ...e }), reject: (r, i) => rejects.push([r, i]) } }
}

test('OPS batches round-trip every field, including out-of-order start times', () => {
  const w = new OpsBatchWriter('run-1', 'client-a')
  const input: DecodedOp[] = []
  for (let i = 0; i < 1000; i++) {
    const [opCode, statusIndex, cacheIndex] = opCodes(
      i % 3 === 0 ? 'UPDATE' : 'READ',
      i % 50 === 0 ? 'ERROR' : 'OK',
      i % 2 === 0 ? 'HIT' : 'MISS',
    )
    const e: DecodedOp = {
      thread: i % 17,
      opCode,
      statusIndex,
      cacheIndex,
      startUs: NOW + i * 37 - (i % 5) * 1000,
      latencyUs: (i * 7919) % 100_000,
      intendedUs: 0,
      bytes: i * 3,
    }
    e.intendedUs = e.latencyUs + (i % 4) * 10
    input.push(e)
    w.add(e.thread, e.opCode, e.cacheIndex, e.statusIndex, e.startUs, e.latencyUs, e.intendedUs, e.bytes)
  }
  const buf = w.finish()
  assert.ok(buf.length < 1000 * 14, `compact: ${buf.length} bytes for 1000 events`)
  const c = collect()
  const r = decodeMessage(buf, limits, c.visitor)
  assert.equal(r.ok, true)
  assert.ok(
    r.ok &&
      r.kind === RECORD_KIND.OPS &&
      r.runId === 'run-1' &&
      r.clientId === 'client-a' &&
      r.count === 1000 &&
      r.rejected === 0,
  )
  assert.deepEqual(c.events, input)
  // The writer is reusable after finish().
  w.add(1, 1, 0, 0, NOW, 5, 5, 0)
  assert.equal(w.finish().length > 0, true)
})

test("a full batch is a view of the writer's buffer, kept intact until recycled; then its memory is reused", () => {
  const w = new OpsBatchWriter('run-1', 'client-a', 4096)
  const fill = (n: number, lat: number): void => {
    for (let i = 0; i < n; i++) w.add(i % 3, 1, 0, 0, NOW + i * 10, lat, lat, 100)
  }
  const decoded = (b: Buffer): number[] => {
    const c = collect()
    const r = decodeMessage(b, limits, c.visitor)
    assert.ok(r.ok && r.kind === RECORD_KIND.OPS && r.rejected === 0)
    return c.events.map((e) => e.latencyUs)
  }
  // About 9 bytes an event: 400 fill more than half of 4 KiB.
  fill(400, 111)
  const first = w.finish()
  fill(400, 222)
  const second = w.finish()
  assert.ok(first.buffer !== second.buffer, 'not recycled: the next batch went to other memory')
  assert.deepEqual(decoded(first), Array(400).fill(111))
  w.recycle(first)
  w.recycle(first) // a second time is ignored: the memory is handed out once
  // The writer finishes the buffer it is in first, then takes the recycled one.
  const later: Buffer[] = []
  for (let i = 0; i < 3; i++) {
    fill(400, 300 + i)
    later.push(w.finish())
  }
  assert.equal(later.filter((b) => b.buffer === first.buffer).length, 1, 'recycled once, reused once')
  assert.deepEqual(decoded(second), Array(400).fill(222))
  for (const [i, b] of later.entries()) assert.deepEqual(decoded(b), Array(400).fill(300 + i))
  // A small batch is copied out: it holds its own bytes, not a buffer many times its size.
  fill(3, 555)
  const small = w.finish()
  assert.ok(small.buffer.byteLength < 4096 || small.byteOffset > 0, "a copy, not the writer's buffer")
  assert.deepEqual(decoded(small), [555, 555, 555])
  w.recycle(small) // not the writer's: ignored
  w.recycle(Buffer.alloc(10_000))
  fill(400, 666)
  assert.deepEqual(decoded(w.finish()), Array(400).fill(666))
})

test('structural problems reject the whole message with a named reason', () => {
  const w = new OpsBatchWriter('r', 'c')
  w.add(0, 1, 0, 0, NOW, 10, 10, 0)
  const good = w.finish()
  const cases: Array<[Buffer | null, RejectReason]> = [
    [null, 'empty_message'],
    [Buffer.alloc(0), 'empty_message'],
    [Buffer.from([0x42]), 'truncated'],
    [Buffer.from('{"json":"per event"}'), 'bad_magic'],
    [Buffer.concat([Buffer.from([0x42, 0x53, 9]), good.subarray(3)]), 'unknown_schema_version'],
    [Buffer.concat([Buffer.from([0x42, 0x53, 1, 77]), good.subarray(4)]), 'unknown_record_kind'],
    [good.subarray(0, good.length - 2), 'truncated'],
    [Buffer.concat([good, Buffer.from([1, 2, 3])]), 'trailing_bytes'],
  ]
  for (const [buf, reason] of cases) {
    const c = collect()
    const r = decodeMessage(buf, limits, c.visitor)
    assert.equal(r.ok, false)
    assert.equal(!r.ok && r.reason, reason)
    assert.equal(c.events.length, 0, 'no event of a rejected message is counted')
  }
})

test('value problems reject only the bad event', () => {
  const w = new OpsBatchWriter('r', 'c')
  w.add(0, 1, 0, 0, NOW, 10, 10, 0) // good
  w.add(0, 9, 0, 0, NOW, 10, 10, 0) // unknown op
  w.add(0, 1, 0, 0, NOW, MAX_LATENCY_US + 1, MAX_LATENCY_US + 1, 0) // absurd latency
  w.add(0, 1, 0, 0, NOW + 3600e6, 10, 10, 0) // an hour in the future
  w.add(0, 1, 0, 12, NOW, 10, 10, 0) // unknown status
  w.add(0, 2, 1, 0, NOW, 11, 11, 0) // good
  const c = collect()
  const r = decodeMessage(w.finish(), limits, c.visitor)
  assert.ok(r.ok && r.kind === RECORD_KIND.OPS && r.count === 6 && r.rejected === 4)
  assert.equal(c.events.length, 2)
  assert.deepEqual(c.rejects, [
    ['unknown_operation', 1],
    ['latency_out_of_range', 2],
    ['timestamp_out_of_range', 3],
    ['unknown_status', 4],
  ])
})

test('large and small batches decode alike; a broken tail rejects the message before any event is visited', () => {
  // 70,000 events take the two-pass path (more than the column scratch holds), 4,096 the single pass.
  for (const n of [4096, 70_000]) {
    const w = new OpsBatchWriter('r', 'c', 1 << 20)
    for (let i = 0; i < n; i++)
      w.add(i % 300, 1 + (i % 3), i % 3, i % 7 === 0 ? 1 : 0, NOW + i * 3, i % 5000, (i % 5000) + (i % 11), i)
    const buf = Buffer.from(w.finish())
    const c = collect()
    const r = decodeMessage(buf, limits, c.visitor)
    assert.ok(r.ok && r.kind === RECORD_KIND.OPS && r.count === n && r.rejected === 0)
    assert.equal(c.events.length, n)
    for (const i of [0, 1, n >> 1, n - 1]) {
      assert.deepEqual(c.events[i], {
        thread: i % 300,
        opCode: 1 + (i % 3),
        cacheIndex: i % 3,
        statusIndex: i % 7 === 0 ? 1 : 0,
        startUs: NOW + i * 3,
        latencyUs: i % 5000,
        intendedUs: (i % 5000) + (i % 11),
        bytes: i,
      })
    }
    for (const broken of [buf.subarray(0, buf.length - 1), Buffer.concat([buf, Buffer.from([0x80])])]) {
      const b = collect()
      const br = decodeMessage(broken, limits, b.visitor)
      assert.equal(br.ok, false)
      assert.equal(b.events.length + b.rejects.length, 0, `${n} events: nothing visited from a broken message`)
    }
  }
})

test('interval histograms and JSON records decode', () => {
  const h = encodeIntervalHistogram({
    runId: 'r',
    clientId: 'c',
    op: 'SCAN',
    status: 'OK',
    intervalStartUs: NOW,
    intervalLengthUs: 1_000_000,
    buckets: [
      [10, 5],
      [300, 2],
    ],
  })
  const r = decodeMessage(h, limits, collect().visitor)
  assert.ok(r.ok && r.kind === RECORD_KIND.INTERVAL_HISTOGRAM)
  assert.deepEqual(r.ok && r.kind === RECORD_KIND.INTERVAL_HISTOGRAM && r.record.buckets, [
    [10, 5],
    [300, 2],
  ])
  const l = encodeJsonRecord({
    kind: RECORD_KIND.RUN_LIFECYCLE,
    phase: 'end',
    runId: 'r',
    clientId: 'c',
    atUs: NOW,
    labels: { v: '1' },
    workload: 'w',
    binding: 'memory',
    threads: 2,
    target: 0,
    sent: { 'READ/OK': 5 },
  })
  const lr = decodeMessage(l, limits, collect().visitor)
  assert.ok(lr.ok && lr.kind === RECORD_KIND.RUN_LIFECYCLE && lr.record.sent?.['READ/OK'] === 5)
  const bad = decodeMessage(
    Buffer.concat([Buffer.from([0x42, 0x53, 1, 3]), Buffer.from('{nope')]),
    limits,
    collect().visitor,
  )
  assert.equal(!bad.ok && bad.reason, 'invalid_json')
})

test('random bytes never throw and never yield events silently', () => {
  let seed = 7
  const rnd = (): number => (seed = (seed * 48271) % 2147483647) / 2147483647
  for (let i = 0; i < 20_000; i++) {
    const len = Math.floor(rnd() * 64)
    const buf = Buffer.alloc(len)
    for (let j = 0; j < len; j++) buf[j] = Math.floor(rnd() * 256)
    if (len > 3 && i % 2 === 0) {
      buf[0] = 0x42
      buf[1] = 0x53
      buf[2] = 1
      buf[3] = 1 + (i % 4)
    }
    const c = collect()
    const r = decodeMessage(buf, limits, c.visitor)
    if (!r.ok) assert.equal(c.events.length, 0)
    else if (r.kind === RECORD_KIND.OPS) assert.equal(c.events.length + c.rejects.length, r.count)
  }
})

test('every field of a JSON record is range-checked at decode time: poison records are rejected with a reason', () => {
  const json = (kind: 3 | 4, body: unknown): Buffer =>
    Buffer.concat([Buffer.from([0x42, 0x53, 1, kind]), Buffer.from(JSON.stringify(body))])
  const good = {
    phase: 'start',
    runId: 'r',
    clientId: 'c',
    atUs: NOW,
    labels: { v: '1' },
    workload: 'w',
    binding: 'memory',
    threads: 2,
    target: 0,
  }
  const reason = (b: Buffer): string => {
    const r = decodeMessage(b, limits, collect().visitor)
    return r.ok ? 'ok' : `${r.reason}: ${r.detail}`
  }
  assert.equal(reason(json(3, good)), 'ok')
  // The poison record that once stopped ingestion: a finite atUs no DateTime64 can hold.
  assert.match(
    reason(json(3, { ...good, atUs: 1e300 })),
    /^timestamp_out_of_range: atUs 1e\+300 is outside the accepted event-time range/,
  )
  assert.match(reason(json(3, { ...good, atUs: NOW - 2 * 86_400e6 })), /^timestamp_out_of_range/)
  assert.match(reason(json(3, { ...good, atUs: 'soon' })), /^invalid_record: atUs: got "soon"/)
  assert.match(
    reason(json(3, { ...good, phase: 'middle' })),
    /^invalid_record: phase: got "middle"; allowed: start or end/,
  )
  assert.match(reason(json(3, { ...good, runId: 'a b' })), /^invalid_record: runId: got "a b"/)
  assert.match(
    reason(json(3, { ...good, workload: 'x'.repeat(1025) })),
    /^invalid_record: workload: got "x{10}.*allowed: workload name, at most 1024 characters/,
  )
  assert.match(reason(json(3, { ...good, threads: -1 })), /^invalid_record: threads/)
  assert.match(
    reason(json(3, { ...good, labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) })),
    /^invalid_record: labels/,
  )
  assert.match(reason(json(3, { ...good, sent: { 'READ/OK': -5 } })), /^invalid_record: sent\.READ\/OK/)
  assert.match(reason(json(3, { ...good, sent: { 'READ/OK': 1e300 } })), /^invalid_record: sent\.READ\/OK/)
  assert.match(
    reason(json(4, { runId: 'r', clientId: 'c', atUs: NOW, source: 'redis', values: { hits: 'many' } })),
    /^invalid_record: values\.hits/,
  )
  assert.match(
    reason(
      json(4, {
        runId: 'r',
        clientId: 'c',
        atUs: NOW,
        source: 'redis',
        values: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`m${i}`, i])),
      }),
    ),
    /^invalid_record: values/,
  )
  // A megabyte of text is refused before it is parsed.
  assert.match(
    reason(json(3, { ...good, workload: 'x'.repeat(1024 * 1024) })),
    /^record_too_large: a run lifecycle record of \d+ bytes; at most 262144/,
  )
})

test('interval histograms are bounded: interval length, bucket count and operations per interval', () => {
  const h = (o: Partial<{ intervalLengthUs: number; buckets: Array<[number, number]> }>): string => {
    const r = decodeMessage(
      encodeIntervalHistogram({
        runId: 'r',
        clientId: 'c',
        op: 'READ',
        status: 'OK',
        intervalStartUs: NOW,
        intervalLengthUs: 1e6,
        buckets: [[1, 1]],
        ...o,
      }),
      limits,
      collect().visitor,
    )
    return r.ok ? 'ok' : `${r.reason}: ${r.detail}`
  }
  assert.equal(h({}), 'ok')
  assert.match(h({ intervalLengthUs: 2 * 86_400e6 }), /^invalid_histogram: interval of 172800000000 µs; at most/)
  assert.match(
    h({
      buckets: [
        [5, 9e11],
        [6, 2e11],
      ],
    }),
    /^invalid_histogram: more than 1000000000000 operations in one interval/,
  )
  assert.match(h({ buckets: [[4000, 1]] }), /^invalid_histogram: bucket index 4000/)
})

test('SUMMARY_REPORT records decode, and measurements that contradict themselves are dead-lettered', () => {
  const record = {
    kind: RECORD_KIND.SUMMARY_REPORT,
    runId: 'old-run',
    clientId: 'node1',
    atUs: NOW,
    source: 'report.txt',
    format: 'text' as const,
    runtimeMs: 10_110,
    throughputOpsPerSec: 98.9,
    measurements: [
      {
        name: 'READ',
        kind: 'operation' as const,
        op: 'READ',
        latency: 'measured' as const,
        status: 'OK' as const,
        operations: 500,
        averageUs: 420.5,
        minUs: 120,
        maxUs: 9000,
        percentiles: [
          { percentile: 95, valueUs: 800, unit: 'us' as const },
          { percentile: 99, valueUs: 2000, unit: 'ms' as const },
        ],
        returns: { OK: 500 },
      },
      {
        name: 'CLEANUP',
        kind: 'cleanup' as const,
        op: '',
        latency: 'measured' as const,
        status: 'OK' as const,
        operations: 1,
        percentiles: [],
        returns: {},
      },
    ],
  }
  const r = decodeMessage(encodeJsonRecord(record), limits, collect().visitor)
  assert.ok(r.ok && r.kind === RECORD_KIND.SUMMARY_REPORT, JSON.stringify(r))
  assert.deepEqual(r.record, record)
  const wrongOp = decodeMessage(
    encodeJsonRecord({ ...record, measurements: [{ ...record.measurements[0]!, op: 'FLY' }] }),
    limits,
    collect().visitor,
  )
  assert.ok(
    !wrongOp.ok && wrongOp.reason === 'invalid_record' && wrongOp.detail.includes('FLY'),
    JSON.stringify(wrongOp),
  )
  const old = decodeMessage(encodeJsonRecord({ ...record, atUs: NOW - 2 * 86_400e6 }), limits, collect().visitor)
  assert.ok(!old.ok && old.reason === 'timestamp_out_of_range')
  const negative = decodeMessage(
    encodeJsonRecord({ ...record, measurements: [{ ...record.measurements[0]!, operations: -1 }] }),
    limits,
    collect().visitor,
  )
  assert.ok(!negative.ok && negative.reason === 'invalid_record')
})
