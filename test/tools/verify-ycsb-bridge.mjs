#!/usr/bin/env node
// End-to-end check of the YCSB bridge (services/ycsb) against a real Kafka broker:
// real YCSB 0.17.0 runs through io.benchstream.ycsb.BenchstreamDB wrapping our Redis
// binding, the topic is read back and decoded with the TS codec
// (dist/services/core/codec/event-codec.js), and the per-(operation, status) counts must
// equal YCSB's own report (its `Return=` lines) exactly, and the 'end' record's `sent`.
//
//   npm run build && KAFKA_BROKERS=127.0.0.1:9092 REDIS_PORT=6379 node test/tools/verify-ycsb-bridge.mjs
//
// KAFKA_BROKERS: a running broker (e.g. deploy/local/kafka.sh start). REDIS_PORT: a
// running redis-server on 127.0.0.1 that may be flushed. Creates its own topic.
// Exit 0 when every phase matches, 1 otherwise.
import { execFileSync, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const { decodeMessage } = await import(path.join(root, 'dist/services/core/codec/event-codec.js'))
const { OPERATIONS, STATUSES, RECORD_KIND } = await import(path.join(root, 'dist/schemas/events.v1.js'))
const { Kafka, logLevel } = (await import('kafkajs')).default

const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean)
const redisPort = process.env.REDIS_PORT
if (brokers.length === 0 || !redisPort) {
  console.error('set KAFKA_BROKERS (a running broker) and REDIS_PORT (a running redis-server on 127.0.0.1)')
  process.exit(2)
}
const topic = `bs-ycsb-bridge-${randomUUID().slice(0, 8)}`
const runId = `ycsb-e2e-${Date.now().toString(36)}`
const kafka = new Kafka({ clientId: 'verify-ycsb-bridge', brokers, logLevel: logLevel.NOTHING })
const admin = kafka.admin()
await admin.connect()
await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 4, replicationFactor: 1 }] })
await admin.disconnect()

const cp = execFileSync('bash', [path.join(root, 'deploy/local/ycsb.sh'), 'classpath'], { encoding: 'utf8' }).trim()
execFileSync('redis-cli', ['-p', redisPort, 'flushall'])

/** Runs one YCSB client through the bridge; returns YCSB's report counts and the bridge's summary line. */
function ycsb(clientId, args) {
  const r = spawnSync(
    'java',
    [
      '-Xmx512m',
      '-cp',
      cp,
      'site.ycsb.Client',
      ...args,
      '-db',
      'io.benchstream.ycsb.BenchstreamDB',
      '-p',
      'benchstream.db=io.benchstream.ycsb.redis.RedisClient',
      '-p',
      'redis.host=127.0.0.1',
      '-p',
      `redis.port=${redisPort}`,
      '-p',
      `benchstream.brokers=${brokers.join(',')}`,
      '-p',
      `benchstream.topic=${topic}`,
      '-p',
      `benchstream.runid=${runId}`,
      '-p',
      `benchstream.clientid=${clientId}`,
      '-p',
      'benchstream.labels=check=e2e,binding=redis',
    ],
    { cwd: root, encoding: 'utf8' },
  )
  if (r.status !== 0) throw new Error(`YCSB ${clientId} exited ${r.status}:\n${r.stderr}`)
  const counts = {}
  const intended = {}
  for (const m of r.stdout.matchAll(/^\[([A-Z-]+)\], Return=([A-Z_]+), (\d+)$/gm)) {
    if (m[1] === 'CLEANUP') continue
    const status = m[2] === 'BATCHED_OK' ? 'OK' : m[2]
    counts[`${m[1]}/${status}`] = (counts[`${m[1]}/${status}`] ?? 0) + Number(m[3])
  }
  for (const m of r.stdout.matchAll(
    /^\[(Intended-)?(READ|UPDATE|INSERT|SCAN)\], (99thPercentileLatency\(us\)|Operations), (\d+)$/gm,
  )) {
    intended[`${m[1] ?? ''}${m[2]} ${m[3]}`] = Number(m[4])
  }
  const summary = r.stderr.split('\n').find((l) => l.startsWith('[BENCHSTREAM] run ')) ?? '(no summary line)'
  return { counts, report: intended, summary }
}

const phases = [
  ['load', ['-load', '-P', 'workloads/workloada', '-p', 'recordcount=1000', '-threads', '4']],
  [
    'run-a',
    ['-t', '-P', 'workloads/workloada', '-p', 'recordcount=1000', '-p', 'operationcount=5000', '-threads', '4'],
  ],
  [
    'run-e',
    ['-t', '-P', 'workloads/workloade', '-p', 'recordcount=1000', '-p', 'operationcount=5000', '-threads', '4'],
  ],
  [
    'run-a-target',
    [
      '-t',
      '-P',
      'workloads/workloada',
      '-p',
      'recordcount=1000',
      '-p',
      'operationcount=4000',
      '-threads',
      '4',
      '-target',
      '2000',
      '-p',
      'measurement.interval=both',
    ],
  ],
]
const ycsbSide = {}
for (const [clientId, args] of phases) {
  ycsbSide[clientId] = ycsb(clientId, args)
  console.log(`${String(clientId)}: YCSB ${JSON.stringify(ycsbSide[clientId].counts)}\n  ${ycsbSide[clientId].summary}`)
}

