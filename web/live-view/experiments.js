/*
 * Benchstream experiment page: a plain browser script (no framework, no
 * bundler), served by the API next to the live view's files.
 *
 * It polls: the experiment's whole state (GET /api/v1/experiments/:id) every
 * second, the list (GET /api/v1/experiments) every few seconds, each request
 * after the last one answered, and redraws only what changed (the answer's
 * text is compared). Polling rather than a stream: the coordinator PUTs the
 * state after every change, a state is small, and a page that loses the
 * server picks up again on its next request without any reconnect logic.
 *
 * The matrix follows services/core/experiments/state.ts (cellStatus,
 * formatMatrix: ✓ done, ▶ running, ✗ failed, · left); the frame at the
 * bottom is the live view of the current run (/?run=ID), moved to the next
 * run when currentRun changes.
 *
 * The headline of what the experiment decided is the API's (`decision`,
 * services/core/experiments/decision.ts), the same words comparison.md and
 * the CLI print: never worked out here again.
 *
 * Shapes: schemas/experiments.v1.ts (ExperimentState, ExperimentSummary, ExperimentDecision).
 * For tests the page's state is on window.benchstreamExperiments, and what
 * it draws carries data-* attributes.
 */
'use strict'
;(function () {
  /** How often the experiment is read, ms. */
  const STATE_MS = 1000
  /** How often the list is read, ms (it changes when an experiment starts or ends; the state keeps its own row). */
  const LIST_MS = 5000
  const LIST_LIMIT = 100
  /** A read that takes longer is given up, so that a stalled request never stops the polling. */
  const READ_TIMEOUT_MS = 10_000
  /** Notes shown, the newest (an experiment may have up to 1000). */
  const NOTES_SHOWN = 50
  /** Retries when the plan does not say (PLAN_DEFAULTS.retries in services/core/experiments/plan.ts). */
  const DEFAULT_RETRIES = 1
  const MARK = { done: '✓', running: '▶', failed: '✗', left: '·' }

  const params = new URLSearchParams(location.search)
  /** An experiment named in the address stays; without one the page follows the newest running one. */
  const pinned = params.get('id') || ''

  const $ = (id) => document.getElementById(id)
  const page = {
    id: pinned,
    list: [],
    listText: '',
    state: null,
    stateText: '',
    frameRun: '',
    polls: 0,
    renders: 0,
    listDueAt: 0,
    problem: '',
  }
  window.benchstreamExperiments = page

  // ------------------------------------------------------------ formatting

  const fmtInt = (n) => (n == null ? '–' : Math.round(n).toLocaleString('en-US'))
  const fmtDate = (ms) => (ms == null ? '–' : new Date(ms).toLocaleString('en-GB'))
  const fmtTime = (ms) => (ms == null ? '–' : new Date(ms).toLocaleTimeString('en-GB'))
  const fmtMs = (ms) => (ms == null ? '–' : (Math.abs(ms) >= 100 ? Math.round(ms) : Math.round(ms * 10) / 10) + ' ms')

  function el(tag, text, cls) {
    const e = document.createElement(tag)
    if (text != null) e.textContent = text
    if (cls) e.className = cls
    return e
  }

  // ------------------------------------------------------------ the matrix's rule (state.ts)

  const maxAttempts = (plan) => 1 + (plan.retries == null ? DEFAULT_RETRIES : plan.retries)

  /** As cellStatus in services/core/experiments/state.ts: done, running, failed when its attempts are used up. */
  function cellStatus(cell, plan) {
    if (cell.attempts.some((a) => a.state === 'done')) return 'done'
    if (cell.attempts.some((a) => a.state === 'running')) return 'running'
    if (cell.attempts.length >= maxAttempts(plan)) return 'failed'
    return 'left'
  }

  function countsOf(state) {
    const out = { done: 0, running: 0, failed: 0, left: 0 }
    for (const c of state.cells) out[cellStatus(c, state.plan)]++
    return out
  }

  /** The run the frame shows: the current one, else the one started last. */
  function runToShow(state) {
    if (state.currentRun) return state.currentRun
    let best = null
    for (const c of state.cells)
      for (const a of c.attempts) if (best == null || (a.startedAtMs || 0) >= (best.startedAtMs || 0)) best = a
    return best ? best.runId : ''
  }

  // ------------------------------------------------------------ reading

  class HttpProblem extends Error {}

  async function read(url) {
    const abort = new AbortController()
    const timer = setTimeout(
      () => abort.abort(new Error('no answer within ' + READ_TIMEOUT_MS / 1000 + ' s')),
      READ_TIMEOUT_MS,
    )
    let res
    let text
    try {
      res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store', signal: abort.signal })
      text = await res.text()
    } finally {
      clearTimeout(timer)
    }
    if (res.ok) return text
    let body = {}
    try {
      body = JSON.parse(text)
    } catch {
      // Not our error shape (a proxy's page): the status says enough.
    }
    throw new HttpProblem((body.code || 'HTTP ' + res.status) + ': ' + (body.message || res.statusText))
  }

  /** The experiment to watch when none is named: the newest running one, else the newest; a running one stays. */
  function follow() {
    if (pinned) return
    const running = page.list.find((e) => e.status === 'running')
    const current = page.list.find((e) => e.id === page.id)
    if (!page.id || !current || (current.status !== 'running' && running && running.id !== page.id)) {
      const next = running || page.list[0]
      if (next && next.id !== page.id) {
        page.id = next.id
        page.stateText = ''
      }
    }
  }

  async function poll() {
    try {
      if (Date.now() >= page.listDueAt) {
        const text = await read('/api/v1/experiments?limit=' + LIST_LIMIT)
        page.listDueAt = Date.now() + LIST_MS
        if (text !== page.listText) {
          page.listText = text
          page.list = JSON.parse(text).experiments
          renderList()
        }
        follow()
      }
      if (page.id) {
        const text = await read('/api/v1/experiments/' + encodeURIComponent(page.id))
        if (text !== page.stateText) {
          page.stateText = text
          page.state = JSON.parse(text)
          renderState()
          renderList()
        }
      }
      showProblem('')
      setState(!page.id ? 'waiting' : page.state && page.state.status === 'running' ? 'live' : 'final')
      $('updated').textContent = 'read at ' + fmtTime(Date.now())
    } catch (err) {
      setState('error')
      showProblem(
        err instanceof HttpProblem ? err.message : 'the server cannot be reached: ' + err.message + ' (trying again)',
      )
    }
    page.polls++
    setTimeout(() => void poll(), STATE_MS)
  }

  // ------------------------------------------------------------ drawing

  function setState(s) {
    const e = $('state')
    e.dataset.state = s
    e.textContent =
      s === 'live'
        ? 'running'
        : s === 'final'
          ? (page.state && page.state.status) || 'final'
          : s === 'waiting'
            ? 'no experiment yet'
            : s === 'error'
              ? 'error'
              : 'connecting'
  }

  function showProblem(message) {
    page.problem = message
    const e = $('problem')
    e.hidden = !message
    e.textContent = message
  }

  function renderList() {
    // The watched experiment's row from its state: it is read every second, the list every few.
    const s = page.state
    const rows = page.list.map((e) =>
      s && e.id === s.id
        ? { ...e, status: s.status, updatedAtMs: s.updatedAtMs, runs: countsOf(s), currentRun: s.currentRun }
        : e,
    )
    const body = document.querySelector('#experiment-list tbody')
    body.replaceChildren()
    if (rows.length === 0) {
      const tr = el('tr')
      const td = el('td', 'none yet', 'empty')
      td.colSpan = 8
      tr.append(td)
      body.append(tr)
    }
    for (const e of rows) {
      const tr = el('tr')
      tr.dataset.id = e.id
      tr.dataset.status = e.status
      if (e.id === page.id) tr.className = 'selected'
      const first = el('td')
      const a = el('a', e.id)
      a.href = '/experiments?id=' + encodeURIComponent(e.id)
      first.append(a)
      tr.append(first, el('td', e.name))
      const status = el('td')
      status.append(el('span', e.status, 'pill status-' + e.status))
      tr.append(status)
      for (const k of ['done', 'running', 'failed', 'left']) {
        const td = el('td', fmtInt(e.runs[k]))
        td.dataset.field = k
        td.dataset.value = String(e.runs[k])
        tr.append(td)
      }
      tr.append(el('td', fmtDate(e.createdAtMs)))
      body.append(tr)
    }
  }

  function renderState() {
    const s = page.state
    const box = $('experiment')
    box.hidden = false
    box.dataset.id = s.id
    box.dataset.version = String(s.version)
    document.title = s.name + ' · Benchstream experiments'
    $('title').textContent = s.name + ' '
    $('title').append(el('code', s.id))
    renderHeadline(s)
    renderSummary(s)
    renderBisect(s)
    renderMatrix(s)
    renderSteps(s)
    renderNotes(s)
    renderComparisons(s)
    renderFrame(s)
    page.renders++
    box.dataset.renders = String(page.renders)
  }

  /** What the experiment decided, as the API words it: "Undecided: 3 of 8 runs failed; ...". */
  function renderHeadline(s) {
    const p = $('headline')
    const d = s.decision
    p.replaceChildren()
    p.dataset.outcome = d ? d.outcome : ''
    p.hidden = !d
    if (!d) return
    p.append(el('b', d.lead), ' ' + d.text)
  }

  function renderSummary(s) {
    const box = $('summary')
    box.replaceChildren()
    const item = (label, value, field) => {
      const span = el('span')
      span.append(label + ' ')
      const b = el('b', value)
      if (field) b.dataset.field = field
      span.append(b)
      box.append(span)
      return b
    }
    const p = s.plan
    const c = countsOf(s)
    item('status', s.status, 'status')
    item('runs', c.done + ' done, ' + c.running + ' running, ' + c.failed + ' failed, ' + c.left + ' left', 'runs')
    item('setups', p.setups.map((x) => x.name).join(', '), 'setups')
    item('workloads', [...new Set(s.cells.map((x) => x.workload))].join(', '), 'workloads')
    // A number, or { min, max }: repetitions until decided (services/core/experiments/plan.ts repetitionsText).
    const reps =
      typeof p.repetitions === 'number'
        ? String(p.repetitions)
        : p.repetitions.min + ' to ' + p.repetitions.max + ' until decided'
    item(
      'repetitions',
      reps + (p.warmup ? ' + ' + p.warmup + ' warm-up' : '') + ', ' + maxAttempts(p) + ' attempts each',
      'repetitions',
    )
    item('binding', (p.driver === 'ycsb' ? 'ycsb ' : '') + p.binding, 'binding')
    item('clients', Array.isArray(p.clients) ? p.clients.join(', ') : String(p.clients), 'clients')
    if (p.target) item('target', fmtInt(p.target) + ' ops/s', 'target')
    item(
      'length',
      p.seconds != null ? p.seconds + ' s' : p.operations != null ? fmtInt(p.operations) + ' ops' : '–',
      'length',
    )
    item('created', fmtDate(s.createdAtMs), 'created')
    item('updated', fmtDate(s.updatedAtMs) + ' (version ' + s.version + ')', 'updated')
  }

  const fmtP = (p) => (p == null ? '–' : p < 0.001 ? p.toExponential(1) : p.toFixed(3))
  const fmtChange = (x) => (x == null ? '–' : (x >= 0 ? '+' : '') + x.toFixed(1) + '%')

  /** A bisection's chain (services/core/experiments/bisect.ts formatChain): each step links to its experiment. */
  function renderBisect(s) {
    const box = $('bisect')
    const b = s.bisect
    box.hidden = !b
    $('matrix-box').hidden = !!b
    if (!b) return
    const r = b.result
    const result = $('bisect-result')
    result.dataset.result = r ? r.kind : 'running'
    result.textContent =
      'good ' +
      b.good +
      ', bad ' +
      b.bad +
      ', ' +
      b.versions.length +
      ' versions (' +
      b.source +
      ')' +
      (b.figures.length ? '; following ' + b.figures.join(', ') : '') +
      '. ' +
      (r ? (r.kind === 'found' ? '' : r.kind + ': ') + r.message : 'going on')
    const body = document.querySelector('#bisect-table tbody')
    body.replaceChildren()
    b.chain.forEach((x, k) => {
      const tr = el('tr')
      tr.dataset.version = x.version
      tr.dataset.outcome = x.outcome
      tr.append(el('td', k === 0 ? 'ends' : String(k)))
      const v = el('td')
      const a = el('a', x.version)
      a.href = '/experiments?id=' + encodeURIComponent(x.experiment)
      a.title = "the step's experiment " + x.experiment
      v.append(a)
      tr.append(v, el('td', x.runs.baseline + ' + ' + x.runs.candidate), el('td', fmtChange(x.changePercent)))
      tr.append(el('td', fmtP(x.pValue)))
      const verdict = el('td')
      const text = x.outcome === 'running' ? 'running' : x.outcome + ' (' + x.verdict + ')'
      verdict.append(el('span', text, 'pill bisect-' + x.outcome))
      tr.append(verdict, el('td', x.reason, 'list'))
      body.append(tr)
    })
  }

  /** Why a comparison's repetitions stopped, in words (services/experiments/sequential.ts stopText). */
  const STOP_TEXT = {
    decided: 'every figure decided',
    max: 'max repetitions reached',
    budget: 'time budget spent',
    fixed: 'fixed repetitions',
    'unknown figure': 'a named figure is in no comparison',
    'no runs': 'a setup has no complete run',
    interrupted: 'interrupted',
  }

  /** How a comparison's repetitions ended, what is decided, and what the undecided could have found. */
  function stoppedCell(c) {
    const td = el('td', null, 'list')
    const d = c.decisions
    if (!d) {
      td.append(el('span', '–', 'muted'))
      return td
    }
    td.dataset.stop = d.stop
    const open = d.figures.filter((f) => f.decision === 'undecided')
    td.append(el('div', STOP_TEXT[d.stop] || d.stop))
    const decided = d.figures.length - open.length + ' of ' + d.figures.length + ' decided at ' + fmtP(d.alpha)
    td.append(el('div', decided, 'muted'))
    for (const f of open.slice(0, 5)) {
      const could = f.detectable
        ? 'could have found +' +
          f.detectable.increasePercent.toFixed(1) +
          '% / -' +
          f.detectable.decreasePercent.toFixed(1) +
          '%'
        : 'undecided'
      const line = el('div', f.label + ': ' + could, 'undecided')
      line.title = f.reason
      td.append(line)
    }
    if (open.length > 5) td.append(el('div', '… and ' + (open.length - 5) + ' more undecided', 'muted'))
    return td
  }

  function attemptLine(a, i) {
    const parts = ['attempt ' + (i + 1) + ': ' + a.runId + ' ' + a.state]
    if (a.startedAtMs != null)
      parts.push(fmtTime(a.startedAtMs) + (a.endedAtMs != null ? '–' + fmtTime(a.endedAtMs) : ' (going on)'))
    const clocks = []
    if (a.startSkewMs != null) clocks.push('start skew ' + fmtMs(a.startSkewMs))
    if (a.maxClockOffsetMs != null) clocks.push('worst clock offset ' + fmtMs(a.maxClockOffsetMs))
    if (clocks.length) parts.push(clocks.join(', '))
    // A summary run (driver pe) sends no events: its clients' operations are reported, not counted.
    if (a.state === 'done' && a.counted != null && a.sent == null)
      parts.push(fmtInt(a.counted) + ' operations as its clients reported')
    else if (a.counted != null || a.sent != null) parts.push(fmtInt(a.counted) + ' of ' + fmtInt(a.sent) + ' counted')
    const ended = a.clients.filter((x) => x.state === 'ended').length
    if (a.clients.length) parts.push(ended + ' of ' + a.clients.length + ' clients ended')
    return parts.join('; ') + (a.reason ? ' — ' + a.reason : '')
  }

  function renderMatrix(s) {
    const plan = s.plan
    // Columns: warm-up runs, then repetitions, as the cells have them (formatMatrix's order).
    const cols = []
    const seen = new Set()
    for (const c of s.cells) {
      const k = (c.warmup ? 'w' : 'r') + c.repetition
      if (!seen.has(k)) {
        seen.add(k)
        cols.push({ key: k, warmup: c.warmup, repetition: c.repetition })
      }
    }
    cols.sort((a, b) => (a.warmup === b.warmup ? a.repetition - b.repetition : a.warmup ? -1 : 1))
    // Rows: workloads in run order, setups in the plan's order.
    const workloads = [...new Set(s.cells.map((c) => c.workload))]
    const setupRank = new Map(plan.setups.map((x, i) => [x.name, i]))
    const rows = new Map()
    for (const c of s.cells) {
      const key = c.workload + '\u0000' + c.setup
      if (!rows.has(key)) rows.set(key, { workload: c.workload, setup: c.setup, cells: new Map() })
      rows.get(key).cells.set((c.warmup ? 'w' : 'r') + c.repetition, c)
    }
    const ordered = [...rows.values()].sort(
      (a, b) =>
        workloads.indexOf(a.workload) - workloads.indexOf(b.workload) ||
        (setupRank.get(a.setup) ?? 99) - (setupRank.get(b.setup) ?? 99),
    )

    const head = document.querySelector('#matrix thead')
    head.replaceChildren()
    const warm = cols.filter((c) => c.warmup).length
    const top = el('tr')
    const corner = el('th', '')
    corner.colSpan = 2
    top.append(corner)
    if (warm > 0) {
      const th = el('th', 'warm-up', 'group warm')
      th.colSpan = warm
      top.append(th)
    }
    if (cols.length > warm) {
      const th = el('th', 'repetitions', 'group')
      th.colSpan = cols.length - warm
      top.append(th)
    }
    const second = el('tr')
    second.append(el('th', 'workload'), el('th', 'setup'))
    for (const c of cols) second.append(el('th', String(c.repetition), c.warmup ? 'col warm' : 'col'))
    head.append(top, second)

    const labels = new Map(plan.setups.map((x) => [x.name, x.labels || {}]))
    const body = document.querySelector('#matrix tbody')
    body.replaceChildren()
    let lastWorkload = null
    for (const r of ordered) {
      const tr = el('tr')
      tr.dataset.workload = r.workload
      tr.dataset.setup = r.setup
      if (r.workload !== lastWorkload) tr.className = 'first'
      tr.append(el('td', r.workload === lastWorkload ? '' : r.workload, 'workload'))
      lastWorkload = r.workload
      const setup = el('td', r.setup, 'setup')
      const lab = Object.entries(labels.get(r.setup) || {})
      if (lab.length) setup.title = lab.map(([k, v]) => k + '=' + v).join(' ')
      tr.append(setup)
      for (const col of cols) {
        const c = r.cells.get(col.key)
        if (!c) {
          tr.append(el('td', '', 'cell none'))
          continue
        }
        const status = cellStatus(c, plan)
        const td = el('td', null, 'cell ' + status + (col.warmup ? ' warm' : ''))
        td.dataset.key = c.key
        td.dataset.state = status
        td.dataset.attempts = String(c.attempts.length)
        td.dataset.runs = c.attempts.map((a) => a.runId).join(' ')
        if (s.currentRun && c.attempts.some((a) => a.runId === s.currentRun)) td.classList.add('current')
        td.title = [
          c.workload + ' × ' + c.setup + ', ' + (c.warmup ? 'warm-up ' : 'repetition ') + c.repetition + ': ' + status,
          'group ' + c.group,
          ...(c.attempts.length ? c.attempts.map(attemptLine) : ['no attempt yet']),
        ].join('\n')
        // The number of attempts where it says more than the mark: a retry, or tries that did not end the cell.
        const shown = c.attempts.length > 1 || (c.attempts.length === 1 && (status === 'left' || status === 'failed'))
        const last = c.attempts[c.attempts.length - 1]
        const inner = last ? el('a') : el('span')
        if (last) {
          inner.href = '/?run=' + encodeURIComponent(last.runId)
          inner.target = '_blank'
          inner.rel = 'noopener'
        }
        inner.append(MARK[status])
        if (shown) inner.append(el('sup', String(c.attempts.length)))
        td.append(inner)
        tr.append(td)
      }
      body.append(tr)
    }
  }

  function renderSteps(s) {
    const body = document.querySelector('#steps-table tbody')
    body.replaceChildren()
    if (s.steps.length === 0) {
      const tr = el('tr')
      const td = el('td', 'none (the plan has no lifecycle steps, or none ran yet)', 'empty')
      td.colSpan = 6
      tr.append(td)
      body.append(tr)
    }
    for (const st of s.steps) {
      const tr = el('tr')
      tr.dataset.state = st.state
      tr.append(el('td', st.setup), el('td', st.phase), el('td', st.agent))
      const state = el('td')
      state.append(el('span', st.state, 'pill status-' + st.state))
      tr.append(state, el('td', fmtTime(st.atMs)))
      const out = el('td', null, 'output')
      if (st.output) {
        const d = el('details')
        d.append(el('summary', st.output.split('\n')[0]), el('pre', st.output))
        out.append(d)
      } else out.textContent = '–'
      tr.append(out)
      body.append(tr)
    }
  }

  function renderNotes(s) {
    const list = $('notes-list')
    list.replaceChildren()
    const shown = s.notes.slice(-NOTES_SHOWN)
    list.start = s.notes.length - shown.length + 1
    for (const n of shown) list.append(el('li', n))
    if (s.notes.length === 0) list.append(el('li', 'none', 'empty'))
  }

  function renderComparisons(s) {
    const body = document.querySelector('#comparisons-table tbody')
    body.replaceChildren()
    if (s.comparisons.length === 0) {
      const tr = el('tr')
      const td = el('td', 'none yet: written at the end, over complete runs only', 'empty')
      td.colSpan = 7
      tr.append(td)
      body.append(tr)
    }
    const list = (items, cls, none) => {
      const td = el('td', null, 'list')
      if (items.length === 0) td.append(el('span', none, 'muted'))
      for (const x of items) td.append(el('div', x, cls))
      return td
    }
    for (const c of s.comparisons) {
      const tr = el('tr')
      tr.dataset.pair = c.baseline + '/' + c.candidate
      tr.dataset.workload = c.workload
      tr.dataset.regressions = String(c.regressions.length)
      tr.dataset.improvements = String(c.improvements.length)
      tr.append(el('td', c.baseline + ' → ' + c.candidate), el('td', c.workload))
      const runs = el('td', c.baselineRuns.length + ' + ' + c.candidateRuns.length)
      runs.title = 'baseline: ' + c.baselineRuns.join(', ') + '\ncandidate: ' + c.candidateRuns.join(', ')
      tr.append(runs, stoppedCell(c))
      if (c.error) {
        const td = el('td', c.error, 'list problem-text')
        td.colSpan = 2
        tr.append(td)
      } else tr.append(list(c.regressions, 'up', 'none'), list(c.improvements, 'down', 'none'))
      tr.append(list(c.files, 'file', '–'))
      body.append(tr)
    }
  }

  function renderFrame(s) {
    const run = runToShow(s)
    $('current-label').textContent = s.currentRun ? 'Current run' : run ? 'Last run' : 'No run yet'
    $('current-run').textContent = run || '–'
    const open = $('current-open')
    open.hidden = !run
    open.href = '/?run=' + encodeURIComponent(run)
    const frame = $('current-frame')
    frame.hidden = !run
    if (run && run !== page.frameRun) {
      page.frameRun = run
      frame.dataset.run = run
      frame.src = '/?run=' + encodeURIComponent(run)
    }
  }

  void poll()
})()
