#!/usr/bin/env node
// Writes schemas/test-vectors/events.v1.json: inputs and the exact message bytes
// the TypeScript codec (services/core/codec/ops-batch-writer.ts, record-encoders.ts) produces for them. Every
// other encoder of schemas/events.v1.ts (the Java YCSB bridge in services/ycsb)
// must produce the same bytes; test/unit/golden-vectors.test.ts and the bridge's
// GoldenVectorsTest check both sides.
//   npm run build && node test/tools/gen-event-vectors.mjs [--check]
// --check: exit 1 if the committed file differs from what the codec writes now.
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const { OpsBatchWriter } = await import(path.join(root, 'dist/services/core/codec/ops-batch-writer.js'))
const { encodeIntervalHistogram, encodeJsonRecord, opCodes } = await import(
  path.join(root, 'dist/services/core/codec/record-encoders.js')
)
const { RECORD_KIND, MAX_LATENCY_US, MAX_BYTES, MAX_THREAD, OPERATIONS, STATUSES } = await import(
  path.join(root, 'dist/schemas/events.v1.js')
)
const out = path.join(root, 'schemas/test-vectors/events.v1.json')

const T0 = 1_764_680_000_123_456 // µs since epoch, 2025-12-02
const ev = (thread, op, status, cache, startUs, latencyUs, intendedUs, bytes, note) => ({
  thread,
  op,
  status,
  cache,
  startUs,
  latencyUs,
  intendedUs,
  bytes,
  ...(note ? { note } : {}),
})

const opsCases = [
  {
    name: 'one event',
    runId: 'run-1',
    clientId: 'client-a',
    events: [ev(0, 'READ', 'OK', 'UNKNOWN', T0, 250, 250, 1000)],
  },
  {
    name: 'edge cases',
    runId: 'r',
    clientId: 'c',
    events: [
      ev(0, 'READ', 'OK', 'UNKNOWN', T0, 0, 0, 0, 'base: delta 0, all fields one byte'),
      ev(1, 'UPDATE', 'OK', 'HIT', T0 - 1, 1, 1, 100, 'negative delta -1: zigzag 1'),
      ev(2, 'INSERT', 'ERROR', 'MISS', T0 - 1_000_000, 127, 127, 127, 'negative delta -1 s: multi-byte zigzag'),
      ev(
        3,
        'SCAN',
        'NOT_FOUND',
        'UNKNOWN',
        T0 + 1,
        128,
        128,
        128,
        'positive delta 1: zigzag 2; 128 is the first two-byte varint',
      ),
      ev(
        127,
        'READ-MODIFY-WRITE',
        'NOT_IMPLEMENTED',
        'UNKNOWN',
        T0 + 63,
        16_383,
        16_383,
        16_383,
        'thread 127 (last one-byte); largest two-byte varint',
      ),
      ev(
        128,
        'DELETE',
        'UNEXPECTED_STATE',
        'UNKNOWN',
        T0 + 64,
        16_384,
        16_384,
        16_384,
        'thread 128 (two bytes); zigzag 128; three-byte varints',
      ),
      ev(
        MAX_THREAD,
        'READ',
        'BAD_REQUEST',
        'UNKNOWN',
        T0 + 3_600_000_000,
        MAX_LATENCY_US,
        MAX_LATENCY_US,
        MAX_BYTES,
        'max thread 65535 (three bytes), max latency, max bytes, delta +1 h',
      ),
      ev(
        5,
        'READ',
        'FORBIDDEN',
        'UNKNOWN',
        T0 - 3_600_000_000,
        100,
        5_000_100,
        0,
        'intended > latency (coordinated omission): 5 s queued, delta -1 h',
      ),
      ev(6, 'UPDATE', 'SERVICE_UNAVAILABLE', 'UNKNOWN', T0 + 2, 300, 300, 0, 'intended == latency (unthrottled)'),
      ev(7, 'UPDATE', 'TIMEOUT', 'UNKNOWN', T0 + 3, 2_000_000, 2_000_000, 0, 'last status index'),
    ],
  },
  {
    name: 'intended below latency is written as equal',
    runId: 'run-1',
    clientId: 'client-a',
    events: [
      ev(
        0,
        'READ',
        'OK',
        'UNKNOWN',
        T0,
        500,
        400,
        10,
        'the writer clamps intended - latency at 0; decodes with intendedUs = latencyUs',
      ),
    ],
    decodedIntendedUs: [500],
  },
  {
    name: 'longest ids',
    runId: 'R'.repeat(40) + '-0123456789._:-abcdefghijk'.slice(0, 24),
    clientId: 'host.example.com:client_01-' + 'x'.repeat(37),
    events: [
      ev(0, 'SCAN', 'OK', 'UNKNOWN', T0, 12_345, 12_345, 100_000),
      ev(1, 'INSERT', 'OK', 'UNKNOWN', T0 + 12_345, 1_234, 1_234, 1_000),
    ],
  },
]

