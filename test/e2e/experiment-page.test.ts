/**
 * The experiment page (GET /experiments) in a real browser (headless
 * Chromium through playwright-core) against the whole server: an
 * ExperimentState built as the coordinator builds it (a plan checked by
 * checkPlan, cells from newExperiment, attempts marked by hand) is PUT
 * through the API, and its current run is a real two-client run through
 * Kafka and ClickHouse, each client with the clock offset its agent would
 * have measured.
 *
 * Checked:
 *  - every matrix cell's state (✓ ▶ ✗ ·) and number of attempts equal
 *    cellStatus() and the stored attempts; its tooltip names every run id,
 *    state and reason, start skew and clock offset;
 *  - the list (newest first, done/running/failed/left as counts() says), the
 *    steps, notes and comparisons; the headline of what it decided, word for
 *    word decideExperiment's (the API's `decision`), running and then ended;
 *  - the frame is the live view of currentRun, which draws that run and shows
 *    its start skew and worst clock offset as the runs view has them;
 *  - a state PUT later shows up without a reload, and the frame follows the
 *    new currentRun; without ?id the page follows the newest running one;
 *  - the layout: no two blocks of the page, and no two matrix cells, overlap;
 *    nothing wider than the window. A screenshot is kept in
 *    test-results/experiments/ (or EXPERIMENTS_SCREENSHOT_DIR).
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { Frame, Page } from 'playwright-core'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import type { Cell, ExperimentState } from '../../schemas/experiment-state.v1.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { decideExperiment } from '../../services/core/experiments/decision.js'
import { runIdOf } from '../../services/core/experiments/matrix.js'
import { cellStatus, counts } from '../../services/core/experiments/state.js'
import { startServer } from '../../services/server/main.js'
import { CHROMIUM, collectPageErrors, openBrowser } from '../helpers/chromium.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { attempt, experimentState } from '../helpers/experiment-state.js'
import { driveClient } from '../helpers/driven-run.js'

/** The current run's clients and the clock offsets their agents measured, ms. */
const CLIENTS = [
  { clientId: 'c1', clockOffsetMs: 3 },
  { clientId: 'c2', clockOffsetMs: -12 },
]
const MARK = { done: '✓', running: '▶', failed: '✗', left: '·' } as const

// Globals of the page, for the functions that run inside it (page.evaluate); the project's tsconfig has no DOM library.
interface Box {
  left: number
  right: number
  top: number
  bottom: number
}
interface PageElement {
  id: string
  dataset: Record<string, string | undefined>
  textContent: string | null
  title: string
  hidden: boolean
  getAttribute(name: string): string | null
  getBoundingClientRect(): Box
  querySelectorAll(selector: string): Iterable<PageElement>
}
declare const document: {
  getElementById(id: string): PageElement | null
  querySelectorAll(selector: string): Iterable<PageElement>
  querySelector(selector: string): PageElement | null
  documentElement: { scrollWidth: number; clientWidth: number }
}
declare const window: Record<string, unknown> & { innerWidth: number }

interface ShownCell {
  key: string
  state: string
  attempts: number
  runs: string
  title: string
  text: string
  current: boolean
}
interface Shown {
  id: string
  version: string
  cells: ShownCell[]
  header: string[]
  rows: Array<{ workload: string; setup: string }>
  list: Array<{ id: string; status: string; done: string; running: string; failed: string; left: string }>
  summaryRuns: string
  steps: string[]
  notes: string[]
  comparisons: Array<{ pair: string; workload: string; regressions: string; improvements: string; text: string }>
  frameRun: string
  frameSrc: string
  frameHidden: boolean
  currentLabel: string
  state: string
  headline: { outcome: string; text: string }
}

