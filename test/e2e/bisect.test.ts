/**
 * `benchstream experiment bisect` end to end, on a known outcome:
 * experiments/memory-bisect.yaml (versions 1.0.0 to 1.0.8 of the memory
 * binding, scans 10 ms slower from 1.0.5 on, through the plan's versions.from)
 * with one agent and a server, as a user runs it. The coordinator is killed
 * (SIGKILL) during the first step after the ends and the bisection resumed
 * with --resume: it must find 1.0.5, after the ends in at most 3 steps
 * (ceil(log2(8))), each step an experiment of its own whose comparison
 * decided the scans' p50 (a regression, or no change proven within the plan's
 * minEffect), the chain in the stored state, on `experiment status` and in
 * the coordinator's output.
 *
 * A 10 ms scan against sub-millisecond ones is far beyond any noise: runs of
 * 240 operations at 400 ops/s suffice, and the wiring is what is tested. The
 * statistics are proved on seeded samples (test/unit/sequential-design.test.ts,
 * test/unit/bisect.test.ts).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { test, type TestContext } from 'node:test'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer, type Server } from '../../services/server/main.js'
import { openBrowser } from '../helpers/chromium.js'
import { cli } from '../helpers/cli.js'
import { testEnv, waitFor } from '../helpers/env.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')

/** A row of the page's table, as the page's script draws it (the project's tsconfig has no DOM library). */
interface Row {
  dataset: Record<string, string | undefined>
  querySelector(selector: string): { getAttribute(name: string): string | null } | null
}

function start(t: TestContext, env: Record<string, string>, args: string[]): { proc: ChildProcess; out: string[] } {
  const proc = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: repoRoot(),
  })
  const out: string[] = []
  for (const s of [proc.stdout, proc.stderr]) s.on('data', (d: Buffer) => out.push(d.toString()))
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
  })
  return { proc, out }
}

async function stored(svc: Server, id: string): Promise<ExperimentState | undefined> {
  const r = await svc.api!.inject({ method: 'GET', url: `/api/v1/experiments/${id}` })
  return r.statusCode === 200 ? r.json<ExperimentState>() : undefined
}

