/**
 * The agent (services/agent/app.ts) over fakes: a control bus that records
 * what it publishes and stamps each with a broker time on a clock a known
 * offset ahead, a process launcher whose children the test drives (lines,
 * exits; stdin writes and signals recorded), readiness probes and this
 * machine's clock as plain functions. Timers are node:test's mock timers: the
 * heartbeat burst, the readiness polls and the barrier's timeout take no time.
 *
 * What is checked: the clock estimate of the first heartbeats; every kind of
 * assignment refused with its reason (another instance, a clock beyond the
 * bound, a binding, driver or workload it does not have, a property naming a
 * file, a command or variable it does not allow); a run's command line, its
 * barrier (ready, go with the start instant on this machine's clock, cancel
 * before and after go, no go in time) and its end with the driver's operation
 * counts; a step with its readiness check; a profile of an allowed target.
 * One agent per name: several agents on one fake topic (every message
 * reaches every reader, as on the one-partition control topic), on different
 * hosts: a newcomer under a live agent's name refuses to start, a dead
 * agent's name is taken over, two claiming at once leave one, and two live
 * ones (one silent past the claim) say so and never answer for each other.
 */
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { pino } from 'pino'
import { Value } from 'typebox/value'
import {
  ControlMessage,
  type AgentHeartbeat,
  type Assign,
  type AssignmentStatus,
  type RunSpec,
} from '../../schemas/experiment-control.v1.js'
import type { Step } from '../../schemas/experiment-plan.v1.js'
import { build, READY_LINE, type Agent } from '../../services/agent/app.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import type { AgentConfig } from '../../services/agent/config.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { BARRIER_READY_LINE } from '../../services/driver/config.js'
import { claimWindowMs } from '../../services/core/experiments/agent-name.js'
import { clockRefusal } from '../../services/core/experiments/clock.js'
import type { ControlBus, ControlBusHandlers, Published } from '../../services/core/ports/control-bus.js'
import type { Exit, Launched, LaunchSpec, ProcessLauncher } from '../../services/core/ports/process-launcher.js'

const T0 = 1_750_000_000_000
/** The broker's clock is this far ahead of the agent's (its offset, ms). */
const OFFSET = 37
/** Round trips of the first heartbeats: the 4 ms one gives the estimate. */
const BURST_RTTS = [12, 7, 4, 9, 15, 6, 11, 8]
const NODE = '/usr/bin/node'
const BIN = '/opt/bs/bin/benchstream.js'
const WORKLOAD_FILE = '/opt/bs/workloads/workloada'

class FakeClock {
  ms = T0
  readonly now = (): number => this.ms
}

/**
 * A control bus on a fake broker whose clock is `offset` ahead of the agent's: a heartbeat's round trip takes the
 * next of `rtts` on the agent's clock and is stamped at its middle, except that the stamp of every round trip but
 * the shortest is placed late in it, so that only the shortest gives the exact offset. Every message published is
 * checked against the schema.
 */
class FakeBus implements ControlBus {
  handlers: ControlBusHandlers | undefined
  readonly published: ControlMessage[] = []
  readonly invalid: string[] = []
  rejected = 0
  closed = false
  /** While set, status messages wait for it before they are acknowledged (a slow link). */
  gate: Promise<void> | undefined
  private beats = 0

  constructor(
    private readonly clock: FakeClock,
    private readonly offset: number,
    /** Other agents' buses on the same topic: each hears what this one publishes (and the reverse). */
    private readonly topic: FakeBus[] = [],
  ) {
    topic.push(this)
  }

  async start(handlers: ControlBusHandlers): Promise<void> {
    this.handlers = handlers
  }

  async publish(m: ControlMessage): Promise<Published> {
    if (!Value.Check(ControlMessage, m)) this.invalid.push(JSON.stringify(m).slice(0, 400))
    this.published.push(structuredClone(m))
    if (m.type === 'assignment.status' && this.gate !== undefined) await this.gate
    // Every reader of the topic gets it (its own publisher too, as on Kafka), once the publish has returned.
    for (const b of this.topic)
      if (b.handlers !== undefined && !b.closed) {
        const copy = structuredClone(m)
        queueMicrotask(() => b.deliver(copy))
      }
    const sent = this.clock.ms
    if (m.type !== 'agent.heartbeat') return { brokerTimeMs: sent + this.offset }
    const rtt = BURST_RTTS[this.beats++] ?? 10
    this.clock.ms += rtt
    const at = rtt === Math.min(...BURST_RTTS) ? 0.5 : 0.9
    return { brokerTimeMs: sent + rtt * at + this.offset }
  }

  async close(): Promise<void> {
    this.closed = true
  }

  deliver(m: ControlMessage): void {
    if (this.closed) return
    this.handlers!.onMessage(m, this.clock.ms + this.offset)
  }

  heartbeats(): AgentHeartbeat[] {
    return this.published.filter((m): m is AgentHeartbeat => m.type === 'agent.heartbeat')
  }

  statuses(assignment?: string): AssignmentStatus[] {
    return this.published.filter(
      (m): m is AssignmentStatus =>
        m.type === 'assignment.status' && (assignment === undefined || m.assignment === assignment),
    )
  }
}

class FakeChild implements Launched {
  readonly pid = 4242
  readonly writes: string[] = []
  readonly kills: string[] = []
  readonly exited: Promise<Exit>
  private readonly lineFns: Array<(stream: 'stdout' | 'stderr', line: string) => void> = []
  private resolve!: (e: Exit) => void

  constructor(readonly spec: LaunchSpec) {
    this.exited = new Promise((r) => (this.resolve = r))
  }

  onLine(fn: (stream: 'stdout' | 'stderr', line: string) => void): void {
    this.lineFns.push(fn)
  }

