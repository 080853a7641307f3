/**
 * The profiles page (GET /profiles) in headless Chromium (Debian's
 * chromium, driven by playwright-core): the frames it drew, read back from
 * the DOM (data-* attributes and the rectangles' geometry), are the API's
 * rows at the right places; search highlights the matching frames and says
 * their share; a click zooms into a frame's subtree and "Reset zoom" goes
 * back; a differential view colours the doubled frame full red and lists it
 * first. PROFILE_SCREENSHOT_DIR=<dir> keeps screenshots (flamegraph.png,
 * flamegraph-diff.png).
 */
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { Page } from 'playwright-core'
import { profileMain } from '../../services/cli/profile.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer } from '../../services/server/main.js'
import { CHROMIUM, openBrowser } from '../helpers/chromium.js'
import { testEnv } from '../helpers/env.js'

const FIX = path.join(repoRoot(), 'test', 'fixtures', 'profiles', 'async-profiler-4.6')

interface Row {
  level: number
  label: string
  value: number
  self: number
  x: number
}
interface Drawn extends Row {
  i: number
  rx: number
  rw: number
  fill: string
  match: boolean
  ancestor: boolean
  selfDelta: number | null
}

async function drawn(page: Page): Promise<Drawn[]> {
  return page.$$eval('#flame g.frame', (els) =>
    els.map((e) => {
      const r = e.querySelector('rect')!
      const d = (e as unknown as { dataset: Record<string, string | undefined> }).dataset
      return {
        i: Number(d.i),
        level: Number(d.level),
        label: d.label ?? '',
        value: Number(d.value),
        self: Number(d.self),
        x: Number(d.x),
        rx: Number(r.getAttribute('x')),
        rw: Number(r.getAttribute('width')),
        fill: r.getAttribute('fill') ?? '',
        match: d.match === '1',
        ancestor: e.getAttribute('class')!.includes('ancestor'),
        selfDelta: d.selfDelta === undefined ? null : Number(d.selfDelta),
      }
    }),
  )
}

