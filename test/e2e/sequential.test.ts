/**
 * Repetitions until decided end to end: two experiments of the memory binding
 * at once, each with its own agent, run by `benchstream experiment run` with
 * `repetitions: { min, max }`:
 *
 *  - a large change (B's scans 10 ms slower, against sub-millisecond ones),
 *    the scans' p50 named: decided a regression before max, at the first or
 *    second look, and no more rounds run;
 *  - no change (two identical setups), every figure to decide at the default
 *    minEffect of 1 %: not all can be proven unchanged within 1 % by 4 runs
 *    of 240 operations, so it runs to max and says, for what stays undecided, what
 *    it could have found.
 *
 * comparison.md and the stored state say how many runs each setup took and
 * why it stopped. The design's error rates and power are proved on seeded
 * samples (test/unit/sequential-design.test.ts); this checks the wiring.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { test, type TestContext } from 'node:test'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer } from '../../services/server/main.js'
import { cli } from '../helpers/cli.js'
import { testEnv, waitFor } from '../helpers/env.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')

function agent(t: TestContext, env: Record<string, string>, name: string): { proc: ChildProcess; out: string[] } {
  const proc = spawn(process.execPath, [BIN, 'agent', '--name', name, '--heartbeat-ms', '500'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const out: string[] = []
  for (const s of [proc.stdout, proc.stderr]) s.on('data', (d: Buffer) => out.push(d.toString()))
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
  })
  return { proc, out }
}

test(
  'repetitions { min, max }: a large change stops early, no change runs to max and says what it could have found',
  { timeout: 420_000 },
  async (t) => {
    const t0 = Date.now()
    const te = testEnv()
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const env = { ...te.env, BENCHSTREAM_API_URL: svc.apiUrl! }
    for (const name of ['big', 'none']) {
      const a = agent(t, env, name)
      await waitFor(
        `agent ${name} registered`,
        async () => (a.out.join('').includes('registered') ? true : undefined),
        60_000,
      )
    }
    const common = {
      version: 1,
      binding: 'memory',
      threads: 2,
      target: 400,
      operations: 240,
      workloads: [
        {
          file: 'workloada',
          properties: {
            recordcount: 500,
            readproportion: 0.5,
            updateproportion: 0.3,
            scanproportion: 0.2,
            maxscanlength: 20,
          },
        },
      ],
    }
    const planFile = (name: string, plan: Record<string, unknown>): string => {
      const f = path.join(te.dataDir, `${name}.json`)
      writeFileSync(f, JSON.stringify({ ...common, name, ...plan }))
      return f
    }
    const big = planFile('big', {
      clients: ['big'],
      repetitions: { min: 3, max: 6 },
      figures: ['SCAN p50'],
      setups: [{ name: 'A' }, { name: 'B', properties: { 'memory.delay.scan': 10_000 } }],
    })
    const none = planFile('none', {
      clients: ['none'],
      repetitions: { min: 3, max: 4 },
      setups: [{ name: 'A' }, { name: 'A2' }],
    })
    const stamp = Date.now().toString(36)
    const [rb, rn] = await Promise.all([
      cli(env, ['experiment', 'run', big, '--id', `big-${stamp}`, '--out', te.dataDir]),
      cli(env, ['experiment', 'run', none, '--id', `none-${stamp}`, '--out', te.dataDir]),
    ])
    assert.equal(rb.code, 0, rb.stdout + rb.stderr)
    assert.equal(rn.code, 0, rn.stdout + rn.stderr)
    const state = async (id: string): Promise<ExperimentState> =>
      (await svc.api!.inject({ method: 'GET', url: `/api/v1/experiments/${id}` })).json<ExperimentState>()

    const sb = await state(`big-${stamp}`)
    const db = sb.comparisons[0]!.decisions!
    const scan = db.figures.find((f) => f.label === 'SCAN p50 (µs)')!
    process.stdout.write(
      `# large change: ${sb.comparisons[0]!.baselineRuns.length} + ${sb.comparisons[0]!.candidateRuns.length} runs, ` +
        `looks ${sb.looks!.map((l) => `${l.round}:${l.stop ?? 'go on'}`).join(' ')}; ${scan.reason}\n`,
    )
    assert.equal(sb.status, 'done')
    assert.equal(scan.decision, 'regression', scan.reason)
    assert.equal(db.stop, 'decided')
    assert.ok(db.round < 6, `stopped after ${db.round} of at most 6 rounds`)
    assert.equal(sb.cells.length, 2 * db.round, 'no round after the one that decided')
    assert.equal(sb.comparisons[0]!.candidateRuns.length, db.round)
    const mdBig = readFileSync(path.join(te.dataDir, sb.id, 'comparison.md'), 'utf8')
    assert.match(
      mdBig,
      new RegExp(`\\| A \\| B \\| workloada \\| ${db.round} \\+ ${db.round} \\| every figure decided \\|`),
    )

    const sn = await state(`none-${stamp}`)
    const dn = sn.comparisons[0]!.decisions!
    const open = dn.figures.filter((f) => f.decision === 'undecided')
    process.stdout.write(
      `# no change: ${sn.comparisons[0]!.baselineRuns.length} + ${sn.comparisons[0]!.candidateRuns.length} runs, ` +
        `${dn.figures.length - open.length} of ${dn.figures.length} figures decided; e.g. ${open[0]?.label}: ` +
        `${open[0]?.reason}\n`,
    )
    assert.equal(sn.status, 'done')
    assert.equal(dn.stop, 'max')
    assert.deepEqual([sn.comparisons[0]!.baselineRuns.length, sn.comparisons[0]!.candidateRuns.length], [4, 4])
    assert.deepEqual(
      sn.looks!.map((l) => [l.round, l.stop]),
      [
        [3, null],
        [4, 'max'],
      ],
    )
    assert.ok(open.length > 0)
    assert.ok(open.every((f) => f.detectable === null || f.detectable.increasePercent > 0))
    const mdNone = readFileSync(path.join(te.dataDir, sn.id, 'comparison.md'), 'utf8')
    assert.match(mdNone, /\| A \| A2 \| workloada \| 4 \+ 4 \| max repetitions reached \|/)
    assert.match(mdNone, /could have found \+[\d.]+% or -[\d.]+% with 80% power/)
    assert.match(rn.stdout, /3 to 4 until decided repetitions/)
    process.stdout.write(`# both in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
  },
)
