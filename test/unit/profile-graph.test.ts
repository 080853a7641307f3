/**
 * Flame graphs as nested sets (the rows Grafana's flame graph panel reads,
 * and the web view and the SVG draw), differential flame graphs, and the
 * frames whose share changed most. Two profiles where one frame's share of
 * samples doubles (10% -> 20%, with different sample totals): the diff rows
 * and the frame list both name that frame with +10 percentage points.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { compareBytes, parseFolded, type Folded } from '../../services/core/profiles/folded.js'
import {
  diffFlameGraph,
  flameGraph,
  frameShareChanges,
  type FlameRow,
} from '../../services/core/profiles/flame-graph.js'
import { diffColor, flameGraphSvg } from '../../services/core/profiles/flame-svg.js'
import { joinRegExp } from '../helpers/regexp.js'

const fixture = (name: string): Folded =>
  parseFolded(
    readFileSync(path.join(repoRoot(), 'test', 'fixtures', 'profiles', 'async-profiler-4.6', name), 'utf8'),
    name,
  ).stacks

/** The nested-set invariants every flame graph frame must meet. */
function checkNestedSet(rows: readonly FlameRow[], total: number): void {
  assert.equal(rows[0]!.level, 0, 'one root, first')
  assert.equal(rows[0]!.value, total)
  assert.equal(rows.filter((r) => r.level === 0).length, 1, 'a single root')
  let selfSum = 0
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!
    selfSum += r.self
    if (i > 0)
      assert.ok(
        r.level >= 1 && r.level <= rows[i - 1]!.level + 1,
        `row ${i}: level ${r.level} after ${rows[i - 1]!.level} (pre-order)`,
      )
    // Children: the following rows one level deeper, up to the next row at this level or above.
    let childSum = 0
    let x = r.x
    let prev: string | undefined
    for (let j = i + 1; j < rows.length && rows[j]!.level > r.level; j++) {
      const c = rows[j]!
      if (c.level !== r.level + 1) continue
      assert.equal(c.x, x, `row ${j}: a child starts where its previous sibling ends`)
      if (prev !== undefined) assert.ok(compareBytes(prev, c.label) < 0, `siblings in byte order: ${prev} < ${c.label}`)
      prev = c.label
      x += c.value
      childSum += c.value
    }
    assert.equal(r.value, r.self + childSum, `row ${i} (${r.label}): value = self + children`)
  }
  assert.equal(selfSum, total, 'every sample is the self of exactly one frame')
}

test('flame graph of a real async-profiler capture: one root, pre-order, value = self + children', () => {
  for (const name of ['kafka-broker-cpu-10ms.collapsed', 'kafka-broker-wall-50ms-threads.collapsed']) {
    const stacks = fixture(name)
    const g = flameGraph(stacks)
    checkNestedSet(g.rows, g.total)
    assert.equal(
      g.total,
      [...stacks.values()].reduce((a, b) => a + b, 0),
    )
  }
  const g = flameGraph(fixture('kafka-broker-cpu-10ms.collapsed'))
  const handler = g.rows.find((r) => r.label === 'kafka/server/KafkaRequestHandler.run')
  assert.equal(handler?.value, 108, 'KafkaRequestHandler.run: 108 of 170 samples (fixture README)')
  assert.equal(handler.level, 2)
})

// A: 100 samples, `hot` has 10 (10%); B: 180 samples, `hot` has 36 (20%): its share doubles.
// The other nine frames go from 10% to 8.89% each (-1.11 pp).
const others = Array.from({ length: 9 }, (_, i) => `other${i}`)
const A: Folded = new Map([['main;work;hot', 10], ...others.map((o): [string, number] => [`main;work;${o}`, 10])])
const B: Folded = new Map([['main;work;hot', 36], ...others.map((o): [string, number] => [`main;work;${o}`, 16])])

