/**
 * Kafka over TLS and SASL (SCRAM-SHA-512), against a broker of this file's
 * own whose only client listener is SASL_SSL (deploy/local/kafka.sh,
 * KAFKA_LISTENER_PROTOCOL=SASL_SSL), with a CA and certificate made here
 * by openssl and SCRAM users created when its storage is formatted. The
 * server, a driver (`benchstream run`), the experiments' control topic and
 * real YCSB through the bridge (`benchstream ycsb`, kafka-clients) all reach
 * it from the environment alone; a wrong password is refused at once with
 * an error that says so; nothing is spoken in clear text; the password is in
 * no log and in nothing stored with a run.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { after, before, test } from 'node:test'
import tls from 'node:tls'
import { Kafka, logLevel } from 'kafkajs'
import { pino } from 'pino'
import type { ControlMessage } from '../../schemas/experiment-control.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { KafkaControlBus } from '../../services/adapters/kafka/control-bus.js'
import { runYcsb } from '../../services/cli/ycsb.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer, type Server } from '../../services/server/main.js'
import { SCRAM_USERS, startSecureBroker, type SecureBroker } from '../helpers/secure-kafka.js'
import { testEnv, waitFor, type TestEnv } from '../helpers/env.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')
const PASSWORD = SCRAM_USERS.bench

interface Ran {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

function cli(env: Record<string, string>, args: readonly string[]): Promise<Ran> {
  const t0 = Date.now()
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: repoRoot(),
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }))
  })
}

let broker: SecureBroker
let te: TestEnv
let svc: Server
const serverLog: string[] = []

before(async () => {
  broker = await startSecureBroker()
  te = testEnv({
    KAFKA_BROKERS: broker.brokers,
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
    KAFKA_SASL_USERNAME: 'bench',
    KAFKA_SASL_PASSWORD: PASSWORD,
    KAFKA_SSL_CA_FILE: broker.ca.caFile,
  })
  const log = pino(
    { name: 'benchstream-server', level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        serverLog.push(chunk.toString())
        done()
      },
    }),
  )
  svc = await startServer(te.env, { api: true, log })
})

after(async () => {
  await svc?.stop()
  te?.cleanup()
  broker?.stop()
})

const runArgs = (runId: string, clientId: string, ops: number): string[] => [
  'run',
  '-P',
  'workloads/workloada',
  '-p',
  'recordcount=500',
  '-p',
  `operationcount=${ops}`,
  '-threads',
  '2',
  '-db',
  'memory',
  '--run-id',
  runId,
  '--client-id',
  clientId,
]

async function countedByClient(runId: string): Promise<Record<string, number>> {
  const rows = await queryRows<{ client_id: string; n: string }>(
    svc.ch,
    `SELECT client_id, sum(count) AS n FROM ${svc.ch.database}.op_windows WHERE run_id = {runId:String} ` +
      `GROUP BY client_id`,
    { runId },
  )
  return Object.fromEntries(rows.map((r) => [r.client_id, Number(r.n)]))
}

test('only TLS listens: a plaintext client gets no Kafka answer, a TLS client with the CA verifies it', async () => {
  // Every listener of the broker is TLS: SASL_SSL for clients and brokers, SSL for the controllers.
  const map = /^listener\.security\.protocol\.map=(.*)$/m.exec(broker.config())?.[1] ?? ''
  assert.deepEqual(map.split(',').sort(), ['CONTROLLER:SSL', 'SASL_SSL:SASL_SSL'])
  assert.match(broker.config(), /^listeners=SASL_SSL:\/\/127\.0\.0\.1:\d+,CONTROLLER:\/\/127\.0\.0\.1:\d+$/m)
  // A plaintext Kafka client on the port: refused, quickly (no retries here), never answered.
  const plain = new Kafka({
    clientId: 'plaintext',
    brokers: [broker.brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    retry: { retries: 0 },
  }).admin()
  await assert.rejects(plain.connect())
  // The same port completes a TLS handshake against the test's CA, for 127.0.0.1.
  const authorized = await new Promise<boolean>((resolve, reject) => {
    const s = tls.connect(
      { host: '127.0.0.1', port: broker.port, ca: readFileSync(broker.ca.caFile), servername: undefined },
      () => {
        resolve(s.authorized)
        s.end()
      },
    )
    s.once('error', reject)
  })
  assert.equal(authorized, true)
})

test('a driver run over SASL_SSL is counted exactly; the password is in no log, nor stored with the run', async () => {
  const runId = `secure-${Date.now()}`
  const r = await cli(te.env, runArgs(runId, 'c1', 20_000))
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^\[BENCHSTREAM\], EventsDelivered, 20000$/m)
  assert.match(r.stdout, /^\[BENCHSTREAM\], EventsUndelivered, 0$/m)
  await waitFor('the run counted', async () => ((await countedByClient(runId)).c1 === 20_000 ? true : undefined))
  await waitFor('its end record', async () => {
    const [row] = await queryRows<{ ended: string }>(
      svc.ch,
      `SELECT clients_ended AS ended FROM ${svc.ch.database}.runs WHERE run_id = {runId:String}`,
      { runId },
    )
    return Number(row?.ended) === 1 ? true : undefined
  })
  assert.deepEqual(await countedByClient(runId), { c1: 20_000 })
  // Secrets: not in the driver's output, the server's log (debug level), or anything stored for the run.
  assert.ok(!r.stdout.includes(PASSWORD) && !r.stderr.includes(PASSWORD), 'not in the driver output')
  assert.ok(serverLog.length > 0)
  assert.ok(!serverLog.join('').includes(PASSWORD), "not in the server's log")
  const stored = await queryRows<Record<string, unknown>>(
    svc.ch,
    `SELECT * FROM ${svc.ch.database}.run_clients WHERE run_id = {runId:String}`,
    { runId },
  )
  assert.ok(stored.length > 0)
  assert.ok(!JSON.stringify(stored).includes(PASSWORD), 'not in the start or end record')
  const status = await svc.api!.inject({ method: 'GET', url: '/healthz' })
  assert.ok(!status.body.includes(PASSWORD), 'not in /healthz')
})

test('a wrong password is refused at once with BS_ERR_KAFKA naming authentication', async () => {
  const wrong = 'not-the-password'
  const r = await cli({ ...te.env, KAFKA_SASL_PASSWORD: wrong }, runArgs(`secure-wrong-${Date.now()}`, 'c1', 100))
  assert.notEqual(r.code, 0)
  assert.match(r.stderr, /BS_ERR_KAFKA/)
  assert.match(r.stderr, /authentication failed for user "bench" with SCRAM-SHA-512/)
  assert.ok(!r.stderr.includes(wrong), 'the password is not repeated in the error')
  // Refused, not retried until a deadline: well under the 60 s topic set-up deadline (process start included).
  assert.ok(r.ms < 30_000, `refused after ${r.ms} ms`)
})

test("the experiments' control topic over SASL_SSL", async () => {
  const infra = readInfraConfig(te.env)
  const a = KafkaControlBus.create(infra.kafka, infra.topics.control, 'secure-a', infra.topics)
  const b = KafkaControlBus.create(infra.kafka, infra.topics.control, 'secure-b', infra.topics)
  try {
    const got: ControlMessage[] = []
    await a.start({ onMessage: () => undefined })
    await b.start({ onMessage: (m) => got.push(m) })
    const sent: ControlMessage = {
      type: 'cancel',
      sentAtMs: Date.now(),
      experiment: 'secure-exp',
      assignments: ['a1'],
      reason: 'a test',
    }
    const published = await a.publish(sent)
    assert.ok(published.brokerTimeMs !== undefined && published.brokerTimeMs > 0, 'stamped by the broker')
    await waitFor('the message on the other side', async () => (got.length > 0 ? true : undefined), 30_000)
    assert.deepEqual(got[0], sent)
  } finally {
    await a.close()
    await b.close()
  }
})

test('real YCSB through the bridge (kafka-clients) over SASL_SSL, counted exactly', async () => {
  const runId = `secure-ycsb-${Date.now()}`
  let err = ''
  const ran = await runYcsb(
    [
      '--run-id',
      runId,
      '--client-id',
      'y1',
      '--report-wait',
      '60',
      '--',
      'run',
      '-db',
      'basic',
      '-P',
      path.join(repoRoot(), 'workloads', 'workloada'),
      '-p',
      'basicdb.verbose=false',
      '-p',
      'recordcount=100',
      '-p',
      'operationcount=3000',
      '-threads',
      '2',
    ],
    te.env,
    () => undefined,
    (s) => (err += s),
  )
  assert.equal(ran.exitCode, 0, err.slice(-3000))
  assert.equal(ran.merged?.operations, 3000)
  assert.deepEqual(await countedByClient(runId), { y1: 3000 })
  // YCSB prints its command line and kafka-clients its configuration: neither shows the password.
  assert.ok(!err.includes(PASSWORD) && !ran.ycsbStdout.includes(PASSWORD))
})