test(
  "the profiles page draws the API's frames; search, zoom and the " + 'differential view work in headless Chromium',
  async (t) => {
    assert.ok(
      existsSync(CHROMIUM),
      `no Chromium at ${CHROMIUM}: apt-get install ` +
        `-y chromium (deploy/local/system-deps.sh ` +
        `does), or set CHROMIUM_PATH`,
    )
    const te = testEnv({ ALERTS_ENABLED: 'false' })
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const api = svc.apiUrl!
    const stamp = Date.now()
    const io = { env: te.env, out: () => undefined, err: () => undefined }
    const run = `view-broker-${stamp}`
    assert.equal(
      await profileMain(
        [
          'attach',
          '--run-id',
          run,
          '--label',
          'host=rs1',
          '--from',
          String(stamp - 60_000),
          '--seconds',
          '10',
          '--interval',
          '10ms',
          path.join(FIX, 'kafka-broker-cpu-10ms.collapsed'),
        ],
        io,
      ),
      0,
    )
    const others = Array.from({ length: 9 }, (_, i) => `java/lang/Thread.run;app/Server.handle;app/Other${i}.work`)
    const write = (name: string, hot: number, other: number): string => {
      const f = path.join(te.dataDir, name)
      writeFileSync(
        f,
        [`java/lang/Thread.run;app/Server.handle;app/Codec.encode ${hot}`, ...others.map((o) => `${o} ${other}`)].join(
          '\n',
        ) + '\n',
      )
      return f
    }
    const base = `view-base-${stamp}`
    const cand = `view-cand-${stamp}`
    assert.equal(await profileMain(['attach', '--run-id', base, write('a.collapsed', 10, 10)], io), 0)
    assert.equal(await profileMain(['attach', '--run-id', cand, write('b.collapsed', 36, 16)], io), 0)
    const rows = (await (await fetch(`${api}/api/v1/profiles/flamegraph?run=${run}`)).json()) as {
      total: number
      rows: Row[]
    }

    const browser = await openBrowser(t)
    const page = await browser.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${api}/profiles?run=${run}`)
    await page.waitForSelector('body[data-ready="1"]', { timeout: 30_000 })

    // Every frame drawn is a row of the API at its place; every row wide enough (>= 0.5 px) is drawn.
    const W = Number(await page.getAttribute('#flame', 'width'))
    const scale = (W - 20) / rows.total
    const frames = await drawn(page)
    const expected = rows.rows.filter((r) => r.level === 0 || r.value * scale >= 0.5)
    assert.equal(frames.length, expected.length, `${frames.length} frames drawn, ${expected.length} rows wide enough`)
    assert.ok(frames.length > 100)
    for (const f of frames) {
      const r = rows.rows[f.i]!
      assert.deepEqual(
        [f.label, f.level, f.value, f.self, f.x],
        [r.label, r.level, r.value, r.self, r.x],
        `frame ${f.i}`,
      )
      assert.ok(
        Math.abs(f.rx - (10 + r.x * scale)) < 0.01 && Math.abs(f.rw - r.value * scale) < 0.01,
        `frame ${f.i} (${f.label}) at ${f.rx}+${f.rw}`,
      )
    }
    assert.equal(frames[0]!.label, 'all')
    assert.ok(Math.abs(frames[0]!.rw - (W - 20)) < 0.01, 'the root spans the width')
    assert.match((await page.textContent('#title')) ?? '', /Flame graph: view-broker-\d+ \(170 samples\)/)

    // Search: matches in magenta, their share of samples (each subtree once).
    await page.fill('#search', 'KafkaApis\\.handle$')
    const matched = (await drawn(page)).filter((f) => f.match)
    assert.deepEqual([...new Set(matched.map((f) => f.label))], ['kafka/server/KafkaApis.handle'])
    assert.ok(matched.every((f) => f.fill === 'rgb(230,0,230)'))
    assert.equal(await page.getAttribute('#matched', 'data-samples'), '93')
    assert.equal(await page.textContent('#matched'), 'Matched: 54.71% (93 samples)')
    if (process.env.PROFILE_SCREENSHOT_DIR !== undefined) {
      await page.fill('#search', 'KafkaApis\\.handleProduceRequest')
      await page.hover('#flame g.frame[data-label="kafka/server/ReplicaManager.appendRecords"]')
      await page.screenshot({ path: path.join(process.env.PROFILE_SCREENSHOT_DIR, 'flamegraph.png'), fullPage: true })
    }
    await page.fill('#search', '')

    // Zoom: the clicked frame spans the width, only its ancestors and subtree remain; reset restores all.
    const handler = frames.find((f) => f.label === 'kafka/server/KafkaRequestHandler.run')!
    await page.click(`#flame g.frame[data-i="${handler.i}"]`, { position: { x: 5, y: 5 } })
    assert.equal(await page.getAttribute('#flame', 'data-zoom'), String(handler.i))
    const zoomed = await drawn(page)
    const z = zoomed.find((f) => f.i === handler.i)!
    assert.ok(Math.abs(z.rw - (W - 20)) < 0.01 && Math.abs(z.rx - 10) < 0.01, 'the zoomed frame spans the width')
    assert.deepEqual(
      zoomed
        .filter((f) => f.ancestor)
        .map((f) => f.label)
        .sort(),
      ['all', 'java/lang/Thread.run'],
    )
    const subtree = new Set<number>()
    for (let i = handler.i + 1; i < rows.rows.length && rows.rows[i]!.level > handler.level; i++) subtree.add(i)
    for (const f of zoomed.filter((x) => !x.ancestor && x.i !== handler.i)) {
      assert.ok(subtree.has(f.i), `${f.label} is in the zoomed subtree`)
      assert.ok(Math.abs(f.rw - (rows.rows[f.i]!.value * (W - 20)) / handler.value) < 0.01)
    }
    assert.ok(zoomed.length > 20 && !zoomed.some((f) => f.label.startsWith('clone3')))
    assert.match(
      (await page.textContent('#info')) ?? '',
      /kafka\/server\/KafkaRequestHandler\.run \(108 samples, 63\.53%/,
    )
    await page.click('#reset')
    assert.equal((await drawn(page)).length, frames.length)

    // The differential view: widths from the candidate, the doubled frame full red, listed first.
    await page.goto(`${api}/profiles?baseline=${base}&candidate=${cand}`)
    await page.waitForSelector('body[data-ready="1"]', { timeout: 30_000 })
    const diff = await drawn(page)
    const hot = diff.find((f) => f.label === 'app/Codec.encode')!
    assert.equal(hot.value, 36)
    assert.ok(Math.abs(hot.selfDelta! - 10) < 1e-9)
    assert.equal(hot.fill, 'rgb(255,0,0)')
    assert.ok(
      diff.filter((f) => f.label.startsWith('app/Other')).every((f) => /^rgb\(\d+,\d+,255\)$/.test(f.fill)),
      'smaller shares in blue',
    )
    const first = await page.$$eval('#changes tr[data-kind="self"]', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
    )
    assert.deepEqual(first[0], ['app/Codec.encode', 'self', '10.00%', '20.00%', '+10.00 pp'])
    if (process.env.PROFILE_SCREENSHOT_DIR !== undefined)
      await page.screenshot({
        path: path.join(process.env.PROFILE_SCREENSHOT_DIR, 'flamegraph-diff.png'),
        fullPage: true,
      })
    assert.deepEqual(errors, [], 'no script errors')
  },
)
