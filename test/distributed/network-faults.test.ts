/**
 * Experiments across a network, under faults of the network (npm run
 * test:distributed; root, about 8 minutes). Every process that would run on
 * a machine of its own runs in a network namespace of its own, on one bridge
 * (deploy/local/netns.sh): three Kafka brokers (a KRaft cluster advertising
 * their bridge addresses, deploy/local/kafka.sh KAFKA_HOSTS/KAFKA_NETNS), the
 * agents with their clients, the coordinator, a Redis server. The server
 * (processor, API, embedded ClickHouse) runs in this process, on this
 * machine's side of the bridge, as the backend next to Kafka would.
 *
 * The links of the agents and the coordinator have round trips of about 1, 20
 * and 50 ms with jitter (Toxiproxy relays their connections to the brokers
 * and the API: this kernel has no netem). A link is cut with iptables DROP
 * inside the namespace: a partition, never a process death.
 *
 * Asserted, and printed:
 *  - clocks: an agent whose clock libfaketime really shifts +30 ms is accepted,
 *    its offset measured within half its round trip, and the start skew of the
 *    runs it takes part in is small on the broker's clock; one shifted +2 s is
 *    refused with its offset named;
 *  - the memory-ab example end to end, one agent's link cut for 10 s mid-run
 *    and healed: that run is incomplete and retried, the comparison holds
 *    complete runs only and finds the scans, and the late events of the cut
 *    run change no compared run;
 *  - the coordinator's link cut for 10 s mid-run and healed: the plan goes on,
 *    and no run is run twice;
 *  - an agent cut off from the brokers while it still reaches its datastore
 *    (Redis): its client works on, the run is incomplete and retried;
 *  - the broker leading a partition of the events topic isolated from the
 *    other brokers (controller quorum included), not killed: leadership moves,
 *    the drivers go on, every event counted exactly once.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'

import os from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer, type Server } from '../../services/server/main.js'
import { testEnv, waitFor, type TestEnv } from '../helpers/env.js'
import { Network } from '../helpers/netns.js'
import { Toxiproxy, type Link } from '../helpers/toxiproxy.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')
const KAFKA_SH = path.join(repoRoot(), 'deploy', 'local', 'kafka.sh')
/** This tier's network and ports (19500-19599; the proxies listen on the bridge address only). */
const PREFIX = process.env.TEST_NETNS_PREFIX ?? 'bsdt'
const SUBNET = process.env.TEST_NETNS_SUBNET ?? '10.213.50'
const KAFKA_PORT = 19501
const TOXIPROXY_PORT = 19590
const BROKERS = ['k1', 'k2', 'k3'] as const
/** Each client host: its last octet, its link, and the index of its proxies' ports (19510 + 10 * i + endpoint). */
const CLIENT_HOSTS = {
  co: { host: 10, link: { rttMs: 20, jitterMs: 2 }, i: 0 },
  a1: { host: 11, link: { rttMs: 1, jitterMs: 1 }, i: 1 },
  a2: { host: 12, link: { rttMs: 20, jitterMs: 2 }, i: 2 },
  a3: { host: 13, link: { rttMs: 50, jitterMs: 5 }, i: 3 },
  far: { host: 14, link: { rttMs: 20, jitterMs: 2 }, i: 4 },
} as const satisfies Record<string, { host: number; link: Link; i: number }>
type ClientHost = keyof typeof CLIENT_HOSTS
/** How long a link stays cut. */
const CUT_MS = 10_000
const REDIS_PORT = 19580

const net0 = new Network(PREFIX, SUBNET)
let kafkaEnv: Record<string, string> = {}
let brokerList = ''
let toxi: Toxiproxy | undefined
let te: TestEnv
let svc: Server
/** Everything the processes of the test see: topics, brokers, the API (through the coordinator's link). */
let env: Record<string, string>
const procs = new Set<ChildProcess>()
/** The server's log lines (JSON): its Kafka outages and how long they lasted. */
const serverLog: string[] = []

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