// Read everything back.
const seen = Object.fromEntries(
  phases.map(([c]) => [
    c,
    {
      counts: {},
      threads: new Set(),
      lifecycle: [],
      events: 0,
      intendedAbove: 0,
      latencies: {},
      intendeds: {},
      rejected: 0,
    },
  ]),
)
const consumer = kafka.consumer({ groupId: `verify-${randomUUID()}` })
await consumer.connect()
await consumer.subscribe({ topic, fromBeginning: true })
const limits = { minStartUs: Date.now() * 1000 - 3_600e6, maxStartUs: Date.now() * 1000 + 600e6 }
let lastMessageAt = Date.now()
await consumer.run({
  eachMessage: async ({ message }) => {
    lastMessageAt = Date.now()
    // The client id of a batch is known when decodeMessage returns: collect first.
    const batch = []
    let rejected = 0
    const r = decodeMessage(message.value, limits, { event: (e) => batch.push({ ...e }), reject: () => rejected++ })
    if (!r.ok) throw new Error(`undecodable message: ${r.reason} ${r.detail}`)
    if (r.kind === RECORD_KIND.RUN_LIFECYCLE) {
      seen[r.record.clientId].lifecycle.push(r.record)
      return
    }
    if (r.kind !== RECORD_KIND.OPS || r.runId !== runId) throw new Error(`unexpected message of kind ${r.kind}`)
    const s = seen[r.clientId]
    s.rejected += rejected
    for (const e of batch) {
      const op = OPERATIONS[e.opCode - 1]
      const key = `${op}/${STATUSES[e.statusIndex]}`
      s.counts[key] = (s.counts[key] ?? 0) + 1
      s.threads.add(e.thread)
      s.events++
      if (e.intendedUs > e.latencyUs) s.intendedAbove++
      ;(s.latencies[op] ??= []).push(e.latencyUs)
      ;(s.intendeds[op] ??= []).push(e.intendedUs)
    }
  },
})
const deadline = Date.now() + 60_000
while (Date.now() < deadline) {
  const ends = Object.values(seen).filter((s) => s.lifecycle.some((l) => l.phase === 'end')).length
  if (ends === phases.length && Date.now() - lastMessageAt > 3000) break
  await new Promise((r) => setTimeout(r, 250))
}
await consumer.disconnect()
const a = new Kafka({ clientId: 'verify-ycsb-bridge', brokers, logLevel: logLevel.NOTHING }).admin()
await a.connect()
await a.deleteTopics({ topics: [topic] }).catch(() => undefined)
await a.disconnect()

const pct = (xs, q) => {
  const s = [...xs].sort((x, y) => x - y)
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]
}
let ok = true
for (const [clientId] of phases) {
  const y = ycsbSide[clientId]
  const s = seen[clientId]
  const end = s.lifecycle.find((l) => l.phase === 'end')
  const start = s.lifecycle.find((l) => l.phase === 'start')
  const sorted = (o) => JSON.stringify(Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b))))
  const same = sorted(y.counts) === sorted(s.counts)
  const endSame = end !== undefined && sorted(end.sent) === sorted(s.counts) && end.undelivered === 0
  ok &&= same && endSame && start !== undefined && s.rejected === 0
  console.log(
    `${String(clientId)}: ${same ? 'MATCH' : 'MISMATCH'} decoded ${sorted(s.counts)} vs YCSB ${sorted(y.counts)}; ` +
      `end.sent ${end ? sorted(end.sent) : 'missing'} undelivered ${String(end?.undelivered)}; start ` +
      `${start ? 'yes' : 'missing'}; threads ${[...s.threads].sort((a, b) => a - b).join(',')}; rejected ` +
      `${s.rejected}; events with intended > latency ${s.intendedAbove}/${s.events}`,
  )
  for (const op of Object.keys(s.latencies)) {
    const yp = y.report[`${op} 99thPercentileLatency(us)`]
    const yi = y.report[`Intended-${op} 99thPercentileLatency(us)`]
    console.log(
      `  ${op}: p99 from events ${pct(s.latencies[op], 0.99)} µs (YCSB report ${yp ?? '-'}), intended ` +
        `p99 from events ${pct(s.intendeds[op], 0.99)} µs (YCSB Intended- report ${yi ?? '-'})`,
    )
  }
}
console.log(ok ? 'ALL MATCH' : 'MISMATCH')
process.exit(ok ? 0 : 1)