  write(text: string): void {
    this.writes.push(text)
  }

  /** A signal ends the fake child at once. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): void {
    this.kills.push(signal)
    this.resolve({ code: null, signal })
  }

  line(stream: 'stdout' | 'stderr', text: string): void {
    for (const f of this.lineFns) f(stream, text)
  }

  exit(code: number): void {
    this.resolve({ code, signal: null })
  }
}

class FakeLauncher implements ProcessLauncher {
  readonly children: FakeChild[] = []
  /** Set to end each child as it starts (a readiness command). */
  exitCodeOf: ((spec: LaunchSpec) => number | undefined) | undefined

  launch(spec: LaunchSpec): Launched {
    const c = new FakeChild(spec)
    this.children.push(c)
    const code = this.exitCodeOf?.(spec)
    if (code !== undefined) c.exit(code)
    return c
  }
}

const CONFIG: AgentConfig = {
  name: 'a1',
  labels: { rack: 'r1' },
  bindings: ['memory', 'redis'],
  ycsb: false,
  ycsbHome: undefined,
  ycsbBindings: [],
  workloadDirs: ['/opt/bs/workloads'],
  commands: { hbase: '/opt/bs/deploy/hbase.sh', 'hbase-ready': '/opt/bs/deploy/hbase-ready.sh' },
  env: ['HBASE_VERSION'],
  profileTargets: { rs: '/var/run/hbase-rs.pid' },
  allowServerMetrics: false,
  heartbeatMs: 1000,
  clockSkewMs: 0,
  infra: readInfraConfig({}),
}

interface Rig {
  agent: Agent
  bus: FakeBus
  launcher: FakeLauncher
  clock: FakeClock
  probes: { tcp: string[]; http: string[]; answers: boolean[] }
  files: Record<string, string>
  /** Lets the agent's promises run (and ticks mocked time by `ms`). */
  settle: (ms?: number) => Promise<void>
}

/** Tests whose timers are mocked already (one test may start several agents). */
const mocked = new WeakSet<TestContext>()
const turn = (): Promise<void> => new Promise((r) => setImmediate(r))

interface RigOptions {
  /** The topic shared with other agents' buses (one test may start several agents on one topic). */
  topic?: FakeBus[]
  hostname?: string
  pid?: number
  instance?: string
}

/** A started agent (its claim window and heartbeat burst done) on fakes; stopped when the test ends. */
async function startAgent(
  t: TestContext,
  cfg: Partial<AgentConfig> = {},
  offset = OFFSET,
  options: RigOptions = {},
): Promise<Rig> {
  const rig = makeAgent(t, cfg, offset, options)
  const started = rig.agent.start()
  await rig.settle(claimWindowMs(cfg.heartbeatMs ?? CONFIG.heartbeatMs))
  for (let i = 0; i < BURST_RTTS.length; i++) await rig.settle(50)
  await started
  return rig
}

/** An agent on fakes, not started yet; stopped when the test ends. */
function makeAgent(t: TestContext, cfg: Partial<AgentConfig> = {}, offset = OFFSET, options: RigOptions = {}): Rig {
  if (!mocked.has(t)) t.mock.timers.enable({ apis: ['setTimeout'] })
  mocked.add(t)
  const clock = new FakeClock()
  const bus = new FakeBus(clock, offset, options.topic)
  const launcher = new FakeLauncher()
  const probes = { tcp: [] as string[], http: [] as string[], answers: [] as boolean[] }
  const files: Record<string, string> = { '/var/run/hbase-rs.pid': '31337\n' }
  const agent = build(
    { ...CONFIG, ...cfg },
    {
      bus,
      launcher,
      probes: {
        // A probe that fails takes its timeout (2 s) on this machine's clock.
        tcp: async (hostPort, timeoutMs) => {
          probes.tcp.push(hostPort)
          const ok = probes.answers.shift() ?? false
          if (!ok) clock.ms += timeoutMs
          return ok
        },
        http: async (url, timeoutMs) => {
          probes.http.push(url)
          const ok = probes.answers.shift() ?? false
          if (!ok) clock.ms += timeoutMs
          return ok
        },
      },
      ...(options.instance === undefined ? {} : { instance: options.instance }),
      now: clock.now,
      log: pino({ level: 'silent' }),
      host: { hostname: options.hostname ?? 'client-1', pid: options.pid ?? 1234, cores: 8, version: '0.1.0' },
      benchstream: { command: NODE, args: [BIN] },
      env: { PATH: '/usr/bin', HOME: '/home/bs' },
      listWorkloads: () => ['workloada', 'workloadc'],
      resolveWorkload: (name) => (name === 'workloada' || name === 'workloads/workloada' ? WORKLOAD_FILE : undefined),
      readFile: (p) => {
        const text = files[p]
        if (text === undefined) throw new Error(`ENOENT: no such file ${p}`)
        return text
      },
    },
  )
  const settle = async (ms = 0): Promise<void> => {
    for (let i = 0; i < 5; i++) await turn()
    if (ms > 0) {
      t.mock.timers.tick(ms)
      for (let i = 0; i < 5; i++) await turn()
    }
  }
  t.after(async () => {
    await agent.stop()
  })
  return { agent, bus, launcher, clock, probes, files, settle }
}

function assignOf(agent: Agent, id: string, work: Pick<Assign, 'run' | 'step' | 'profile'>, x: Partial<Assign> = {}) {
  const a: Assign = {
    type: 'assign',
    sentAtMs: T0,
    experiment: 'exp-1',
    assignment: id,
    agent: 'a1',
    instance: agent.instance,
    ...work,
    clockBoundMs: 50,
    barrierTimeoutS: 180,
    ...x,
  }
  return a
}