test(
  'bisect finds 1.0.5 in experiments/memory-bisect.yaml in at most 3 steps after the ends, through a crash and ' +
    '--resume',
  { timeout: 420_000 },
  async (t) => {
    const t0 = Date.now()
    const te = testEnv()
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const env = { ...te.env, BENCHSTREAM_API_URL: svc.apiUrl! }
    const agent = start(t, env, ['agent', '--name', 'a1', '--heartbeat-ms', '500'])
    await waitFor(
      'agent a1 registered',
      async () => (agent.out.join('').includes('registered') ? true : undefined),
      60_000,
    )

    const id = `mb-${Date.now().toString(36)}`
    const args = ['experiment', 'bisect', 'experiments/memory-bisect.yaml', '--good', '1.0.0', '--bad', '1.0.8']
    const first = start(t, env, [...args, '--id', id, '--out', te.dataDir])
    // The first step after the ends: once a run of it is going (its client past the start barrier: one killed
    // before would hold its agent at the barrier for minutes), the coordinator dies.
    const killedIn = await waitFor(
      'a run of the first step after the ends going',
      async () => {
        const s = await stored(svc, `${id}-s1`)
        return s?.cells.some((c) =>
          c.attempts.some((a) => a.state === 'running' && a.clients.every((x) => x.state === 'started')),
        )
          ? s.id
          : undefined
      },
      240_000,
      100,
    )
    first.proc.kill('SIGKILL')
    await new Promise((r) => first.proc.once('close', r))
    const crashed = (await stored(svc, id))!
    assert.equal(crashed.status, 'running', 'a killed coordinator leaves the bisection as it was')
    assert.deepEqual(
      crashed.bisect!.chain.map((s) => [s.version, s.outcome]),
      [
        ['1.0.8', 'bad'],
        ['1.0.4', 'running'],
      ],
    )

    const resumed = await cli(env, ['experiment', 'bisect', '--resume', id, '--out', te.dataDir])
    assert.equal(resumed.code, 0, resumed.stdout + resumed.stderr)
    const s = (await stored(svc, id))!
    const b = s.bisect!
    process.stdout.write(`# ${resumed.stdout.replace(/\n/g, '\n# ')}\n`)
    assert.equal(s.status, 'done')
    assert.deepEqual(b.result && [b.result.kind, b.result.firstBad, b.result.lastGood], ['found', '1.0.5', '1.0.4'])
    assert.ok(b.chain.length - 1 <= 3, `${b.chain.length - 1} steps after the ends`)
    assert.deepEqual(
      b.chain.map((x) => [x.version, x.outcome]),
      [
        ['1.0.8', 'bad'],
        ['1.0.4', 'good'],
        ['1.0.6', 'bad'],
        ['1.0.5', 'bad'],
      ],
    )
    assert.deepEqual(b.figures, ['SCAN p50'])
    for (const step of b.chain) {
      const e = (await stored(svc, step.experiment))!
      assert.equal(e.status, 'done', `${step.experiment}: ${e.notes.join('; ')}`)
      const [c] = e.comparisons
      assert.ok(c !== undefined && c.decisions !== undefined, step.experiment)
      assert.deepEqual([c.baseline, c.candidate], ['1.0.0', step.version])
      const f = c.decisions.figures.find((x) => x.label === 'SCAN p50 (µs)')!
      assert.equal(f.decision, step.outcome === 'bad' ? 'regression' : 'no change', `${step.version}: ${f.reason}`)
      if (step.outcome === 'bad') assert.ok(f.changePercent! > 1000, `${step.version}: ${f.changePercent}%`)
      assert.equal(step.figure, 'workloada:SCAN p50 (µs)')
      // Interleaved repetitions until decided: at least 3 a side, and what the chain says is what ran.
      assert.ok(c.baselineRuns.length >= 3 && c.baselineRuns.length === step.runs.baseline)
    }
    // The step the coordinator died in was resumed, not run again from scratch: its runs ran once each.
    const resumedStep = (await stored(svc, killedIn))!
    assert.match(resumedStep.notes.join('\n'), /resumed at/)
    assert.match(resumed.stdout, /^1 {4,}1\.0\.4 .* good \(no change\)$/m)
    assert.match(resumed.stdout, /first bad version: 1\.0\.5 \(last good 1\.0\.4\), after 3 steps beside the ends/)

    const status = await cli(env, ['experiment', 'status', id])
    assert.equal(status.code, 0, status.stderr)
    assert.match(status.stdout, /^ends +1\.0\.8 .* bad \(regression\)$/m)

    // The experiment page: the chain, each step linked to its experiment, whose comparison says why it stopped.
    const browser = await openBrowser(t)
    const page = await browser.newPage()
    await page.goto(`${svc.apiUrl}/experiments?id=${id}`)
    await page.waitForSelector('#bisect-table tbody tr[data-version="1.0.5"]')
    const drawn = await page.$$eval('#bisect-table tbody tr', (rows) =>
      rows.map((tr) => {
        const row = tr as unknown as Row
        return [row.dataset.version, row.dataset.outcome, row.querySelector('a')?.getAttribute('href')]
      }),
    )
    assert.deepEqual(
      drawn,
      b.chain.map((x) => [x.version, x.outcome, `/experiments?id=${x.experiment}`]),
    )
    assert.match((await page.textContent('#bisect-result')) ?? '', /first bad version: 1\.0\.5 \(last good 1\.0\.4\)/)
    await page.goto(`${svc.apiUrl}/experiments?id=${b.chain[0]!.experiment}`)
    await page.waitForSelector('#comparisons-table td[data-stop]')
    assert.match((await page.textContent('#comparisons-table td[data-stop]')) ?? '', /every figure decided/)
    const runs = b.chain.reduce((n, x) => n + x.runs.baseline + x.runs.candidate, 0)
    for (const step of b.chain) {
      const e = (await stored(svc, step.experiment))!
      const attempts = e.cells.flatMap((c) => c.attempts).sort((x, y) => (x.startedAtMs ?? 0) - (y.startedAtMs ?? 0))
      // Per run: from its start instant to its end as the coordinator saw it, and from there to the next start.
      const split = attempts.map((a, i) => {
        const next = attempts[i + 1]?.startedAtMs ?? undefined
        const run = ((a.endedAtMs ?? 0) - (a.startedAtMs ?? 0)) / 1000
        const gap = next === undefined || next === null ? '' : `+${((next - (a.endedAtMs ?? 0)) / 1000).toFixed(1)}`
        return `${run.toFixed(1)}${gap}`
      })
      process.stdout.write(
        `# ${step.experiment} (${step.version}): ${attempts.length} runs in ` +
          `${((e.updatedAtMs - e.createdAtMs) / 1000).toFixed(1)} s; run+until next start, s: ${split.join(' ')}\n`,
      )
    }
    process.stdout.write(`# ${runs} runs in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
  },
)
