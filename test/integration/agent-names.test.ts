/**
 * One agent per name, over the real control topic: agents built as
 * `benchstream agent` builds them (services/agent/main.ts), with the Kafka
 * control bus on the test broker, each on its own topic, their host injected
 * so that two agents under one name run "on different hosts".
 *
 * - A live agent's name: the newcomer on another host refuses to start,
 *   within the claim window, naming the live one's instance, host and pid.
 * - A dead agent's name: taken over by the next agent, whose heartbeats are
 *   then the only ones under the name (a reader of the topic sees them).
 * - Two agents started at the same moment under one name: one starts (the
 *   lower instance id), the other refuses naming it, whoever joined first.
 *
 * The assertions hold on a busy machine: the live agent's answer to a claim
 * must come within the claim window (2 s), and that is the window the product
 * relies on too.
 */
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { pino } from 'pino'
import type { AgentHeartbeat, ControlMessage } from '../../schemas/experiment-control.v1.js'
import { KafkaControlBus } from '../../services/adapters/kafka/control-bus.js'
import { ChildProcessLauncher, netProbes } from '../../services/adapters/process/launcher.js'
import { build, type Agent } from '../../services/agent/app.js'
import { listWorkloads, readAgentConfig, resolveWorkload } from '../../services/agent/config.js'
import { claimWindowMs } from '../../services/core/experiments/agent-name.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { testEnv, waitFor } from '../helpers/env.js'

const HEARTBEAT_MS = 500

/** An agent as main.ts wires it, on `host` with `pid` as its heartbeats say; stopped when the test ends. */
function agentOn(
  t: TestContext,
  env: Record<string, string>,
  name: string,
  host: string,
  pid: number,
  instance?: string,
): Agent {
  const cfg = readAgentConfig(['--name', name, '--heartbeat-ms', String(HEARTBEAT_MS)], env)
  assert.ok(cfg !== 'help')
  const agent = build(cfg, {
    bus: KafkaControlBus.create(cfg.infra.kafka, cfg.infra.topics.control, `agent-${name}`, cfg.infra.topics),
    launcher: new ChildProcessLauncher(),
    probes: netProbes,
    now: () => Date.now(),
    log: pino({ level: 'silent' }),
    host: { hostname: host, pid, cores: 2, version: '0.1.0' },
    ...(instance === undefined ? {} : { instance }),
    benchstream: { command: process.execPath, args: [] },
    env: {},
    listWorkloads: () => listWorkloads(cfg.workloadDirs),
    resolveWorkload: (w) => resolveWorkload(cfg.workloadDirs, w),
    readFile: () => '',
  })
  t.after(() => agent.stop().catch(() => undefined))
  return agent
}

/** A reader of the control topic: every heartbeat under `name` from now on. */
async function listen(t: TestContext, env: Record<string, string>, name: string): Promise<AgentHeartbeat[]> {
  const cfg = readAgentConfig(['--name', 'listener'], env)
  assert.ok(cfg !== 'help')
  const bus = KafkaControlBus.create(cfg.infra.kafka, cfg.infra.topics.control, 'listener', cfg.infra.topics)
  const seen: AgentHeartbeat[] = []
  await bus.start({
    onMessage: (m: ControlMessage) => {
      if (m.type === 'agent.heartbeat' && m.agent === name) seen.push(m)
    },
  })
  t.after(() => bus.close())
  return seen
}

async function startError(agent: Agent): Promise<Error> {
  const err = await agent.start().then(
    () => undefined,
    (e: unknown) => e,
  )
  assert.ok(err instanceof Error && isBenchstreamError(err, 'BS_ERR_AGENT_NAME_TAKEN'), `refused: ${String(err)}`)
  return err
}

test(
  "a live agent's name: the newcomer on another host refuses, naming the live one",
  { timeout: 90_000 },
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const seen = await listen(t, te.env, 'dup')
    const live = agentOn(t, te.env, 'dup', 'host-a', 4101)
    await live.start()
    const newcomer = agentOn(t, te.env, 'dup', 'host-b', 4102)
    const t0 = Date.now()
    const err = await startError(newcomer)
    const tookMs = Date.now() - t0
    process.stdout.write(`# the newcomer refused after ${tookMs} ms (claim window ${claimWindowMs(HEARTBEAT_MS)} ms)\n`)
    assert.equal(
      err.message,
      `agent name dup is taken: another agent heartbeats under it on the control topic ` +
        `${te.env.BENCHSTREAM_TOPIC_CONTROL} (instance ${live.instance} on host host-a, pid 4101). Two agents with ` +
        "one name would take each other's work; stop that agent (on host-a: kill 4101, or stop the service that " +
        'runs it), or start this one with another --name',
    )
    assert.equal(live.refused.name_claimed, 1, 'the live one heard the claim and answered it')
    // Nothing under the name ever came from the newcomer.
    await new Promise((r) => setTimeout(r, 2 * HEARTBEAT_MS))
    assert.ok(seen.length > 0)
    assert.deepEqual([...new Set(seen.map((h) => `${h.host} ${h.instance}`))], [`host-a ${live.instance}`])
  },
)

test("a dead agent's name is taken over by the next agent", { timeout: 90_000 }, async (t) => {
  const te = testEnv()
  t.after(te.cleanup)
  const seen = await listen(t, te.env, 'phoenix')
  const first = agentOn(t, te.env, 'phoenix', 'host-a', 4201)
  await first.start()
  await first.stop()
  const next = agentOn(t, te.env, 'phoenix', 'host-c', 4203)
  await next.start()
  const from = seen.length
  await waitFor('heartbeats of the new agent', async () => (seen.length >= from + 2 ? true : undefined), 30_000)
  assert.deepEqual(
    [...new Set(seen.slice(from).map((h) => `${h.host} ${h.pid}`))],
    ['host-c 4203'],
    'only the new agent heartbeats under the name',
  )
  assert.equal(next.refused.two_instances, undefined)
})

test(
  'two agents started at the same moment under one name: one starts, the other names it',
  { timeout: 90_000 },
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const low = '00000000-0000-4000-8000-00000000000a'
    const high = 'ffffffff-0000-4000-8000-00000000000b'
    const a = agentOn(t, te.env, 'twin', 'host-a', 4301, high)
    const b = agentOn(t, te.env, 'twin', 'host-b', 4302, low)
    const results = await Promise.allSettled([a.start(), b.start()])
    const started = results.flatMap((r, i) => (r.status === 'fulfilled' ? [[a, b][i]!] : []))
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []))
    assert.equal(started.length, 1, `exactly one starts: ${refused.map(String).join('; ')}`)
    assert.equal(refused.length, 1)
    const winner = started[0]!
    const [host, pid] = winner === a ? ['host-a', 4301] : ['host-b', 4302]
    const err = refused[0]!
    assert.ok(isBenchstreamError(err, 'BS_ERR_AGENT_NAME_TAKEN'), String(err))
    const m = new RegExp(
      '^agent name twin is (being claimed at the same moment by another agent|taken: another agent heartbeats ' +
        `under it) on the control topic ${te.env.BENCHSTREAM_TOPIC_CONTROL} \\(instance ${winner.instance} on host ` +
        `${host}, pid ${pid}\\)`,
    ).exec(err.message)
    assert.ok(m !== null, err.message)
    // Claims that overlapped are decided by the instance ids; otherwise the first to finish its claim keeps the name.
    if (m[1]!.startsWith('being claimed')) assert.equal(winner.instance, low)
    process.stdout.write(`# ${winner === b ? 'the lower' : 'the higher'} instance id kept the name: ${m[1]}\n`)
  },
)