const RUN: RunSpec = {
  phase: 'run',
  driver: 'benchstream',
  binding: 'memory',
  workload: 'workloads/workloada',
  properties: { recordcount: '1000', 'memory.delay.scan': '10000' },
  threads: 2,
  target: 200,
  seconds: 2,
  runId: 'exp-1-A-workloada-1',
  clientId: 'a1',
  group: 'exp-1-A-workloada',
  repetition: 1,
  labels: { version: 'a', experiment: 'exp-1', setup: 'A' },
  expectedClients: 3,
  experiment: 'exp-1',
}

const runAssign = (agent: Agent, id: string, run: Partial<RunSpec> = {}, x: Partial<Assign> = {}): Assign =>
  assignOf(agent, id, { run: { ...RUN, ...run } }, x)

/** The states published for an assignment, in order, and its last status. */
function states(bus: FakeBus, id: string): string[] {
  return bus.statuses(id).map((s) => s.state)
}
const last = (bus: FakeBus, id: string): AssignmentStatus => bus.statuses(id).at(-1)!

test('the first heartbeats measure the clock: the shortest round trip gives the offset', async (t) => {
  const { agent, bus } = await startAgent(t)
  const beats = bus.heartbeats()
  assert.equal(beats.length, BURST_RTTS.length)
  assert.equal(beats[0]!.clock, null, 'nothing measured before the first heartbeat')
  assert.deepEqual(
    { ...agent.clockEstimate!, atMs: 0 },
    { offsetMs: OFFSET, rttMs: 4, samples: BURST_RTTS.length, atMs: 0 },
  )
  // Every later heartbeat carries the estimate so far; the last has the final one.
  assert.equal(beats[3]!.clock?.rttMs, 4)
  assert.equal(beats[3]!.clock?.offsetMs, OFFSET)
  const hb = beats.at(-1)!
  assert.equal(hb.agent, 'a1')
  assert.equal(hb.instance, agent.instance)
  assert.equal(hb.busyWith, null)
  assert.deepEqual(hb.labels, { rack: 'r1' })
  assert.deepEqual(hb.capabilities, {
    drivers: ['benchstream', 'pe'],
    bindings: ['memory', 'redis'],
    ycsbBindings: [],
    workloads: ['workloada', 'workloadc'],
    commands: ['hbase', 'hbase-ready'],
    env: ['HBASE_VERSION'],
    profileTargets: ['rs'],
  })
  // A clock behind the broker's by 200 ms the other way round.
  const behind = await startAgent(t, {}, -200)
  assert.equal(behind.agent.clockEstimate?.offsetMs, -200)
  assert.deepEqual(bus.invalid, [])
})

test('assignments for another agent are ignored; for a previous instance, refused', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  bus.deliver(runAssign(agent, 'exp-1-A-workloada-1/a2', {}, { agent: 'a2' }))
  await settle()
  assert.deepEqual(bus.statuses(), [])
  bus.deliver(runAssign(agent, 'exp-1-A-workloada-1/a1', {}, { instance: 'instance-before-restart' }))
  await settle()
  const s = last(bus, 'exp-1-A-workloada-1/a1')
  assert.equal(s.state, 'refused')
  assert.equal(s.instance, agent.instance)
  assert.match(s.detail!, /instance instance-before-restart; it restarted as /)
  assert.ok(s.detail!.endsWith(agent.instance))
  assert.equal(agent.refused.other_instance, 1)
  assert.equal(launcher.children.length, 0)
})

test('runs it cannot or may not run are refused, each with why; nothing is started', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  const refused = async (a: Assign): Promise<string> => {
    bus.deliver(a)
    await settle()
    assert.deepEqual(states(bus, a.assignment), ['refused'], a.assignment)
    return last(bus, a.assignment).detail!
  }
  // 37 ms off, known to ±2 ms: beyond a bound of 10 ms.
  assert.equal(
    await refused(runAssign(agent, 'clock', {}, { clockBoundMs: 10 })),
    clockRefusal('a1', agent.clockEstimate!, 10),
  )
  assert.match(
    await refused(runAssign(agent, 'binding', { binding: 'hbase' })),
    /^agent a1 does not run the binding hbase; it runs memory, redis$/,
  )
  assert.match(
    await refused(runAssign(agent, 'driver', { driver: 'ycsb', binding: 'redis' })),
    /^agent a1 does not run YCSB \(start it with --ycsb or --ycsb-home\)$/,
  )
  assert.match(
    await refused(runAssign(agent, 'workload', { workload: 'workloads/workloadz' })),
    /^agent a1 has no workload file "workloads\/workloadz" in its --workloads folders$/,
  )
  for (const p of ['exportfile', 'hdrhistogram.output.path', 'measurement.trace.dir'])
    assert.match(
      await refused(runAssign(agent, `property-${p}`, { properties: { ...RUN.properties, [p]: '/tmp/x' } })),
      new RegExp(`^property ${p.replaceAll('.', '\\.')} names a file or folder on this machine`),
    )
  assert.match(
    await refused(runAssign(agent, 'metrics', { serverMetrics: ['hbase=http://10.0.0.1:16030/jmx'] })),
    /--allow-server-metrics/,
  )
  assert.match(
    await refused(
      assignOf(agent, 'two-kinds', { run: RUN, profile: { target: 'rs', runId: 'r', seconds: 1, event: 'cpu' } }),
    ),
    /exactly one of run, step or profile/,
  )
  assert.equal(launcher.children.length, 0)
  assert.equal(agent.refused.refused, 9)
  // Refused runs leave it free: the next heartbeat says so, and an allowed run is taken.
  await settle(CONFIG.heartbeatMs)
  assert.equal(bus.heartbeats().at(-1)!.busyWith, null)
  bus.deliver(runAssign(agent, 'ok', {}, { clockBoundMs: 50 }))
  await settle()
  assert.deepEqual(states(bus, 'ok'), ['accepted'])
  assert.equal(launcher.children.length, 1)
  assert.deepEqual(bus.invalid, [])
})