/** What the page shows, from its DOM and data-* attributes. */
async function shown(page: Page): Promise<Shown> {
  return page.evaluate(() => {
    const all = (sel: string): PageElement[] => [...document.querySelectorAll(sel)]
    const frame = document.getElementById('current-frame')!
    return {
      id: document.getElementById('experiment')!.dataset.id ?? '',
      version: document.getElementById('experiment')!.dataset.version ?? '',
      cells: all('#matrix td.cell[data-key]').map((td) => ({
        key: td.dataset.key!,
        state: td.dataset.state!,
        attempts: Number(td.dataset.attempts),
        runs: td.dataset.runs ?? '',
        title: td.title,
        text: td.textContent ?? '',
        current: (td.getAttribute('class') ?? '').split(' ').includes('current'),
      })),
      header: all('#matrix thead tr:last-child th').map((th) => th.textContent ?? ''),
      rows: all('#matrix tbody tr').map((tr) => ({ workload: tr.dataset.workload!, setup: tr.dataset.setup! })),
      list: all('#experiment-list tbody tr[data-id]').map((tr) => {
        const v = (f: string): string =>
          [...tr.querySelectorAll(`td[data-field="${f}"]`)].map((td) => td.dataset.value ?? '')[0] ?? ''
        return {
          id: tr.dataset.id!,
          status: tr.dataset.status!,
          done: v('done'),
          running: v('running'),
          failed: v('failed'),
          left: v('left'),
        }
      }),
      summaryRuns: document.querySelector('#summary [data-field="runs"]')?.textContent ?? '',
      steps: all('#steps-table tbody tr[data-state]').map((tr) => tr.textContent ?? ''),
      notes: all('#notes-list li').map((li) => li.textContent ?? ''),
      comparisons: all('#comparisons-table tbody tr[data-pair]').map((tr) => ({
        pair: tr.dataset.pair!,
        workload: tr.dataset.workload!,
        regressions: tr.dataset.regressions!,
        improvements: tr.dataset.improvements!,
        text: tr.textContent ?? '',
      })),
      frameRun: frame.dataset.run ?? '',
      frameSrc: frame.getAttribute('src') ?? '',
      frameHidden: frame.hidden,
      currentLabel: document.getElementById('current-label')!.textContent ?? '',
      state: document.getElementById('state')!.dataset.state ?? '',
      headline: {
        outcome: document.getElementById('headline')!.dataset.outcome ?? '',
        text: document.getElementById('headline')!.textContent ?? '',
      },
    }
  })
}

/** Every cell as the page should draw it, from the state and the coordinator's own rule. */
function checkCells(s: ExperimentState, got: Shown): void {
  assert.equal(got.cells.length, s.cells.length, 'one matrix cell per cell of the state')
  const byKey = new Map(got.cells.map((c) => [c.key, c]))
  for (const c of s.cells) {
    const g = byKey.get(c.key)
    assert.ok(g !== undefined, `cell ${c.key} is drawn`)
    const status = cellStatus(c, s.plan)
    assert.equal(g.state, status, `${c.key}: state`)
    assert.equal(g.attempts, c.attempts.length, `${c.key}: attempts`)
    assert.equal(g.runs, c.attempts.map((a) => a.runId).join(' '), `${c.key}: run ids`)
    assert.ok(g.text.startsWith(MARK[status]), `${c.key}: ${JSON.stringify(g.text)} starts with ${MARK[status]}`)
    const count = g.text.slice(MARK[status].length)
    if (c.attempts.length > 1) assert.equal(count, String(c.attempts.length), `${c.key}: the count of attempts`)
    assert.equal(g.current, s.currentRun !== null && c.attempts.some((a) => a.runId === s.currentRun), c.key)
    assert.match(g.title, new RegExp(`^${c.workload} × ${c.setup}, (warm-up|repetition) ${c.repetition}: ${status}`))
    if (c.attempts.length === 0) assert.match(g.title, /no attempt yet/)
    c.attempts.forEach((a, i) => {
      const line = g.title.split('\n').find((l) => l.startsWith(`attempt ${i + 1}: ${a.runId} ${a.state}`))
      assert.ok(line !== undefined, `${c.key}: the tooltip has attempt ${i + 1} (${a.runId} ${a.state}): ${g.title}`)
      if (a.reason !== undefined) assert.ok(line.endsWith(`— ${a.reason}`), `${c.key}: reason in ${line}`)
      if (a.startSkewMs !== null) assert.ok(line.includes(`start skew ${a.startSkewMs} ms`), line)
      if (a.maxClockOffsetMs !== null) assert.ok(line.includes(`worst clock offset ${a.maxClockOffsetMs} ms`), line)
    })
  }
}