function brokerAddr(i: number): string {
  return `${net0.addr(BROKERS[i]!)}:${KAFKA_PORT + i}`
}

function kafkaSh(...args: string[]): string {
  const r = spawnSync('bash', [KAFKA_SH, ...args], { env: { ...process.env, ...kafkaEnv }, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`kafka.sh ${args.join(' ')} failed: ${r.stderr}${r.stdout}`)
  return r.stdout.trim()
}

function libfaketime(): string {
  for (const dir of ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib'])
    if (existsSync(`${dir}/faketime/libfaketime.so.1`)) return `${dir}/faketime/libfaketime.so.1`
  throw new Error('libfaketime not found: deploy/local/distributed-deps.sh installs the Debian package faketime')
}

/** A process in a host's namespace, its output kept; killed when the test file ends. */
function spawnIn(
  host: string,
  argv: string[],
  extraEnv: Record<string, string> = {},
): { proc: ChildProcess; out: string[]; done: Promise<number | null> } {
  const [cmd, ...args] = net0.exec(host, argv)
  const proc = spawn(cmd!, args, { env: { ...process.env, ...env, ...extraEnv }, cwd: repoRoot() })
  procs.add(proc)
  const out: string[] = []
  for (const s of [proc.stdout, proc.stderr])
    s.on('data', (d: Buffer) => {
      out.push(d.toString())
      if (out.length > 5000) out.splice(0, 1000)
    })
  const done = new Promise<number | null>((resolve) =>
    proc.on('close', (code) => {
      procs.delete(proc)
      resolve(code)
    }),
  )
  return { proc, out, done }
}

interface Agent {
  name: string
  proc: ChildProcess
  out: string[]
}

/** `benchstream agent` on a client host; `shiftS` moves its clock (and its clients') with libfaketime. */
async function startAgent(host: ClientHost, shiftS?: string, args: string[] = []): Promise<Agent> {
  const faked =
    shiftS === undefined
      ? []
      : ['env', `LD_PRELOAD=${libfaketime()}`, `FAKETIME=${shiftS}`, 'FAKETIME_DONT_FAKE_MONOTONIC=1', 'LC_ALL=C']
  const p = spawnIn(host, [...faked, process.execPath, BIN, 'agent', '--name', host, '--heartbeat-ms', '500', ...args])
  const agent = { name: host, proc: p.proc, out: p.out }
  await waitFor(
    `agent ${host} registered`,
    async () => {
      if (p.proc.exitCode !== null) throw new Error(`agent ${host} exited: ${p.out.join('')}`)
      return p.out.join('').includes('registered') ? true : undefined
    },
    90_000,
  )
  return agent
}

async function stopAgents(agents: Agent[]): Promise<void> {
  for (const a of agents) a.proc.kill('SIGTERM')
  await Promise.all(
    agents.map(
      (a) =>
        new Promise<void>((resolve) => {
          if (a.proc.exitCode !== null || a.proc.signalCode !== null) resolve()
          else a.proc.once('close', () => resolve())
        }),
    ),
  )
}

/** The agent's clock at registration, as it logged it: offset and half the round trip, ms. */
function registeredClock(a: Agent): { offsetMs: number; halfRttMs: number } {
  const m = /clock offset from the broker (-?[\d.]+) ms \(±([\d.]+)\)/.exec(a.out.join(''))
  assert.ok(m !== null, `agent ${a.name} logged no clock: ${a.out.join('').slice(-2000)}`)
  return { offsetMs: Number(m[1]), halfRttMs: Number(m[2]) }
}

/** `benchstream experiment ARGS` on the coordinator's host. */
function coordinator(args: string[]): { proc: ChildProcess; out: string[]; done: Promise<number | null> } {
  return spawnIn('co', [process.execPath, BIN, 'experiment', ...args])
}

async function experiment(id: string): Promise<ExperimentState | undefined> {
  const r = await svc.api!.inject({ method: 'GET', url: `/api/v1/experiments/${id}` })
  return r.statusCode === 200 ? r.json<ExperimentState>() : undefined
}

async function runInfo(runId: string): Promise<RunInfo | undefined> {
  const [r] = await queryRows<RunInfo>(svc.ch, 'SELECT * FROM benchstream.runs WHERE run_id = {r:String}', {
    r: runId,
  })
  return r
}

/** Events of a run in ClickHouse, exactly (the raw events). */
async function counted(runId: string): Promise<number> {
  const [r] = await queryRows<{ n: string }>(
    svc.ch,
    'SELECT count() AS n FROM benchstream.ops WHERE run_id = {r:String}',
    { r: runId },
  )
  return Number(r!.n)
}

function planFile(name: string, plan: Record<string, unknown>): string {
  const f = path.join(te.dataDir, `${name}.json`)
  writeFileSync(f, JSON.stringify({ version: 1, name, binding: 'memory', ...plan }))
  return f
}

type Coordinator = ReturnType<typeof coordinator>

/** Waits until attempt `a` of cell `c` has every client started, and returns it. */
async function runGoing(
  coord: Coordinator,
  id: string,
  c: number,
  a = 0,
): Promise<ExperimentState['cells'][number]['attempts'][number]> {
  try {
    return await waitFor(
      `run ${c} of ${id} going`,
      async () => {
        if (coord.proc.exitCode !== null) throw new Error('the coordinator exited')
        const at = (await experiment(id))?.cells[c]?.attempts[a]
        return at?.state === 'running' && at.clients.every((x) => x.state === 'started') ? at : undefined
      },
      // Runs before it take a minute each on a 2-core machine loaded to 40 (a driver's start, the barrier, 2 s).
      600_000,
      100,
    )
  } catch (err) {
    throw new Error(`${(err as Error).message}; the coordinator said:\n${coord.out.join('').slice(-4000)}`)
  }
}

/** Complete attempts: counted = sent = what the drivers reported, every client ended, in ClickHouse too. */
async function assertExact(s: ExperimentState, clients: number): Promise<void> {
  for (const a of s.cells.flatMap((c) => c.attempts.filter((x) => x.state === 'done'))) {
    assert.equal(a.counted, a.sent, `${a.runId}: counted ${a.counted} of ${a.sent}`)
    assert.equal(
      a.clients.reduce((n, x) => n + (x.operations ?? 0), 0),
      a.counted,
      `${a.runId}: the drivers' own reports`,
    )
    assert.equal(await counted(a.runId), a.counted, `${a.runId}: raw events in ClickHouse`)
    const r = (await runInfo(a.runId))!
    assert.deepEqual([r.clients, r.clients_ended, r.expected_clients], [clients, clients, clients], a.runId)
  }
}

/** What the after hook does, synchronously: on SIGINT/SIGTERM no hook runs, and nothing may stay behind. */
function teardownNow(): void {
  for (const p of procs) p.kill('SIGKILL')
  toxi?.stop()
  // The brokers, agents, coordinator and Redis live in the namespaces: removing them kills them.
  net0.down()
  if (kafkaEnv.KAFKA_DATA_DIR !== undefined) rmSync(kafkaEnv.KAFKA_DATA_DIR, { recursive: true, force: true })
}

before(async () => {
  assert.equal(process.getuid?.(), 0, 'the distributed tier needs root: network namespaces, veth links, iptables')
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      teardownNow()
      process.kill(process.pid, sig)
    })
  net0.up({
    ...Object.fromEntries(Object.entries(CLIENT_HOSTS).map(([n, h]) => [n, h.host])),
    k1: 21,
    k2: 22,
    k3: 23,
    db: 31,
  })
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-kafka-netns-'))
  kafkaEnv = {
    KAFKA_PORT: String(KAFKA_PORT),
    KAFKA_DATA_DIR: dataDir,
    KAFKA_BROKERS_COUNT: '3',
    KAFKA_HOSTS: BROKERS.map((b) => net0.addr(b)).join(','),
    KAFKA_NETNS: BROKERS.map((b) => net0.ns(b)).join(','),
    KAFKA_HEAP: '-Xmx384m -Xms192m',
    KAFKA_STOP_TIMEOUT: '10',
    KAFKA_START_TIMEOUT: '120',
  }
  if (process.env.TEST_KAFKA_VERSION) kafkaEnv.KAFKA_VERSION = process.env.TEST_KAFKA_VERSION
  process.stdout.write(`# ${kafkaSh('start').split('\n').at(-1)}\n`)
  brokerList = kafkaSh('brokers')
  process.once('exit', () => rmSync(dataDir, { recursive: true, force: true }))

  toxi = await Toxiproxy.start(TOXIPROXY_PORT)
  te = testEnv({
    KAFKA_BROKERS: brokerList,
    BENCHSTREAM_TOPIC_PARTITIONS: '3',
    FLUSH_INTERVAL_MS: '300',
    // The coordinator reaches the API (on the loopback) through its link's relay on the bridge address.
    API_ALLOWED_HOSTS: net0.gateway,
  })
  const log = pino(
    { name: 'benchstream-server', level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        serverLog.push(chunk.toString())
        done()
      },
    }),
  )
  svc = await startServer(te.env, { api: true, log })
  const apiPort = new URL(svc.apiUrl!).port
  // Every client host's connections to a broker (and the coordinator's to the API) go through its link's relay.
  for (const [name, h] of Object.entries(CLIENT_HOSTS)) {
    for (const [i] of BROKERS.entries()) {
      const relay = `${net0.gateway}:${19510 + 10 * h.i + i + 1}`
      await toxi.proxy(`${name}-k${i + 1}`, relay, brokerAddr(i), h.link)
      net0.steer(name, brokerAddr(i), relay)
    }
  }
  const apiRelay = `${net0.gateway}:${19510 + 10 * CLIENT_HOSTS.co.i + 4}`
  await toxi.proxy('co-api', apiRelay, `127.0.0.1:${apiPort}`, CLIENT_HOSTS.co.link)
  env = { ...te.env, BENCHSTREAM_API_URL: `http://${apiRelay}` }
  delete env.API_PORT
})