test('YCSB runs: allowed only with --ycsb and for its bindings, through `benchstream ycsb`', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t, {
    ycsb: true,
    ycsbHome: '/opt/ycsb',
    ycsbBindings: ['redis', 'hbase2'],
  })
  bus.deliver(runAssign(agent, 'no', { driver: 'ycsb', binding: 'mongodb' }))
  await settle()
  assert.match(last(bus, 'no').detail!, /^agent a1 does not run YCSB's mongodb; it runs redis, hbase2$/)
  bus.deliver(runAssign(agent, 'yes', { driver: 'ycsb', binding: 'hbase2', target: 0, seconds: 5 }))
  await settle()
  assert.deepEqual(states(bus, 'yes'), ['accepted'])
  const args = launcher.children[0]!.spec.args
  assert.deepEqual(args.slice(0, 4), [BIN, 'ycsb', '--ycsb-home', '/opt/ycsb'])
  const dash = args.indexOf('--')
  assert.ok(args.slice(0, dash).includes('--barrier'))
  assert.deepEqual(args.slice(dash + 1, dash + 8), ['run', '-P', WORKLOAD_FILE, '-db', 'hbase2', '-threads', '2'])
  assert.ok(!args.includes('-target'), 'unthrottled: no -target')
})

test("PE runs (driver pe): the plan's binding an allowed command, run by `benchstream pe --command P`", async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t, { allowServerMetrics: true })
  assert.ok(bus.heartbeats().at(-1)!.capabilities.drivers.includes('pe'))
  const pe = { driver: 'pe', binding: 'hbase', workload: 'randomRead', target: 0 } as const
  for (const [id, run, why] of [
    [
      'cmd',
      { binding: 'hbase-pe' },
      /^agent a1 does not allow the command "hbase-pe" that driver pe runs as hbase-pe pe/,
    ],
    ['test', { workload: 'randomReed' }, /^"randomReed" is not one of PE's tests \(asyncRandomRead, /],
    ['rows', { operations: 1001, threads: 2 }, /split evenly over the 2 PE clients, got 1001/],
    ['load', { phase: 'load', operations: 1000 }, /^driver pe has no load phase/],
    ['opt', { operations: 1000, properties: { valueSize: '--table=x' } }, /PE options are name=value without spaces/],
    ['file', { operations: 1000, properties: { 'hbase.rootdir': 'file:///tmp' } }, /names a file or folder/],
  ] as const) {
    bus.deliver(runAssign(agent, id, { ...pe, ...run }))
    await settle()
    assert.match(last(bus, id).detail!, why, id)
  }
  assert.equal(launcher.children.length, 0)
  bus.deliver(
    runAssign(agent, 'yes', {
      ...pe,
      operations: 2000,
      threads: 4,
      properties: { 'hbase.zookeeper.property.clientPort': '12181', valueSize: '100' },
      serverMetrics: ['hbase=http://127.0.0.1:12030'],
    }),
  )
  await settle()
  assert.deepEqual(states(bus, 'yes'), ['accepted'])
  const args = launcher.children[0]!.spec.args
  assert.deepEqual(args.slice(0, 4), [BIN, 'pe', '--command', CONFIG.commands.hbase])
  const dash = args.indexOf('--')
  assert.ok(args.slice(0, dash).includes('--barrier'))
  assert.deepEqual(args.slice(dash - 2, dash), ['--server-metrics', 'hbase=http://127.0.0.1:12030'])
  assert.deepEqual(args.slice(dash + 1), [
    '-Dhbase.zookeeper.property.clientPort=12181',
    '--nomapred',
    '--valueSize=100',
    '--rows=500',
    'randomRead',
    '4',
  ])
  assert.deepEqual(bus.invalid, [])
})

