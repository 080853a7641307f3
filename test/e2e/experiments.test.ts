/**
 * Experiments end to end: agent processes (`benchstream agent`) and the
 * coordinator (`benchstream experiment run|resume`) against the test broker
 * and a server, on the memory binding.
 *
 *  - The example plan (experiments/memory-ab.yaml: B's scans 10 ms slower)
 *    with three agents, one of them SIGKILLed during a run and started again:
 *    that run is incomplete (a client never ended: visible in the runs view
 *    too) and run again under a new id; the comparison holds complete runs
 *    only and finds the scans (the other operations' verdicts are printed, not
 *    asserted, as in compare.test.ts: a client thread held in a slow scan
 *    changes how the others overlap, and how often identical setups are called
 *    different is proved on seeded samples in the unit tests); every compared run is counted
 *    exactly (ClickHouse against what its drivers sent and reported).
 *  - A coordinator SIGKILLed during a run and resumed: the matrix completes,
 *    the run it left running is settled, no run is run twice.
 *  - One agent per name: a second `benchstream agent --name dup` exits
 *    non-zero naming the first (its instance, host and pid) and the fix;
 *    once the first is SIGKILLed, the next one takes the name over and runs
 *    the experiment's work.
 *  - Clocks and refusals: an agent whose clock is 2 s ahead is refused with its
 *    offset named; one 20 ms ahead is accepted and its offset stored with the
 *    run; a plan with an unknown field, a misspelt workload or an agent that
 *    never registers is refused before any run starts.
 *
 * Timing is never asserted beyond what any machine meets: the start skew is
 * printed (and held under a second: without the barrier the clients' starts
 * are whole process starts apart).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test, type TestContext } from 'node:test'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer, type Server } from '../../services/server/main.js'
import { cli } from '../helpers/cli.js'
import { testEnv, waitFor, type TestEnv } from '../helpers/env.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')

interface Agent {
  name: string
  proc: ChildProcess
  log: string[]
}

/** An agent process with the test's environment; stopped when the test ends. */
function startAgent(
  t: TestContext,
  env: Record<string, string>,
  name: string,
  extra: Record<string, string> = {},
): Agent {
  const proc = spawn(process.execPath, [BIN, 'agent', '--name', name, '--heartbeat-ms', '500'], {
    env: { ...process.env, ...env, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const agent: Agent = { name, proc, log: [] }
  for (const s of [proc.stdout, proc.stderr]) s.on('data', (d: Buffer) => agent.log.push(d.toString()))
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
  })
  return agent
}

async function registered(agent: Agent): Promise<void> {
  await waitFor(
    `agent ${agent.name} registered`,
    async () => (agent.log.join('').includes('registered') ? true : undefined),
    60_000,
  )
}

/** The coordinator as a child process (so that it can be killed), with the server's API. */
function coordinator(
  env: Record<string, string>,
  args: string[],
): { proc: ChildProcess; done: Promise<{ code: number | null; out: string }> } {
  const proc = spawn(process.execPath, [BIN, 'experiment', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()))
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const done = new Promise<{ code: number | null; out: string }>((resolve) =>
    proc.on('close', (code) => resolve({ code, out })),
  )
  return { proc, done }
}

async function experiment(svc: Server, id: string): Promise<ExperimentState | undefined> {
  const r = await svc.api!.inject({ method: 'GET', url: `/api/v1/experiments/${id}` })
  return r.statusCode === 200 ? r.json<ExperimentState>() : undefined
}

async function run(svc: Server, runId: string): Promise<RunInfo> {
  const [r] = await queryRows<RunInfo>(svc.ch, 'SELECT * FROM benchstream.runs WHERE run_id = {r:String}', { r: runId })
  return r!
}

async function setUp(t: TestContext): Promise<{ te: TestEnv; svc: Server; env: Record<string, string> }> {
  const te = testEnv()
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  return { te, svc, env: { ...te.env, BENCHSTREAM_API_URL: svc.apiUrl! } }
}

test(
  'the memory example with three agents, one killed mid-run and started again: the run is retried, the scans ' +
    'regress, every compared run counted exactly',
  { timeout: 300_000 },
  async (t) => {
    const { te, svc, env } = await setUp(t)
    const agents = new Map<string, Agent>()
    for (const name of ['a1', 'a2', 'a3']) agents.set(name, startAgent(t, env, name))
    for (const a of agents.values()) await registered(a)
    const id = `mem-${Date.now().toString(36)}`
    const c = coordinator(env, ['run', 'experiments/memory-ab.yaml', '--id', id, '--out', te.dataDir])

    // The third run: once its clients are going, kill the first one's agent, then start it again.
    const killed = await waitFor(
      'the third run going',
      async () => {
        const s = await experiment(svc, id)
        const attempt = s?.cells[2]?.attempts[0]
        return attempt !== undefined &&
          attempt.state === 'running' &&
          attempt.clients.every((x) => x.state === 'started')
          ? attempt
          : undefined
      },
      120_000,
      100,
    )
    const victim = killed.clients[0]!.agent
    agents.get(victim)!.proc.kill('SIGKILL')
    await new Promise((r) => setTimeout(r, 1000))
    agents.set(victim, startAgent(t, env, victim))
    const { code, out } = await c.done
    assert.equal(code, 0, out)

    const s = (await experiment(svc, id))!
    assert.equal(s.status, 'done', out)
    const cell = s.cells[2]!
    assert.deepEqual(
      cell.attempts.map((a) => a.state),
      ['incomplete', 'done'],
      `the run of the killed agent: ${JSON.stringify(cell.attempts.map((a) => a.reason))}`,
    )
    assert.match(cell.attempts[0]!.reason ?? '', new RegExp(`agent ${victim} (went silent|restarted)`))
    assert.equal(cell.attempts[1]!.runId, `${killed.runId.replace(/-\d+$/, '')}-${cell.repetition}.2`)
    // In ClickHouse the killed run is visibly incomplete: its clients were three, the killed one never ended.
    const lost = await run(svc, killed.runId)
    assert.equal(lost.expected_clients, 3)
    assert.ok(lost.clients_ended < 3, `clients ended ${lost.clients_ended} of 3`)
    process.stdout.write(`# killed ${victim} during ${killed.runId}: ${cell.attempts[0]!.reason}\n`)

    // Every compared run is complete and counted exactly: ClickHouse = what its drivers sent = what they reported.
    const done = s.cells.flatMap((x) => x.attempts.filter((a) => a.state === 'done'))
    assert.equal(done.length, s.cells.length)
    for (const a of done) {
      assert.equal(a.counted, a.sent, `${a.runId}: counted ${a.counted} of ${a.sent}`)
      assert.equal(
        a.clients.reduce((n, x) => n + (x.operations ?? 0), 0),
        a.counted,
        `${a.runId}: the drivers' own reports`,
      )
      const r = await run(svc, a.runId)
      assert.deepEqual([r.clients, r.clients_ended, r.expected_clients], [3, 3, 3], a.runId)
    }
    const skews = done.map((a) => a.startSkewMs!)
    process.stdout.write(`# start skew between a run's 3 clients, ms: ${skews.map((x) => x.toFixed(1)).join(' ')}\n`)
    assert.ok(
      skews.every((x) => x >= 0 && x < 1000),
      `start skews ${skews.join(', ')}`,
    )

    // The comparison: complete runs only; the scans regress, 100x slower, and no SCAN figure improves. The other
    // operations' verdicts are printed: a clean-clone CI run with one core busy once saw READ p95 (tens of µs) called
    // a regression here. With 10 ms scans the client threads overlap differently, and another test file runs beside
    // this one; neither is the wiring this test is about.
    const [cmp] = s.comparisons
    assert.ok(cmp !== undefined && cmp.error === undefined, JSON.stringify(cmp))
    const compared = [...cmp.baselineRuns, ...cmp.candidateRuns]
    assert.equal(compared.length, 8)
    assert.ok(!compared.includes(killed.runId), 'the incomplete run is never compared')
    assert.ok(cmp.regressions.includes('SCAN p50 (µs)'), `regressions: ${cmp.regressions.join(', ')}`)
    assert.deepEqual(
      cmp.improvements.filter((r) => r.startsWith('SCAN ')),
      [],
      'no SCAN figure improves',
    )
    process.stdout.write(
      `# other operations: regressions [${cmp.regressions.filter((r) => !r.startsWith('SCAN ')).join(', ')}], ` +
        `improvements [${cmp.improvements.filter((r) => !r.startsWith('SCAN ')).join(', ')}]\n`,
    )
    const md = readFileSync(path.join(te.dataDir, id, 'compare-A-vs-B-workloada.md'), 'utf8')
    assert.match(md, /^\| SCAN p50 \(µs\) \| .* \| regression \(p=/m)
    assert.ok(existsSync(path.join(te.dataDir, id, 'comparison.md')))
    process.stdout.write(`# ${id}: ${cmp.regressions.join(', ')}\n`)
  },
)

test(
  'a coordinator killed during a run and resumed: the matrix completes, no run twice',
  { timeout: 240_000 },
  async (t) => {
    const { te, svc, env } = await setUp(t)
    for (const name of ['r1', 'r2']) await registered(startAgent(t, env, name))
    const planFile = path.join(te.dataDir, 'resume.json')
    writeFileSync(
      planFile,
      JSON.stringify({
        version: 1,
        name: 'resume',
        binding: 'memory',
        clients: 2,
        target: 200,
        seconds: 2,
        repetitions: 2,
        workloads: [{ file: 'workloada', properties: { recordcount: 100 } }],
        setups: [{ name: 'A' }, { name: 'B', labels: { version: 'b' } }],
        compare: [],
      }),
    )
    const id = `res-${Date.now().toString(36)}`
    const first = coordinator(env, ['run', planFile, '--id', id, '--out', te.dataDir])
    const inFlight = await waitFor(
      'the second run going',
      async () => {
        const a = (await experiment(svc, id))?.cells[1]?.attempts[0]
        return a?.state === 'running' && a.clients.every((x) => x.state === 'started') ? a.runId : undefined
      },
      120_000,
      100,
    )
    first.proc.kill('SIGKILL')
    await first.done
    const resumed = await cli(env, ['experiment', 'resume', id, '--out', te.dataDir])
    assert.equal(resumed.code, 0, resumed.stdout + resumed.stderr)
    const s = (await experiment(svc, id))!
    assert.equal(s.status, 'done')
    // Every cell ran exactly once: the run in flight was settled (its clients went on and ended), not run again.
    assert.deepEqual(
      s.cells.map((c) => c.attempts.map((a) => a.state)),
      s.cells.map(() => ['done']),
    )
    assert.match(s.notes.join('\n'), new RegExp(`${inFlight} .*settled on resume: done`))
    const runs = await queryRows<{ n: string }>(
      svc.ch,
      "SELECT count() AS n FROM benchstream.runs WHERE labels['experiment'] = {id:String}",
      { id },
    )
    assert.equal(Number(runs[0]!.n), s.cells.length, 'as many runs in ClickHouse as cells: none twice')
  },
)

test(
  'clocks and refusals: 2 s ahead is refused with its offset named, 20 ms ahead is stored; bad plans and ' +
    'missing agents are refused before any run',
  { timeout: 180_000 },
  async (t) => {
    const { te, svc, env } = await setUp(t)
    const far = startAgent(t, env, 'far', { BENCHSTREAM_AGENT_CLOCK_SKEW_MS: '2000' })
    const near = startAgent(t, env, 'near', { BENCHSTREAM_AGENT_CLOCK_SKEW_MS: '20' })
    await registered(far)
    await registered(near)
    const plan = (o: Record<string, unknown>): string => {
      const f = path.join(te.dataDir, `plan-${Math.random().toString(36).slice(2)}.json`)
      writeFileSync(
        f,
        JSON.stringify({
          version: 1,
          name: 'clock',
          binding: 'memory',
          clients: ['near'],
          seconds: 1,
          repetitions: 1,
          agentWaitS: 3,
          workloads: [{ file: 'workloada', properties: { recordcount: 100 } }],
          setups: [{ name: 'A' }],
          compare: [],
          ...o,
        }),
      )
      return f
    }
    const refused = await cli(env, ['experiment', 'run', plan({ clients: ['far'] })])
    assert.equal(refused.code, 1)
    // The broker stamped the sample between send and acknowledgement: 2000 ms to within half the round trip.
    const m = /BS_ERR_AGENT: .*agent far's clock is ([\d.]+) ms ahead of the broker's \(±([\d.]+) ms\)/.exec(
      refused.stderr,
    )
    assert.ok(m !== null, refused.stderr)
    assert.ok(Math.abs(Number(m[1]) - 2000) <= Number(m[2]) + 1, `offset ${m[1]} ± ${m[2]} ms`)
    assert.match(refused.stderr, /chrony/)

    const id = `clk-${Date.now().toString(36)}`
    const ok = await cli(env, ['experiment', 'run', plan({}), '--id', id, '--out', te.dataDir])
    assert.equal(ok.code, 0, ok.stdout + ok.stderr)
    const s = (await experiment(svc, id))!
    const runId = s.cells[0]!.attempts[0]!.runId
    const r = await run(svc, runId)
    process.stdout.write(`# agent near, its clock moved 20 ms ahead: stored offset ${r.clock_offset_max_ms} ms\n`)
    assert.ok(
      r.clock_offset_max_ms !== null && r.clock_offset_max_ms > 0 && r.clock_offset_max_ms < 40,
      `${r.clock_offset_max_ms}`,
    )

    // Before anything runs: the plan's own mistakes, a misspelt workload, an agent that never comes.
    const unknown = await cli(env, ['experiment', 'run', plan({ repetitons: 3 })])
    assert.equal(unknown.code, 1)
    assert.match(
      unknown.stderr,
      /BS_ERR_PLAN: .* is not a valid plan:\n {2}repetitons: is not a field of an experiment plan/,
    )
    const misspelt = await cli(env, ['experiment', 'run', plan({ workloads: [{ file: 'workloadz' }] })])
    assert.equal(misspelt.code, 1)
    assert.match(
      misspelt.stderr,
      /BS_ERR_PLAN: workloads: no agent has the workload file "workloadz"; did you mean workloada\?/,
    )
    const ghost = await cli(env, ['experiment', 'run', plan({ clients: ['ghost'], agentWaitS: 2 })])
    assert.equal(ghost.code, 1)
    assert.match(ghost.stderr, /BS_ERR_AGENT: the plan cannot start after waiting 2 s: agent ghost is not heartbeating/)
    const listed = await svc.api!.inject({ method: 'GET', url: '/api/v1/experiments' })
    assert.deepEqual(
      listed.json<{ experiments: Array<{ id: string }> }>().experiments.map((e) => e.id),
      [id],
      'no refused plan left an experiment behind',
    )
  },
)

test(
  'one agent per name: a second agent under a live name exits naming it; a dead one is taken over and works',
  { timeout: 180_000 },
  async (t) => {
    const { te, svc, env } = await setUp(t)
    const first = startAgent(t, env, 'dup')
    await registered(first)
    const second = startAgent(t, env, 'dup')
    const code = await new Promise<number | null>((resolve) => second.proc.on('close', resolve))
    const said = second.log.join('')
    process.stdout.write(`# the second agent dup: exit ${code}: ${said.trim().split('\n').at(-1)}\n`)
    assert.equal(code, 1, said)
    const pid = String(first.proc.pid)
    const host = os.hostname()
    assert.ok(
      said.includes(
        `BS_ERR_AGENT_NAME_TAKEN: agent name dup is taken: another agent heartbeats under it on the control topic ` +
          `${env.BENCHSTREAM_TOPIC_CONTROL} (instance `,
      ),
      said,
    )
    assert.ok(
      said.includes(
        ` on host ${host}, pid ${pid}). Two agents with one name would take each other's work; stop that agent ` +
          `(on ${host}: kill ${pid}, or stop the service that runs it), or start this one with another --name`,
      ),
      said,
    )
    assert.ok(!said.includes('registered'), 'it never registered')
    assert.equal(first.proc.exitCode, null, 'the first one runs on')

    // The first dies; the next agent under its name takes it over and runs the experiment's run.
    first.proc.kill('SIGKILL')
    const third = startAgent(t, env, 'dup')
    await registered(third)
    const planFile = path.join(te.dataDir, 'dup.json')
    writeFileSync(
      planFile,
      JSON.stringify({
        version: 1,
        name: 'dup',
        binding: 'memory',
        clients: ['dup'],
        seconds: 1,
        repetitions: 1,
        agentWaitS: 10,
        workloads: [{ file: 'workloada', properties: { recordcount: 100 } }],
        setups: [{ name: 'A' }],
        compare: [],
      }),
    )
    const id = `dup-${Date.now().toString(36)}`
    const ran = await cli(env, ['experiment', 'run', planFile, '--id', id, '--out', te.dataDir])
    assert.equal(ran.code, 0, ran.stdout + ran.stderr)
    const s = (await experiment(svc, id))!
    assert.deepEqual(
      s.cells.map((c) => c.attempts.map((a) => a.state)),
      [['done']],
    )
    assert.ok(
      s.notes.every((n) => !n.includes('live instances')),
      s.notes.join('\n'),
    )
    assert.equal(
      ran.stdout.trimEnd().split('\n').at(-1),
      'Nothing compared: all 1 runs complete; the plan compares nothing',
    )

    // Undecided: setup C's runs fail (a property the driver refuses), A and B have one run each.
    const undecidedPlan = path.join(te.dataDir, 'undecided.json')
    writeFileSync(
      undecidedPlan,
      JSON.stringify({
        version: 1,
        name: 'undecided',
        binding: 'memory',
        clients: ['dup'],
        seconds: 1,
        repetitions: 1,
        retries: 0,
        agentWaitS: 10,
        workloads: [{ file: 'workloada', properties: { recordcount: 100 } }],
        setups: [
          { name: 'A' },
          { name: 'B', properties: { 'memory.delay.scan': 10_000 } },
          { name: 'C', properties: { fieldcount: 'none' } },
        ],
        compare: [
          { baseline: 'A', candidate: 'B' },
          { baseline: 'A', candidate: 'C' },
        ],
      }),
    )
    const uid = `und-${Date.now().toString(36)}`
    const undecided = await cli(env, ['experiment', 'run', undecidedPlan, '--id', uid, '--out', te.dataDir])
    const last = undecided.stdout.trimEnd().split('\n').at(-1)!
    process.stdout.write(`# experiment run ${uid}: exit ${undecided.code}: ${last}\n`)
    assert.equal(undecided.code, 5, undecided.stdout + undecided.stderr)
    assert.match(
      last,
      new RegExp(
        '^Undecided: 1 of 3 runs failed; B vs A, workloada: .+ not testable \\(n = 1 \\+ 1\\); C vs A, workloada ' +
          'not compared \\(no complete run of C for workloada\\)$',
      ),
    )
    const md = readFileSync(path.join(te.dataDir, uid, 'comparison.md'), 'utf8')
    assert.ok(md.includes(`\n**${last.replace(/^Undecided: /, 'Undecided:** ')}.\n`), md)
    assert.doesNotMatch(md, /No regression/)
    const u = (await experiment(svc, uid))! as ExperimentState & { decision: { outcome: string; headline: string } }
    assert.deepEqual([u.decision.outcome, u.decision.headline], ['undecided', last])
  },
)