after(async () => {
  for (const p of procs) p.kill('SIGKILL')
  await svc?.stop()
  te?.cleanup()
  toxi?.stop()
  if (kafkaEnv.KAFKA_DATA_DIR !== undefined) {
    try {
      kafkaSh('stop')
    } catch (err) {
      process.stderr.write(`# ${(err as Error).message}\n`)
    }
  }
  net0.down()
})

test('an agent whose clock is really 2 s ahead (libfaketime) is refused with its offset named', async () => {
  const far = await startAgent('far', '+2')
  try {
    const c = coordinator([
      'run',
      planFile('clock-far', {
        clients: ['far'],
        seconds: 1,
        repetitions: 1,
        agentWaitS: 5,
        workloads: [{ file: 'workloada', properties: { recordcount: 100 } }],
        setups: [{ name: 'A' }],
        compare: [],
      }),
    ])
    const code = await c.done
    const out = c.out.join('')
    assert.equal(code, 1, out)
    const m = /BS_ERR_AGENT: .*agent far's clock is ([\d.]+) ms ahead of the broker's \(±([\d.]+) ms\)/.exec(out)
    assert.ok(m !== null, out)
    const error = Number(m[1]) - 2000
    process.stdout.write(`# agent far, clock +2 s (libfaketime): measured ${m[1]} ms ± ${m[2]}, error ${error} ms\n`)
    assert.ok(Math.abs(error) <= Number(m[2]) + 1, `offset ${m[1]} ± ${m[2]} ms`)
  } finally {
    await stopAgents([far])
  }
})