test('a run: its command line, ready, go at the instant on this clock, ended with the operations', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t, { clockSkewMs: 250 })
  const id = 'exp-1-A-workloada-1/a1'
  bus.deliver(runAssign(agent, id))
  await settle()
  assert.deepEqual(states(bus, id), ['accepted'])
  const child = launcher.children[0]!
  assert.equal(child.spec.command, NODE)
  assert.deepEqual(child.spec.env, { PATH: '/usr/bin', HOME: '/home/bs' })
  assert.deepEqual(
    child.spec.args,
    [
      [BIN, 'run'],
      ['-P', WORKLOAD_FILE, '-db', 'memory', '-threads', '2', '-target', '200'],
      ['-p', 'recordcount=1000', '-p', 'memory.delay.scan=10000'],
      ['-p', 'maxexecutiontime=2', '-p', 'operationcount=0'],
      ['--run-id', 'exp-1-A-workloada-1', '--client-id', 'a1'],
      ['--label', 'version=a', '--label', 'experiment=exp-1', '--label', 'setup=A'],
      ['--group', 'exp-1-A-workloada', '--repetition', '1'],
      ['--barrier', 'stdin', '--expected-clients', '3'],
      // This machine's clock minus the broker's: minus the agent's offset.
      ['--clock-offset-ms', '-37.000'],
    ].flat(),
  )
  // Busy with it: the heartbeats say so, and a second run is refused.
  await settle(CONFIG.heartbeatMs)
  assert.equal(bus.heartbeats().at(-1)!.busyWith, id)
  bus.deliver(runAssign(agent, 'exp-1-B-workloada-1/a1', { runId: 'exp-1-B-workloada-1' }))
  await settle()
  assert.match(last(bus, 'exp-1-B-workloada-1/a1').detail!, new RegExp(`^agent a1 is busy with ${id}$`))

  // Ready only on the driver's barrier line, on stderr.
  assert.equal(READY_LINE, BARRIER_READY_LINE)
  child.line('stdout', READY_LINE)
  child.line('stderr', 'loading 1000 records')
  await settle()
  assert.deepEqual(states(bus, id), ['accepted'])
  child.line('stderr', READY_LINE)
  await settle()
  assert.deepEqual(states(bus, id), ['accepted', 'ready'])
  assert.equal(last(bus, id).clock?.offsetMs, OFFSET)

  // go: the instant on the broker's clock, less the offset, less the skew the machine's clock is given here.
  const startAtMs = T0 + 60_000
  bus.deliver({ type: 'go', sentAtMs: T0, experiment: 'exp-1', assignments: [id, 'other/a2'], startAtMs })
  await settle()
  assert.deepEqual(child.writes, [`start ${startAtMs - OFFSET - 250}\n`])
  assert.deepEqual(states(bus, id), ['accepted', 'ready', 'started'])
  // A second go changes nothing.
  bus.deliver({ type: 'go', sentAtMs: T0, experiment: 'exp-1', assignments: [id], startAtMs: startAtMs + 5 })
  await settle()
  assert.equal(child.writes.length, 1)

  for (const l of [
    '[OVERALL], RunTime(ms), 2000',
    '[OVERALL], Throughput(ops/sec), 200.0',
    '[OVERALL], Operations, 400',
    '[READ], Operations, 200',
    '[READ], AverageLatency(us), 95.5',
    '[UPDATE], Operations, 120',
    '[SCAN], Operations, 80',
    // What benchstream ycsb prints next: Benchstream's report of the whole run (both clients), same format.
    "# Benchstream's report of run exp-1-A-workloada-1 (merged over 2 clients, every event counted):",
    '[READ], Operations, 400',
    '[UPDATE], Operations, 240',
  ])
    child.line('stdout', l)
  child.line('stderr', 'run exp-1-A-workloada-1 ended')
  child.exit(0)
  await settle()
  const end = last(bus, id)
  assert.equal(end.state, 'ended')
  assert.deepEqual(end.operations, { READ: 200, UPDATE: 120, SCAN: 80 }, "this client's own report's")
  assert.equal(end.exitCode, 0)
  assert.equal(end.detail, undefined)
  assert.equal(end.output, ['loading 1000 records', READY_LINE, 'run exp-1-A-workloada-1 ended'].join('\n'))
  // Free again at once: a heartbeat right after the end.
  assert.equal(bus.published.at(-2)!.type, 'agent.heartbeat')
  assert.equal(bus.heartbeats().at(-1)!.busyWith, null)
  assert.deepEqual(bus.invalid, [])
})

test('cancel before go: abort on stdin; the run fails as called off', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  bus.deliver(runAssign(agent, 'r/a1'))
  await settle()
  const child = launcher.children[0]!
  child.line('stderr', READY_LINE)
  await settle()
  bus.deliver({ type: 'cancel', sentAtMs: T0, experiment: 'exp-1', assignments: ['r/a1'], reason: 'client a2 failed' })
  await settle()
  assert.deepEqual(child.writes, ['abort\n'])
  assert.deepEqual(child.kills, [])
  // A go after the cancel is too late.
  bus.deliver({ type: 'go', sentAtMs: T0, experiment: 'exp-1', assignments: ['r/a1'], startAtMs: T0 })
  await settle()
  assert.deepEqual(child.writes, ['abort\n'])
  // Nor does the barrier's timeout abort it again.
  await settle(180_000)
  assert.deepEqual(child.writes, ['abort\n'])
  assert.deepEqual(states(bus, 'r/a1'), ['accepted', 'ready'])
  child.exit(1)
  await settle()
  const s = last(bus, 'r/a1')
  assert.deepEqual(states(bus, 'r/a1'), ['accepted', 'ready', 'failed'])
  assert.equal(s.detail, 'called off (cancelled, or no go in time)')
  assert.match(s.output!, /benchstream agent: cancelled: client a2 failed$/)
})

test('cancel before ready: abort; a ready line after it is not passed on, a go not obeyed', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  bus.deliver(runAssign(agent, 'r/a1'))
  await settle()
  const child = launcher.children[0]!
  bus.deliver({ type: 'cancel', sentAtMs: T0, experiment: 'exp-1', assignments: ['r/a1'], reason: 'client a2 refused' })
  await settle()
  assert.deepEqual(child.writes, ['abort\n'])
  child.line('stderr', READY_LINE)
  bus.deliver({ type: 'go', sentAtMs: T0, experiment: 'exp-1', assignments: ['r/a1'], startAtMs: T0 })
  await settle()
  assert.deepEqual(child.writes, ['abort\n'])
  assert.deepEqual(states(bus, 'r/a1'), ['accepted'])
  child.exit(1)
  await settle()
  assert.deepEqual(states(bus, 'r/a1'), ['accepted', 'failed'])
})