/** Two memory clients under one run id, a few seconds, each with its clock offset as its agent passes it. */
async function runClients(env: Record<string, string>, cell: Cell, runId: string): Promise<number> {
  const infra = readInfraConfig(env)
  const kafka = createKafka(infra.kafka, 'e2e-experiment-page')
  const outcomes = await Promise.all(
    CLIENTS.map(({ clientId, clockOffsetMs }) =>
      driveClient(kafka, env, [
        ...`-P workloads/workloada -p recordcount=1000 -p operationcount=1000000 -p maxexecutiontime=4`.split(' '),
        ...`-threads 2 -target 300 -db memory --label test=experiment-page`.split(' '),
        ...`--run-id ${runId} --client-id ${clientId} --group ${cell.group}`.split(' '),
        ...`--repetition ${cell.repetition} --expected-clients ${CLIENTS.length}`.split(' '),
        ...`--clock-offset-ms ${clockOffsetMs}`.split(' '),
      ]),
    ),
  )
  return outcomes.reduce((a, o) => a + o.delivery.sentEvents, 0)
}

const fmtMs = (ms: number): string => `${Math.abs(ms) >= 100 ? Math.round(ms) : Math.round(ms * 10) / 10} ms`

test('the experiment page draws the stored matrix, follows changes and the current run', async (t) => {
  assert.ok(
    existsSync(CHROMIUM),
    `the experiment page test needs Chromium at ${CHROMIUM} (Debian package chromium; deploy/local/system-deps.sh ` +
      `installs it, CHROMIUM_PATH names another)`,
  )
  const started = Date.now()
  const te = testEnv()
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const api = svc.api!
  const put = async (s: ExperimentState): Promise<void> => {
    const r = await api.inject({ method: 'PUT', url: `/api/v1/experiments/${s.id}`, payload: s })
    assert.equal(r.statusCode, 204, r.body)
  }

  // An older experiment, done, and the one under test, running; its current run is a real one.
  const now = Date.now()
  const older = experimentState(`web-ab-${(now - 86_400_000).toString(36)}`, now - 86_400_000)
  older.status = 'done'
  older.currentRun = null
  const s = experimentState(`web-ab-${now.toString(36)}`, now)
  const runId = s.currentRun!
  const sent = await runClients(
    te.env,
    s.cells.find((c) => c.attempts.some((a) => a.runId === runId))!,
    runId,
  )
  let report: RunReport | undefined
  await waitFor('the current run ended and counted', async () => {
    const r = await api.inject({ method: 'GET', url: `/api/v1/runs/${runId}/report` })
    if (r.statusCode !== 200) return undefined
    const rep = r.json<RunReport>()
    return rep.run?.clients_ended === CLIENTS.length && rep.completeness.counted === sent ? (report = rep) : undefined
  })
  const run = report!.run!
  assert.equal(run.clock_offset_max_ms, 12, 'the worst clock offset is the largest absolute one')
  assert.ok(run.start_skew_ms !== null && run.start_skew_ms >= 0, `start skew ${run.start_skew_ms}`)
  await put(older)
  await put(s)

  const browser = await openBrowser(t)
  const page = await browser.newPage()
  // A live view in the frame of a run not known yet is answered 404 and says so itself; that load is not an error.
  const pageErrors = collectPageErrors(page, (text) => text.startsWith('Failed to load resource'))

  await page.goto(`${svc.apiUrl}/experiments?id=${s.id}`)
  await page.waitForSelector(`#experiment[data-id="${s.id}"][data-version="${s.version}"]`)
  let got = await shown(page)
  checkCells(s, got)
  assert.deepEqual(got.header, ['workload', 'setup', '1', '1', '2', '3'], 'warm-up run 1, then repetitions 1 to 3')
  assert.deepEqual(got.rows, [
    { workload: 'workloada', setup: 'base' },
    { workload: 'workloada', setup: 'slow' },
    { workload: 'workloadc', setup: 'base' },
    { workload: 'workloadc', setup: 'slow' },
  ])
  const c = counts(s)
  assert.deepEqual(c, { done: 9, running: 1, failed: 1, left: 5 })
  assert.equal(got.summaryRuns, `${c.done} done, ${c.running} running, ${c.failed} failed, ${c.left} left`)
  await page.waitForFunction(() => [...document.querySelectorAll('#experiment-list tbody tr[data-id]')].length === 2)
  got = await shown(page)
  assert.deepEqual(
    got.list.map((e) => e.id),
    [s.id, older.id],
    'newest first',
  )
  assert.deepEqual(got.list[0], {
    id: s.id,
    status: 'running',
    done: String(c.done),
    running: String(c.running),
    failed: String(c.failed),
    left: String(c.left),
  })
  assert.equal(got.steps.length, 2)
  assert.match(got.steps[1]!, /slow.*flush.*a1.*failed.*flush: connection refused/)
  assert.deepEqual(got.notes, s.notes)
  assert.deepEqual(
    got.comparisons.map((x) => [x.pair, x.workload, x.regressions, x.improvements]),
    [['base/slow', 'workloada', '2', '0']],
  )
  assert.match(got.comparisons[0]!.text, /READ p99 \+41\.0%/)
  assert.equal(got.state, 'live')
  assert.deepEqual(got.headline, { outcome: 'running', text: decideExperiment(s).headline })
  assert.equal(got.headline.text, 'Running: 9 of 16 runs done, 1 failed; nothing is decided before the end')

  // The frame: the live view of the current run, drawing it, with its start skew and worst clock offset.
  assert.equal(got.currentLabel, 'Current run')
  assert.equal(got.frameRun, runId)
  assert.equal(got.frameSrc, `/?run=${runId}`)
  const frameOf = async (run: string): Promise<Frame> =>
    waitFor(`the frame shows ${run}`, async () =>
      page.frames().find((f) => f.url().endsWith(`/?run=${encodeURIComponent(run)}`)),
    )
  const frame = await frameOf(runId)
  await frame.waitForSelector('#charts[data-final="true"]', { timeout: 60_000 })
  const meta = await frame.evaluate(() => {
    const out: Record<string, string> = {}
    for (const b of document.querySelectorAll('#meta [data-field]')) out[b.dataset.field!] = b.textContent ?? ''
    return { meta: out, total: document.getElementById('total-ops')!.dataset.value ?? '' }
  })
  assert.equal(meta.meta.run, runId)
  assert.equal(Number(meta.total), sent, 'the frame draws the whole run')
  assert.equal(meta.meta.startSkew, fmtMs(run.start_skew_ms))
  assert.equal(meta.meta.clockOffsetMax, fmtMs(run.clock_offset_max_ms))

  // Layout: the page's blocks and the matrix cells do not overlap, nothing is wider than the window.
  const layout = await page.evaluate(() => {
    const box = (e: PageElement): Box => {
      const r = e.getBoundingClientRect()
      return { left: r.left, right: r.right, top: r.top, bottom: r.bottom }
    }
    const blocks = ['list', 'title', 'headline', 'summary', 'matrix-box', 'steps', 'notes', 'comparisons', 'current']
    return {
      header: box(document.querySelector('header')!),
      blocks: blocks.map((id) => ({ id, box: box(document.getElementById(id)!) })),
      cells: [...document.querySelectorAll('#matrix td')].map(box),
      frame: box(document.getElementById('current-frame')!),
      width: window.innerWidth,
      scrollWidth: document.documentElement.scrollWidth,
      clientWidth: document.documentElement.clientWidth,
    }
  })
  const overlaps = (a: Box, b: Box): boolean =>
    a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1
  const blocks = [{ id: 'header', box: layout.header }, ...layout.blocks]
  for (const [i, a] of blocks.entries()) {
    assert.ok(a.box.bottom - a.box.top > 0 && a.box.right - a.box.left > 0, `${a.id} is drawn`)
    assert.ok(a.box.right <= layout.width + 1, `${a.id} fits the window: ${JSON.stringify(a.box)}`)
    for (const b of blocks.slice(i + 1))
      assert.ok(
        !overlaps(a.box, b.box),
        `${a.id} ${JSON.stringify(a.box)} and ${b.id} ${JSON.stringify(b.box)} overlap`,
      )
  }
  for (const [i, a] of layout.cells.entries())
    for (const b of layout.cells.slice(i + 1)) assert.ok(!overlaps(a, b), 'two matrix cells overlap')
  assert.ok(layout.scrollWidth <= layout.clientWidth, `no horizontal scroll: ${layout.scrollWidth}`)
  assert.ok(layout.frame.bottom - layout.frame.top >= 600, 'the frame is tall enough to read the charts')
  const keep = process.env.EXPERIMENTS_SCREENSHOT_DIR || path.join(repoRoot(), 'test-results', 'experiments')
  mkdirSync(keep, { recursive: true })
  await page.screenshot({ path: path.join(keep, 'experiments.png'), fullPage: true })

  // Without ?id the page follows the newest running experiment.
  const other = await browser.newPage()
  await other.goto(`${svc.apiUrl}/experiments`)
  await other.waitForSelector(`#experiment[data-id="${s.id}"]`)
  await other.close()

  // A change PUT later shows up without a reload: the running cell done, the next one running, a new current run.
  await page.evaluate(() => (window.keptAcrossUpdates = true))
  const s2 = structuredClone(s)
  const running = s2.cells.find((x) => x.attempts.some((a) => a.state === 'running'))!
  running.attempts[running.attempts.length - 1]!.state = 'done'
  const nextCell = s2.cells[s2.cells.indexOf(running) + 1]!
  const nextRun = runIdOf(nextCell, 1)
  nextCell.attempts.push(attempt(nextRun, 'running', now))
  s2.currentRun = nextRun
  s2.notes.push(`run ${runId} done`)
  s2.version++
  s2.updatedAtMs = Date.now()
  await put(s2)
  await page.waitForSelector(`#experiment[data-version="${s2.version}"]`, { timeout: 10_000 })
  got = await shown(page)
  checkCells(s2, got)
  assert.equal(await page.evaluate(() => window.keptAcrossUpdates), true, 'the page was not reloaded')
  assert.equal(got.frameRun, nextRun, 'the frame follows currentRun')
  assert.equal(got.frameSrc, `/?run=${nextRun}`)
  const next = await frameOf(nextRun)
  await next.waitForFunction(
    (id) => (window.benchstreamLive as { live: { runId: string } } | undefined)?.live.runId === id,
    nextRun,
  )
  await page.waitForFunction(
    (id) => document.querySelector(`#experiment-list tbody tr[data-id="${id}"] td[data-field="done"]`)?.dataset.value,
    s2.id,
  )
  assert.equal((await shown(page)).list[0]!.done, String(counts(s2).done), "the list's row follows the state")

  // The experiment ends: no current run, the frame stays on the run started last, the status is final.
  const s3 = structuredClone(s2)
  s3.status = 'done'
  s3.currentRun = null
  s3.version++
  await put(s3)
  await page.waitForSelector(`#experiment[data-version="${s3.version}"]`, { timeout: 10_000 })
  got = await shown(page)
  assert.equal(got.currentLabel, 'Last run')
  assert.equal(got.frameRun, nextRun)
  assert.equal(got.state, 'final')
  // Ended with a run failed and runs never run: the regression found is said, and that the rest is undecided.
  assert.deepEqual(got.headline, { outcome: 'regression', text: decideExperiment(s3).headline })
  assert.match(
    got.headline.text,
    /^Regressions: slow vs base, workloada: .*\. Undecided beyond them: 1 of 16 runs failed/,
  )
  assert.deepEqual(pageErrors, [], 'the page logged no errors')

  t.diagnostic(`screenshot in ${keep}; ${((Date.now() - started) / 1000).toFixed(1)} s`)
})