test(
  'memory-ab across links of 1, 20 and 50 ms, one agent 30 ms off (libfaketime), one agent link cut for 10 s ' +
    'mid-run: that run is retried, the scans regress, every compared run exact, nothing merged wrongly',
  { timeout: 1_500_000 },
  async () => {
    const agents = [await startAgent('a1'), await startAgent('a2', '+0.03'), await startAgent('a3')]
    try {
      for (const a of agents) {
        const c = registeredClock(a)
        process.stdout.write(
          `# agent ${a.name} (link ${CLIENT_HOSTS[a.name as ClientHost].link.rttMs} ms): offset ` +
            `${c.offsetMs} ms, round trip ${(2 * c.halfRttMs).toFixed(1)} ms at registration\n`,
        )
      }
      const id = `netab-${Date.now().toString(36)}`
      const c = coordinator(['run', 'experiments/memory-ab.yaml', '--id', id, '--out', te.dataDir])
      // Mid-run: the first run from the third on seen going with at least 1 s of its 2 s left (the test's clock is the
      // brokers': one machine). On a loaded machine a run can be over before its state says it started.
      let going: Awaited<ReturnType<typeof runGoing>> | undefined
      let cutCell = 2
      for (; cutCell < 8 && going === undefined; cutCell++) {
        const g = await runGoing(c, id, cutCell)
        if (Date.now() < g.startedAtMs! + 1000) {
          // Its state says started once go is sent; the clients start at the instant it names, 500 ms later.
          await sleep(Math.max(0, g.startedAtMs! + 300 - Date.now()))
          going = g
        } else
          process.stdout.write(`# ${g.runId} seen going ${Date.now() - g.startedAtMs!} ms after its start: too late\n`)
      }
      cutCell--
      assert.ok(going !== undefined, 'no run was seen going with 1 s of it left: nothing was cut')
      const victim = going.clients.at(-1)!.agent
      const cutAt = Date.now()
      net0.cut(victim)
      await sleep(CUT_MS)
      net0.heal(victim)
      process.stdout.write(
        `# cut ${victim}'s link during ${going.runId}, ${cutAt - going.startedAtMs!} ms after its start, for ` +
          `${Date.now() - cutAt} ms\n`,
      )
      const code = await c.done
      const out = c.out.join('')
      assert.equal(code, 0, out)
      const s = (await experiment(id))!
      assert.equal(s.status, 'done', out)
      const cell = s.cells[cutCell]!
      assert.deepEqual(
        cell.attempts.map((a) => a.state),
        ['incomplete', 'done'],
        JSON.stringify(cell.attempts.map((a) => a.reason)),
      )
      assert.match(cell.attempts[0]!.reason ?? '', new RegExp(`agent ${victim} went silent`))
      for (const [i, other] of s.cells.entries())
        if (i !== cutCell)
          assert.deepEqual(
            other.attempts.map((a) => a.state),
            ['done'],
            `cell ${i}`,
          )
      await assertExact(s, 3)

      // The cut run's late events: its clients' events reach ClickHouse under its own id, never a compared run's.
      const [cmp] = s.comparisons
      assert.ok(cmp !== undefined && cmp.error === undefined, JSON.stringify(cmp))
      const compared = [...cmp.baselineRuns, ...cmp.candidateRuns]
      assert.equal(compared.length, 8)
      assert.ok(!compared.includes(going.runId), 'the incomplete run is never compared')
      await sleep(5000)
      for (const a of s.cells.flatMap((x) => x.attempts.filter((y) => y.state === 'done')))
        assert.equal(await counted(a.runId), a.counted, `${a.runId} after the cut run's late events`)
      const lost = await runInfo(going.runId)
      process.stdout.write(
        `# ${going.runId} (cut): ${cell.attempts[0]!.reason}; in ClickHouse ${await counted(going.runId)} events, ` +
          `clients ended ${lost?.clients_ended ?? 0} of 3\n`,
      )
      assert.ok(cmp.regressions.includes('SCAN p50 (µs)'), `regressions: ${cmp.regressions.join(', ')}`)
      assert.deepEqual(
        cmp.improvements.filter((r) => r.startsWith('SCAN ')),
        [],
      )

      // Clocks: a2 is 30 ms ahead for real; every run it took part in stored its offset, measured within half the
      // round trip (and the broker's millisecond stamps); the start skew is on the broker's clock.
      const offsets = await queryRows<{ run_id: string; clock_offset_ms: number }>(
        svc.ch,
        "SELECT run_id, clock_offset_ms FROM benchstream.run_clients WHERE client_id = 'a2' AND phase = 'start' " +
          "AND labels['experiment'] = {id:String} ORDER BY at",
        { id },
      )
      assert.ok(offsets.length >= 8, `a2's runs: ${offsets.length}`)
      const half = registeredClock(agents[1]!).halfRttMs
      const errors = offsets.map((o) => o.clock_offset_ms - 30)
      process.stdout.write(
        `# a2's clock offset error (stored - 30 ms) over ${errors.length} runs: ` +
          `${errors.map((e) => e.toFixed(1)).join(' ')} ms (bound ±${(half + 1).toFixed(1)} at registration)\n`,
      )
      const done = s.cells.flatMap((x) => x.attempts.filter((a) => a.state === 'done'))
      const skews = done.map((a) => a.startSkewMs!)
      for (const a of done) {
        const firsts = await queryRows<{ client_id: string; first: number; offset: number | null }>(
          svc.ch,
          'SELECT e.client_id AS client_id, toUnixTimestamp64Micro(e.first_op_at) / 1000 AS first, ' +
            's.clock_offset_ms AS offset FROM benchstream.run_clients AS e ' +
            'JOIN benchstream.run_clients AS s ON s.run_id = e.run_id AND s.client_id = e.client_id ' +
            "AND s.phase = 'start' " +
            "WHERE e.run_id = {r:String} AND e.phase = 'end' ORDER BY e.client_id",
          { r: a.runId },
        )
        // The stored skew is the spread on the broker's clock (each first operation less its machine's offset).
        const onBroker = firsts.map((f) => f.first - (f.offset ?? 0))
        assert.ok(
          Math.abs(Math.max(...onBroker) - Math.min(...onBroker) - a.startSkewMs!) < 0.01,
          `${a.runId}: start skew ${a.startSkewMs} ms on the broker's clock`,
        )
        process.stdout.write(
          `#   ${a.runId}: skew ${a.startSkewMs?.toFixed(1)} ms; first op - start instant (own clock | broker's): ` +
            firsts
              .map(
                (f) =>
                  `${f.client_id} ${(f.first - a.startedAtMs!).toFixed(1)} | ` +
                  `${(f.first - (f.offset ?? 0) - a.startedAtMs!).toFixed(1)}`,
              )
              .join(', ') +
            '\n',
        )
      }
      process.stdout.write(
        `# start skew between a run's 3 clients, ms: ${skews.map((x) => x.toFixed(1)).join(' ')}\n` +
          `# other operations: regressions [${cmp.regressions.filter((r) => !r.startsWith('SCAN ')).join(', ')}]\n`,
      )
      for (const e of errors) assert.ok(Math.abs(e) <= 2 * half + 2, `offset error ${e} ms`)
      assert.ok(
        skews.every((x) => x >= 0 && x < 1000),
        `start skews ${skews.join(', ')}`,
      )
      assert.ok(readFileSync(path.join(te.dataDir, id, 'comparison.md'), 'utf8').includes('SCAN'))
    } finally {
      await stopAgents(agents)
    }
  },
)