test('cancel while its acceptance is still being sent: nothing is started, the agent is free at once', async (t) => {
  // Seen across a network: an agent whose link was cut gets an assignment and its cancel in one fetch after the link
  // heals. The cancel came while 'accepted' was in flight, before any client existed, and was dropped; the client then
  // waited at the barrier for its whole timeout and the agent, busy with it, could run nothing else.
  const { agent, bus, launcher, settle } = await startAgent(t)
  let open!: () => void
  bus.gate = new Promise((r) => (open = r))
  bus.deliver(runAssign(agent, 'r/a1'))
  await settle()
  bus.deliver({
    type: 'cancel',
    sentAtMs: T0,
    experiment: 'exp-1',
    assignments: ['r/a1'],
    reason: 'agent a1 went silent',
  })
  await settle()
  bus.gate = undefined
  open()
  await settle()
  assert.equal(launcher.children.length, 0, 'no client started')
  assert.deepEqual(states(bus, 'r/a1'), ['accepted', 'failed'])
  assert.equal(last(bus, 'r/a1').detail, 'called off (cancelled before it started)')
  assert.match(last(bus, 'r/a1').output!, /cancelled: agent a1 went silent/)
  assert.equal(bus.heartbeats().at(-1)!.busyWith, null, 'free for the next run')
  // And it takes the next one.
  bus.deliver(runAssign(agent, 'r2/a1'))
  await settle()
  assert.equal(launcher.children.length, 1)
})

test('cancel after go: SIGTERM; even a clean exit then does not count as ended', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  bus.deliver(runAssign(agent, 'r/a1'))
  await settle()
  const child = launcher.children[0]!
  child.line('stderr', READY_LINE)
  await settle()
  bus.deliver({ type: 'go', sentAtMs: T0, experiment: 'exp-1', assignments: ['r/a1'], startAtMs: T0 + 1000 })
  await settle()
  bus.deliver({ type: 'cancel', sentAtMs: T0, experiment: 'exp-1', assignments: ['r/a1'], reason: 'agent a2 lost' })
  await settle()
  assert.deepEqual(child.kills, ['SIGTERM'])
  assert.equal(child.writes.length, 1, 'only the start')
  assert.deepEqual(states(bus, 'r/a1'), ['accepted', 'ready', 'started', 'failed'])
  assert.equal(last(bus, 'r/a1').exitCode, null)
})

test('no go within the barrier timeout: the run is called off', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  bus.deliver(runAssign(agent, 'r/a1', {}, { barrierTimeoutS: 30 }))
  await settle()
  const child = launcher.children[0]!
  child.line('stderr', READY_LINE)
  await settle(29_999)
  assert.deepEqual(child.writes, [])
  await settle(1)
  assert.deepEqual(child.writes, ['abort\n'])
  child.exit(1)
  await settle()
  assert.equal(last(bus, 'r/a1').state, 'failed')
  assert.match(last(bus, 'r/a1').output!, /no go within 30 s of being ready: called off/)
})

test('a client that exits on its own with an error fails, with its code and last lines', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  bus.deliver(runAssign(agent, 'r/a1'))
  await settle()
  const child = launcher.children[0]!
  child.line('stderr', 'BS_ERR_BINDING: connection refused')
  child.exit(3)
  await settle()
  const s = last(bus, 'r/a1')
  assert.deepEqual(states(bus, 'r/a1'), ['accepted', 'failed'])
  assert.equal(s.detail, 'the client exited with code 3')
  assert.equal(s.output, 'BS_ERR_BINDING: connection refused')
})

const STEP: Step = {
  agent: 'a1',
  command: 'hbase',
  args: ['start', '--version', '2.5.10'],
  env: { HBASE_VERSION: '2.5.10' },
  timeoutS: 600,
  ready: { tcp: '127.0.0.1:16000', timeoutS: 5 },
}

test('a step: only an allowed command and variables; then its readiness check; ended with its output', async (t) => {
  const { agent, bus, launcher, probes, settle } = await startAgent(t)
  bus.deliver(assignOf(agent, 'cmd', { step: { ...STEP, command: 'rm' } }))
  bus.deliver(assignOf(agent, 'env', { step: { ...STEP, env: { HBASE_VERSION: '2', LD_PRELOAD: '/tmp/x.so' } } }))
  bus.deliver(assignOf(agent, 'ready-cmd', { step: { ...STEP, ready: { command: 'curl' } } }))
  await settle()
  assert.match(last(bus, 'cmd').detail!, /^agent a1 does not allow the command "rm"; it allows hbase, hbase-ready /)
  assert.match(last(bus, 'env').detail!, /^agent a1 does not let steps set LD_PRELOAD; it allows HBASE_VERSION/)
  assert.match(last(bus, 'ready-cmd').detail!, /does not allow the readiness command "curl"/)
  assert.equal(launcher.children.length, 0)

  bus.deliver(assignOf(agent, 'start', { step: STEP }))
  await settle()
  assert.deepEqual(states(bus, 'start'), ['accepted'])
  const child = launcher.children[0]!
  assert.deepEqual(child.spec, {
    command: '/opt/bs/deploy/hbase.sh',
    args: ['start', '--version', '2.5.10'],
    env: { PATH: '/usr/bin', HOME: '/home/bs', HBASE_VERSION: '2.5.10' },
  })
  child.line('stdout', 'starting master, logging to /var/log/hbase')
  probes.answers.push(false, false, true)
  child.exit(0)
  await settle()
  assert.deepEqual(states(bus, 'start'), ['accepted'], 'not ended before it is ready')
  await settle(500)
  await settle(500)
  assert.deepEqual(probes.tcp, ['127.0.0.1:16000', '127.0.0.1:16000', '127.0.0.1:16000'])
  const s = last(bus, 'start')
  assert.equal(s.state, 'ended')
  assert.equal(s.exitCode, 0)
  assert.equal(s.output, 'starting master, logging to /var/log/hbase')
  assert.deepEqual(bus.invalid, [])
})