test('differential flame graph: widths from B, the doubled frame +10 pp and the strongest red', () => {
  const d = diffFlameGraph(A, B)
  assert.equal(d.total, 180)
  assert.equal(d.baselineTotal, 100)
  checkNestedSet(d.rows, d.total)
  const hot = d.rows.find((r) => r.label === 'hot')!
  assert.deepEqual([hot.value, hot.baselineValue, hot.self, hot.baselineSelf], [36, 10, 36, 10])
  assert.ok(Math.abs(hot.selfDelta - 10) < 1e-9 && Math.abs(hot.totalDelta - 10) < 1e-9, `hot: ${hot.selfDelta} pp`)
  assert.equal(d.maxSelfDelta, hot.selfDelta, 'the largest change of the graph')
  for (const o of others) assert.ok(Math.abs(d.rows.find((r) => r.label === o)!.selfDelta - (16 / 1.8 - 10)) < 1e-9)
  // main and work hold every sample on both sides: no change.
  assert.equal(d.rows.find((r) => r.label === 'work')!.totalDelta, 0)
  assert.equal(diffColor(hot.selfDelta, d.maxSelfDelta), 'rgb(255,0,0)')
  assert.equal(diffColor(0, d.maxSelfDelta), 'rgb(255,255,255)')
  assert.match(
    diffColor(d.rows.find((r) => r.label === 'other0')!.selfDelta, d.maxSelfDelta),
    /^rgb\(\d+,\d+,255\)$/,
    'a smaller share is blue',
  )
  // A frame only the baseline has stays, with width 0; one only the candidate has has no baseline samples.
  const gone = diffFlameGraph(
    new Map([
      ['main;old', 5],
      ['main;kept', 5],
    ]),
    new Map([
      ['main;kept', 4],
      ['main;new', 4],
    ]),
  )
  const old = gone.rows.find((r) => r.label === 'old')!
  assert.deepEqual([old.value, old.baselineValue, old.totalDelta], [0, 5, -50])
  const fresh = gone.rows.find((r) => r.label === 'new')!
  assert.deepEqual([fresh.value, fresh.baselineValue, fresh.totalDelta], [4, 0, 50])
})

test('frames whose share changed most: the doubled frame first, +10 percentage points, self and total', () => {
  const c = frameShareChanges(A, B, 5)
  assert.equal(c.baselineSamples, 100)
  assert.equal(c.candidateSamples, 180)
  for (const kind of ['self', 'total'] as const) {
    const top = c[kind][0]!
    assert.equal(top.frame, 'hot', kind)
    assert.ok(
      Math.abs(top.baseline - 10) < 1e-9 && Math.abs(top.candidate - 20) < 1e-9,
      `${kind}: ${top.baseline}% -> ${top.candidate}%`,
    )
    assert.ok(Math.abs(top.change - 10) < 1e-9, `${kind}: +${top.change} pp`)
    assert.deepEqual([top.baselineSamples, top.candidateSamples], [10, 36])
    assert.equal(c[kind].length, 5, 'limit')
    assert.ok(
      c[kind].slice(1).every((x) => Math.abs(x.change + 10 / 9) < 1e-9),
      'the others lost 1.11 pp each',
    )
  }
  // main and work are on every stack of both: unchanged, not listed.
  assert.ok(!c.total.some((x) => x.frame === 'main' || x.frame === 'work'))
  // Recursion counts a frame once per stack for the total share.
  const rec = frameShareChanges(
    new Map([['a;b', 1]]),
    new Map([
      ['a;b;a;b', 1],
      ['c', 1],
    ]),
  )
  assert.equal(rec.total.find((x) => x.frame === 'a')!.candidate, 50)
})

test('SVG export: one <rect> and <title> per visible frame, labels cut to fit, diff colours from the change', () => {
  const g = flameGraph(fixture('kafka-broker-cpu-10ms.collapsed'))
  const svg = flameGraphSvg(g, { title: 'broker <cpu>', width: 1200 })
  assert.match(svg, /^<\?xml version="1\.0" standalone="no"\?>\n<svg /)
  assert.ok(svg.includes('broker &lt;cpu&gt;'), 'text is escaped')
  const visible = g.rows.filter((r) => (r.value * 1180) / g.total >= 0.1).length
  assert.equal(svg.match(/<title>/g)?.length, visible)
  assert.equal(svg.match(/<rect /g)?.length, visible + 1, 'plus the background')
  assert.ok(svg.includes('<title>all (170 samples, 100.00%)</title>'))
  assert.ok(svg.includes('<title>kafka/server/KafkaRequestHandler.run (108 samples, 63.53%)</title>'))
  assert.ok(
    Array.from({ length: svg.length }, (_, i) => svg.charCodeAt(i)).every((c) => c >= 9),
    'no control characters (not allowed in XML)',
  )
  const diff = flameGraphSvg(diffFlameGraph(A, B), { title: 'diff' })
  assert.match(
    diff,
    joinRegExp([
      /<title>hot \(36 samples, 20\.00%\); self \+10\.00 pp, total \+10\.00 pp \(baseline 10 samples\)<\/title>/,
      /<rect [^>]*fill="rgb\(255,0,0\)"/,
    ]),
  )
})