const lifecycleCases = [
  {
    name: 'start',
    record: {
      kind: RECORD_KIND.RUN_LIFECYCLE,
      phase: 'start',
      atUs: T0,
      runId: 'run-1',
      clientId: 'client-a',
      labels: { system: 'redis', version: '7.0.15' },
      workload: 'workloada',
      binding: 'io.benchstream.ycsb.redis.RedisClient',
      threads: 8,
      target: 0,
    },
  },
  {
    name: 'end, with strings JSON.stringify escapes',
    record: {
      kind: RECORD_KIND.RUN_LIFECYCLE,
      phase: 'end',
      atUs: T0 + 61_000_000,
      runId: 'run-1',
      clientId: 'client-a',
      labels: {
        note:
          'quote " backslash \\ slash / newline \n tab \t cr \r bs \b ff \f ctl \u0001 \u001f del \u007f ' +
          'é € 😀 ls \u2028',
        empty: '',
      },
      workload: 'site.ycsb.workloads.CoreWorkload',
      binding: 'io.benchstream.ycsb.redis.RedisClient',
      threads: 65_535,
      target: 20_000,
      sent: { 'READ/OK': 2_500_000, 'UPDATE/OK': 2_499_999, 'UPDATE/ERROR': 1 },
      undelivered: 0,
      runtimeMs: 61_000,
    },
  },
  {
    name: "start of an experiment's run: group, repetition, expected clients, clock offset",
    record: {
      kind: RECORD_KIND.RUN_LIFECYCLE,
      phase: 'start',
      atUs: T0,
      runId: 'exp-base-workloada-2',
      clientId: 'agent-1',
      labels: { experiment: 'exp', setup: 'base' },
      workload: 'workloada',
      binding: 'io.benchstream.ycsb.hbase.HBaseClient',
      threads: 4,
      target: 500,
      group: 'exp-base-workloada',
      repeat: 2,
      expectedClients: 2,
      clockOffsetMs: -1.25,
    },
  },
  {
    name: "end of an experiment's run: the first operation's start",
    record: {
      kind: RECORD_KIND.RUN_LIFECYCLE,
      phase: 'end',
      atUs: T0 + 11_000_000,
      runId: 'exp-base-workloada-2',
      clientId: 'agent-1',
      labels: { experiment: 'exp', setup: 'base' },
      workload: 'workloada',
      binding: 'io.benchstream.ycsb.hbase.HBaseClient',
      threads: 4,
      target: 500,
      sent: { 'READ/OK': 2500, 'UPDATE/OK': 2500 },
      undelivered: 0,
      runtimeMs: 10_012,
      firstOpUs: T0 + 1_500_123,
    },
  },
]

// INTERVAL_HISTOGRAM (kind 2): written by import-ycsb only (TypeScript); the Java bridge sends OPS.
const intervalCases = [
  {
    name: 'measured only (intended = measured)',
    record: {
      runId: 'run-1',
      clientId: 'client-a',
      op: 'READ',
      status: 'OK',
      intervalStartUs: T0,
      intervalLengthUs: 1_000_000,
      buckets: [
        [0, 1],
        [127, 128],
        [255, 16_384],
        [3327, 1],
      ],
    },
  },
  {
    name: 'with the intended section (YCSB Intended- log of the same interval)',
    record: {
      runId: 'run-1',
      clientId: 'client-a',
      op: 'UPDATE',
      status: 'ERROR',
      intervalStartUs: T0 + 1_000_000,
      intervalLengthUs: 1_000_123,
      buckets: [
        [300, 2],
        [301, 3],
      ],
      intended: [
        [300, 1],
        [900, 4],
      ],
    },
  },
  {
    name: 'empty measured, empty intended',
    record: {
      runId: 'r',
      clientId: 'c',
      op: 'DELETE',
      status: 'TIMEOUT',
      intervalStartUs: T0,
      intervalLengthUs: 0,
      buckets: [],
      intended: [],
    },
  },
]

const hex = (b) => Buffer.from(b).toString('hex')
const vectors = {
  schema: 'schemas/events.v1.ts (version 1)',
  generatedBy:
    'node test/tools/gen-event-vectors.mjs (OpsBatchWriter of services/core/codec/ops-batch-writer.ts, ' +
    'encodeJsonRecord and encodeIntervalHistogram of services/core/codec/record-encoders.ts); do not edit by hand',
  ops: opsCases.map((c) => {
    const w = new OpsBatchWriter(c.runId, c.clientId)
    for (const e of c.events) {
      const [opCode, statusIndex, cacheIndex] = opCodes(e.op, e.status, e.cache)
      w.add(e.thread, opCode, cacheIndex, statusIndex, e.startUs, e.latencyUs, e.intendedUs, e.bytes)
    }
    return { ...c, hex: hex(w.finish()) }
  }),
  lifecycle: lifecycleCases.map((c) => ({ ...c, hex: hex(encodeJsonRecord(c.record)) })),
  intervalHistogram: intervalCases.map((c) => ({ ...c, hex: hex(encodeIntervalHistogram(c.record)) })),
}
// Sanity: the tables the vectors use are the schema's.
if (OPERATIONS.length !== 6 || STATUSES.length !== 9) throw new Error('schema tables changed: review the vectors')
const text = JSON.stringify(vectors, null, 2) + '\n'
if (process.argv.includes('--check')) {
  const now = readFileSync(out, 'utf8')
  if (now !== text) {
    console.error(
      `${path.relative(root, out)} differs from what the codec writes ` +
        `now; regenerate with node test/tools/gen-event-vectors.mjs`,
    )
    process.exit(1)
  }
  console.log(`${path.relative(root, out)} is up to date`)
} else {
  writeFileSync(out, text)
  console.log(
    `wrote ${path.relative(root, out)}: ${vectors.ops.length} OPS batches, ${vectors.lifecycle.length} ` +
      `lifecycle records, ${vectors.intervalHistogram.length} interval histograms`,
  )
}