test('a step whose service never gets ready fails after its readiness timeout, with the output', async (t) => {
  const { agent, bus, launcher, probes, settle } = await startAgent(t)
  bus.deliver(assignOf(agent, 'start', { step: STEP }))
  await settle()
  launcher.children[0]!.line('stderr', 'master exited: port 16000 in use')
  launcher.children[0]!.exit(0)
  // Each failed probe takes 2 s: the third ends past the 5 s.
  for (let i = 0; i < 5 && bus.statuses('start').length < 2; i++) await settle(500)
  const s = last(bus, 'start')
  assert.equal(s.state, 'failed')
  assert.equal(s.detail, 'not ready after 5 s (tcp 127.0.0.1:16000)')
  assert.equal(s.output, 'master exited: port 16000 in use')
  assert.equal(probes.tcp.length, 3)
})

test('a step: a readiness command it allows; a command that fails is not waited for', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t)
  launcher.exitCodeOf = (spec) => (spec.command === '/opt/bs/deploy/hbase-ready.sh' ? 0 : undefined)
  bus.deliver(assignOf(agent, 'ready', { step: { ...STEP, ready: { command: 'hbase-ready' } } }))
  await settle()
  launcher.children[0]!.exit(0)
  await settle()
  assert.equal(last(bus, 'ready').state, 'ended')
  assert.deepEqual(launcher.children[1]!.spec, {
    command: '/opt/bs/deploy/hbase-ready.sh',
    args: [],
    env: { PATH: '/usr/bin', HOME: '/home/bs' },
  })
  bus.deliver(assignOf(agent, 'bad', { step: STEP }))
  await settle()
  launcher.children[2]!.line('stderr', 'Error: JAVA_HOME is not set')
  launcher.children[2]!.exit(2)
  await settle()
  const s = last(bus, 'bad')
  assert.deepEqual([s.state, s.detail, s.output], ['failed', 'hbase exited with code 2', 'Error: JAVA_HOME is not set'])
  assert.equal(launcher.children.length, 3, 'no readiness check after a failed command')
})

test("a profile: the pid from an allowed target's pid file, to `benchstream profile capture`", async (t) => {
  const { agent, bus, launcher, files, settle } = await startAgent(t)
  const profile = { target: 'rs', runId: 'exp-1-A-workloada-1', seconds: 5, event: 'cpu' }
  bus.deliver(assignOf(agent, 'nope', { profile: { ...profile, target: 'master' } }))
  await settle()
  assert.match(last(bus, 'nope').detail!, /^agent a1 has no profile target "master" \(--profile-target NAME=PIDFILE\)$/)
  bus.deliver(assignOf(agent, 'p', { profile }))
  await settle()
  const child = launcher.children[0]!
  assert.equal(child.spec.command, NODE)
  assert.deepEqual(
    child.spec.args,
    [
      [BIN, 'profile', 'capture', '--pid', '31337', '--run-id', 'exp-1-A-workloada-1'],
      ['--seconds', '5', '--event', 'cpu', '--label', 'target=rs'],
    ].flat(),
  )
  child.exit(0)
  await settle()
  assert.deepEqual(states(bus, 'p'), ['accepted', 'ended'])
  // A pid file that holds no pid: failed, nothing started.
  files['/var/run/hbase-rs.pid'] = 'not running\n'
  bus.deliver(assignOf(agent, 'p2', { profile }))
  await settle()
  assert.deepEqual(states(bus, 'p2'), ['accepted', 'failed'])
  assert.equal(last(bus, 'p2').detail, 'profile target rs: the pid file holds "not running"')
  assert.equal(launcher.children.length, 1)
})

// ------------------------------------------------------------------ one agent per name

/** How a start ended: undefined while it goes on, 'started', or the error it threw. */
function outcomeOf(started: Promise<void>): { value: 'started' | Error | undefined } {
  const o: { value: 'started' | Error | undefined } = { value: undefined }
  started.then(
    () => (o.value = 'started'),
    (err: Error) => (o.value = err),
  )
  return o
}

function heartbeatOf(name: string, instance: string, host: string, pid: number): AgentHeartbeat {
  return {
    type: 'agent.heartbeat',
    sentAtMs: T0,
    agent: name,
    instance,
    host,
    pid,
    cores: 4,
    labels: {},
    capabilities: {
      drivers: ['benchstream'],
      bindings: ['memory'],
      ycsbBindings: [],
      workloads: [],
      commands: [],
      env: [],
      profileTargets: [],
    },
    clock: null,
    busyWith: null,
    version: '0.0.9',
  }
}

const WINDOW = claimWindowMs(CONFIG.heartbeatMs)

test('a name that heartbeats already: a newcomer on another host refuses to start, naming the live one', async (t) => {
  const topic: FakeBus[] = []
  const live = await startAgent(t, {}, OFFSET, { topic, hostname: 'client-1', pid: 1234 })
  const second = makeAgent(t, {}, OFFSET, { topic, hostname: 'client-2', pid: 5678 })
  const started = outcomeOf(second.agent.start())
  // The live agent answers the claim with a heartbeat at once: refused well before the claim window is over.
  await second.settle()
  await second.settle()
  const err = started.value
  assert.ok(err instanceof Error && isBenchstreamError(err, 'BS_ERR_AGENT_NAME_TAKEN'), String(err))
  assert.equal(
    err.message,
    `agent name a1 is taken: another agent heartbeats under it on the control topic ${CONFIG.infra.topics.control} ` +
      `(instance ${live.agent.instance} on host client-1, pid 1234). Two agents with one name would take each ` +
      `other's work; stop that agent (on client-1: kill 1234, or stop the service that runs it), or start this ` +
      'one with another --name',
  )
  // The newcomer claimed and never heartbeat: a coordinator never saw it as agent a1.
  assert.deepEqual(
    second.bus.published.map((m) => m.type),
    ['agent.claim'],
  )
  assert.equal(second.bus.closed, true)
  assert.equal(live.agent.refused.name_claimed, 1)
  const claim = second.bus.published[0]!
  assert.deepEqual(claim.type === 'agent.claim' && [claim.agent, claim.instance, claim.host, claim.pid], [
    'a1',
    second.agent.instance,
    'client-2',
    5678,
  ])
  assert.deepEqual([...live.bus.invalid, ...second.bus.invalid], [])
})