test(
  "the coordinator's link cut for 10 s mid-run and healed: the plan goes on, no run is run twice",
  { timeout: 600_000 },
  async () => {
    const agents = [await startAgent('a1'), await startAgent('a3')]
    try {
      const id = `netco-${Date.now().toString(36)}`
      const c = coordinator([
        'run',
        planFile('coordcut', {
          clients: 2,
          target: 200,
          seconds: 3,
          repetitions: 2,
          workloads: [{ file: 'workloada', properties: { recordcount: 100 } }],
          setups: [{ name: 'A' }, { name: 'B', labels: { version: 'b' } }],
          compare: [],
        }),
        '--id',
        id,
        '--out',
        te.dataDir,
      ])
      const going = await runGoing(c, id, 1)
      const cutAt = Date.now()
      net0.cut('co')
      await sleep(CUT_MS)
      net0.heal('co')
      process.stdout.write(`# cut the coordinator's link during ${going.runId} for ${Date.now() - cutAt} ms\n`)
      const code = await c.done
      const out = c.out.join('')
      process.stdout.write(
        `# coordinator after the cut: ${out
          .split('\n')
          .filter((l) => /note:|warn/.test(l))
          .join(' | ')}\n`,
      )
      assert.equal(code, 0, out)
      const s = (await experiment(id))!
      assert.equal(s.status, 'done', out)
      assert.deepEqual(
        s.cells.map((x) => x.attempts.map((a) => a.state)),
        s.cells.map(() => ['done']),
        `every cell once: ${JSON.stringify(s.cells.map((x) => x.attempts.map((a) => [a.runId, a.reason])))}`,
      )
      const runs = await queryRows<{ run_id: string }>(
        svc.ch,
        "SELECT run_id FROM benchstream.runs WHERE labels['experiment'] = {id:String} ORDER BY run_id",
        { id },
      )
      assert.deepEqual(
        runs.map((r) => r.run_id),
        s.cells.map((x) => x.attempts[0]!.runId).sort(),
        'as many runs in ClickHouse as cells: none twice',
      )
      await assertExact(s, 2)
    } finally {
      await stopAgents(agents)
    }
  },
)

test(
  'an agent cut off from the brokers while it still reaches its datastore (Redis): its client works on, the run ' +
    'is incomplete and retried',
  { timeout: 600_000 },
  async () => {
    const db = net0.addr('db')
    const redis = spawnIn('db', [
      'redis-server',
      '--port',
      String(REDIS_PORT),
      '--bind',
      db,
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
    ])
    const commands = async (): Promise<number> =>
      new Promise((resolve, reject) => {
        const sock = net.connect(REDIS_PORT, db)
        let buf = ''
        sock.setTimeout(5000, () => sock.destroy(new Error('redis INFO timed out')))
        sock.on('error', reject)
        sock.on('data', (d) => {
          buf += d.toString()
          const m = /total_commands_processed:(\d+)/.exec(buf)
          if (m !== null) {
            sock.end()
            resolve(Number(m[1]))
          }
        })
        sock.write('INFO stats\r\n')
      })
    await waitFor('redis in its namespace', async () => ((await commands()) >= 0 ? true : undefined), 30_000)
    const agents = [await startAgent('a1')]
    try {
      const id = `netdb-${Date.now().toString(36)}`
      const c = coordinator([
        'run',
        planFile('dbcut', {
          binding: 'redis',
          clients: ['a1'],
          threads: 2,
          target: 400,
          seconds: 14,
          repetitions: 1,
          properties: { 'redis.host': db, 'redis.port': REDIS_PORT },
          workloads: [{ file: 'workloada', properties: { recordcount: 500 } }],
          setups: [{ name: 'A' }],
          compare: [],
        }),
        '--id',
        id,
        '--out',
        te.dataDir,
      ])
      const going = await runGoing(c, id, 0)
      await sleep(2000)
      const brokers = [net0.gateway, ...BROKERS.map((b) => net0.addr(b))]
      const before = await commands()
      net0.block('a1', brokers)
      await sleep(CUT_MS)
      const during = (await commands()) - before
      net0.unblock('a1', brokers)
      process.stdout.write(
        `# a1 cut off from the brokers for ${CUT_MS} ms during ${going.runId}: Redis processed ${during} commands ` +
          `meanwhile (target 400 ops/s)\n`,
      )
      assert.ok(during >= 1000, `a1's client worked its datastore while cut off: ${during} commands`)
      const code = await c.done
      const out = c.out.join('')
      assert.equal(code, 0, out)
      const s = (await experiment(id))!
      const cell = s.cells[0]!
      assert.deepEqual(
        cell.attempts.map((a) => a.state),
        ['incomplete', 'done'],
        JSON.stringify(cell.attempts.map((a) => a.reason)),
      )
      assert.match(cell.attempts[0]!.reason ?? '', /agent a1 went silent/)
      await assertExact(s, 1)
      const lost = await runInfo(going.runId)
      process.stdout.write(
        `# ${going.runId}: ${cell.attempts[0]!.reason}; in ClickHouse ${await counted(going.runId)} events, ` +
          `clients ended ${lost?.clients_ended ?? 0} of 1, undelivered ${lost?.undelivered ?? '-'}\n`,
      )
    } finally {
      await stopAgents(agents)
      redis.proc.kill('SIGTERM')
      await redis.done
    }
  },
)