test('an agent that does not answer claims is heard by its heartbeats within the claim window', async (t) => {
  const rig = makeAgent(t, {}, OFFSET, { hostname: 'client-2', pid: 5678 })
  const started = outcomeOf(rig.agent.start())
  await rig.settle(WINDOW - 100)
  assert.equal(started.value, undefined, 'still listening')
  rig.bus.deliver(heartbeatOf('a1', 'old-version-instance', 'client-9', 99))
  await rig.settle()
  const err = started.value as 'started' | Error | undefined
  assert.ok(err instanceof Error, String(err))
  assert.match(err.message, /^agent name a1 is taken: .*\(instance old-version-instance on host client-9, pid 99\)/)
  assert.equal(rig.bus.heartbeats().length, 0)
})

test("a dead agent's name is taken over: no heartbeat within the claim window, the newcomer registers", async (t) => {
  const topic: FakeBus[] = []
  const dead = await startAgent(t, {}, OFFSET, { topic, hostname: 'client-1', pid: 1234 })
  await dead.agent.stop()
  const beats = dead.bus.heartbeats().length
  const next = makeAgent(t, {}, OFFSET, { topic, hostname: 'client-2', pid: 5678 })
  const started = outcomeOf(next.agent.start())
  await next.settle(WINDOW - 1)
  assert.equal(started.value, undefined, 'listening for the whole window')
  assert.deepEqual(
    next.bus.published.map((m) => m.type),
    ['agent.claim'],
    'no heartbeat before the window is over',
  )
  await next.settle(1)
  for (let i = 0; i < BURST_RTTS.length; i++) await next.settle(50)
  assert.equal(started.value, 'started')
  assert.equal(next.bus.heartbeats().length, BURST_RTTS.length)
  assert.equal(next.bus.heartbeats()[0]!.host, 'client-2')
  assert.equal(dead.bus.heartbeats().length, beats, 'the dead one said nothing more')
  // It works under the name: an assignment to it is accepted.
  next.bus.deliver(runAssign(next.agent, 'exp-1-A-workloada-1/a1'))
  await next.settle()
  assert.equal(last(next.bus, 'exp-1-A-workloada-1/a1').state, 'accepted')
})

test('two agents claiming one name at once: the lower instance id keeps it, the other refuses', async (t) => {
  const low = 'aaaaaaaa-0000-4000-8000-000000000001'
  const high = 'bbbbbbbb-0000-4000-8000-000000000002'
  // Both at once; then each order of joining, where the first claim is heard by the second only if it joined first.
  for (const order of ['together', 'low first', 'high first'] as const) {
    const topic: FakeBus[] = []
    const mk = (instance: string, host: string) =>
      makeAgent(t, {}, OFFSET, { topic, hostname: host, pid: instance === low ? 11 : 22, instance })
    const first = order === 'high first' ? mk(high, 'client-h') : mk(low, 'client-l')
    const firstStarted = outcomeOf(first.agent.start())
    // "low first" / "high first": the first claim is published before the other agent joins the topic.
    if (order !== 'together') await first.settle()
    const second = order === 'high first' ? mk(low, 'client-l') : mk(high, 'client-h')
    const secondStarted = outcomeOf(second.agent.start())
    await first.settle(WINDOW)
    for (let i = 0; i < BURST_RTTS.length; i++) await first.settle(50)
    const [lowRig, lowStarted, highStarted] =
      order === 'high first' ? [second, secondStarted, firstStarted] : [first, firstStarted, secondStarted]
    assert.equal(lowStarted.value, 'started', `${order}: ${String(lowStarted.value)}`)
    const err = highStarted.value
    assert.ok(err instanceof Error && isBenchstreamError(err, 'BS_ERR_AGENT_NAME_TAKEN'), `${order}: ${String(err)}`)
    assert.match(
      err.message,
      new RegExp(
        `^agent name a1 is (being claimed at the same moment by another agent|taken: another agent heartbeats ` +
          `under it) on the control topic .* \\(instance ${low} on host client-l, pid 11\\)`,
      ),
      order,
    )
    assert.ok(lowRig.bus.heartbeats().length >= BURST_RTTS.length, order)
    const loser = order === 'high first' ? first : second
    assert.equal(loser.bus.heartbeats().length, 0, `${order}: the loser never heartbeat`)
    await lowRig.agent.stop()
  }
})

test('two live agents under one name (one silent past its claim): each says so, answers only for itself', async (t) => {
  const { agent, bus, launcher, settle } = await startAgent(t, {}, OFFSET, { hostname: 'client-1' })
  const other = heartbeatOf('a1', 'other-live-instance', 'client-2', 777)
  for (let i = 0; i < 3; i++) bus.deliver(other)
  await settle()
  assert.equal(agent.refused.two_instances, 1, 'said once per other instance, not per heartbeat')
  // Work addressed to the other instance is that one's: no answer from this one, nothing started.
  bus.deliver(runAssign(agent, 'exp-1-A-workloada-1/a1', {}, { instance: 'other-live-instance' }))
  await settle()
  assert.deepEqual(bus.statuses(), [])
  assert.equal(agent.refused.other_live_instance, 1)
  // An instance it never heard of is a predecessor: refused as before.
  bus.deliver(runAssign(agent, 'exp-1-A-workloada-2/a1', {}, { instance: 'instance-before-restart' }))
  await settle()
  assert.equal(last(bus, 'exp-1-A-workloada-2/a1').state, 'refused')
  assert.equal(launcher.children.length, 0)
})