test(
  'the broker leading a partition isolated from the other brokers (not killed): leadership moves, the drivers go ' +
    'on, every event counted exactly once',
  { timeout: 600_000 },
  async () => {
    const agents = [await startAgent('a1'), await startAgent('a2')]
    const infra = readInfraConfig(te.env)
    try {
      const id = `netbk-${Date.now().toString(36)}`
      const c = coordinator([
        'run',
        planFile('brokercut', {
          clients: 2,
          threads: 2,
          target: 2000,
          seconds: 40,
          repetitions: 1,
          retries: 0,
          workloads: [{ file: 'workloada', properties: { recordcount: 1000 } }],
          setups: [{ name: 'A' }],
          compare: [],
        }),
        '--id',
        id,
        '--out',
        te.dataDir,
      ])
      const going = await runGoing(c, id, 0)
      await sleep(5000)
      const leaderOf = async (via: number): Promise<number | undefined> => {
        const admin = createKafka({ ...infra.kafka, brokers: [brokerAddr(via)] }, `leader-${via}`).admin()
        await admin.connect()
        try {
          const [t] = (await admin.fetchTopicMetadata({ topics: [infra.topics.events] })).topics
          return t?.partitions.find((p) => p.partitionId === 0)?.leader
        } finally {
          await admin.disconnect()
        }
      }
      const leader = (await leaderOf(0))!
      const controlLeader = await (async () => {
        const admin = createKafka(infra.kafka, 'control-leader').admin()
        await admin.connect()
        try {
          return (await admin.fetchTopicMetadata({ topics: [infra.topics.control] })).topics[0]?.partitions[0]?.leader
        } finally {
          await admin.disconnect()
        }
      })()
      process.stdout.write(`# events partition 0 led by broker ${leader}, the control topic by ${controlLeader}\n`)
      const isolated = BROKERS[leader - 1]!
      const others = BROKERS.filter((b) => b !== isolated)
      const cutAt = Date.now()
      net0.block(
        isolated,
        others.map((b) => net0.addr(b)),
      )
      const healthy = BROKERS.indexOf(others[0]!)
      const moved = await waitFor(
        `the events topic's partition 0 led by another broker than ${leader}`,
        async () => {
          const l = await leaderOf(healthy)
          return l !== undefined && l !== leader ? l : undefined
        },
        90_000,
        500,
      )
      const movedMs = Date.now() - cutAt
      await sleep(Math.max(0, 20_000 - movedMs))
      net0.unblock(
        isolated,
        others.map((b) => net0.addr(b)),
      )
      process.stdout.write(
        `# broker ${leader} (${isolated}), leader of partition 0, isolated from the others for ` +
          `${Date.now() - cutAt} ms during ${going.runId}: partition 0 led by broker ${moved} after ${movedMs} ms\n`,
      )
      const code = await c.done
      const out = c.out.join('')
      process.stdout.write(
        `# server outages: ${serverLog
          .filter((l) => l.includes('"outage":"ended"'))
          .map((l) => (JSON.parse(l) as { msg: string }).msg)
          .join(' | ')}\n`,
      )
      assert.equal(code, 0, out)
      const s = (await experiment(id))!
      assert.deepEqual(
        s.cells[0]!.attempts.map((a) => a.state),
        ['done'],
        JSON.stringify(s.cells[0]!.attempts.map((a) => a.reason)),
      )
      await assertExact(s, 2)
      const a = s.cells[0]!.attempts[0]!
      process.stdout.write(`# ${a.runId}: counted ${a.counted} of ${a.sent} sent\n`)
    } finally {
      await stopAgents(agents)
    }
  },
)
