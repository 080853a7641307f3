import assert from 'node:assert/strict'
import { test } from 'node:test'
import { analyzeSweep } from '../../services/core/compare/saturation.js'
import { renderSweepChart } from '../../services/core/compare/sweep-chart.js'

/**
 * A tiny XML well-formedness check: every tag closes in order, attributes are
 * quoted, text holds no raw '<' and every '&' starts an entity. Returns the
 * elements as name + attributes, in document order.
 */
function parseXml(xml: string): Array<{ name: string; attrs: Record<string, string>; text: string }> {
  const elements: Array<{ name: string; attrs: Record<string, string>; text: string }> = []
  const stack: Array<{ name: string; attrs: Record<string, string>; text: string }> = []
  const token = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy
  let pos = 0
  let root = 0
  while (pos < xml.length) {
    token.lastIndex = pos
    const m = token.exec(xml)
    assert.ok(m !== null, `not well-formed at offset ${pos}: ${JSON.stringify(xml.slice(pos, pos + 40))}`)
    pos = token.lastIndex
    const [, closing, name, attrText, selfClosing, text] = m
    if (text !== undefined) {
      assert.ok(!/&(?!(amp|lt|gt|quot|#\d+);)/.test(text), `raw & in ${JSON.stringify(text)}`)
      const top = stack[stack.length - 1]
      if (top !== undefined) top.text += text
      else assert.equal(text.trim(), '', 'text outside the root element')
      continue
    }
    if (closing === '/') {
      const open = stack.pop()
      assert.equal(open?.name, name, `</${name}> closes <${open?.name}>`)
      continue
    }
    const attrs: Record<string, string> = {}
    for (const a of (attrText ?? '').matchAll(/([\w:-]+)="([^"]*)"/g)) {
      assert.ok(!((a[1] ?? '') in attrs), `duplicate attribute ${a[1]}`)
      assert.ok(!/&(?!(amp|lt|gt|quot|#\d+);)/.test(a[2] ?? ''), `raw & in attribute ${a[1]}`)
      attrs[a[1] ?? ''] = a[2] ?? ''
    }
    const el = { name: name ?? '', attrs, text: '' }
    elements.push(el)
    if (stack.length === 0) root++
    if (selfClosing !== '/') stack.push(el)
  }
  assert.equal(stack.length, 0, `unclosed: ${stack.map((e) => e.name).join(', ')}`)
  assert.equal(root, 1, 'one root element')
  return elements
}

const sweep = analyzeSweep(
  [1, 2, 4, 8, 16, 32].map((x, i) => ({
    x,
    throughput: [1000, 1950, 3800, 7000, 7200, 7100][i] ?? 0,
    p99Us: [200, 210, 230, 300, 800, 2000][i] ?? null,
  })),
)

test('the sweep chart is well-formed SVG with one marker per point on each curve', () => {
  const svg = renderSweepChart(sweep, { title: 'workload A <redis & "postgres">', xLabel: 'threads' })
  const els = parseXml(svg)
  assert.equal(els[0]?.name, 'svg')
  assert.equal(els[0]?.attrs.xmlns, 'http://www.w3.org/2000/svg')
  assert.equal(els.filter((e) => e.name === 'circle' && e.attrs.class === 'point-throughput').length, 6)
  assert.equal(els.filter((e) => e.name === 'rect' && e.attrs.class === 'point-p99').length, 6)
  const polylines = els.filter((e) => e.name === 'polyline')
  assert.equal(polylines.length, 2)
  for (const p of polylines) assert.equal((p.attrs.points ?? '').split(' ').length, 6)
  // Title escaped, in <title> and as the heading.
  assert.equal(els.find((e) => e.name === 'title')?.text, 'workload A &lt;redis &amp; &quot;postgres&quot;&gt;')
})

test('axes carry units and labels; saturation and knee are marked and in the legend', () => {
  const svg = renderSweepChart(sweep)
  const texts = parseXml(svg)
    .filter((e) => e.name === 'text')
    .map((e) => e.text)
  for (const t of [
    'throughput (ops/s)',
    'p99 (µs)',
    'threads',
    'saturation at 8',
    'knee at 16',
    'throughput (left axis)',
    'p99 (right axis)',
    'saturation',
    'latency knee',
  ])
    assert.ok(texts.includes(t), `missing text ${t}`)
  // x labels: one per point.
  for (const x of ['1', '2', '4', '8', '16', '32']) assert.ok(texts.includes(x), `missing x label ${x}`)
  // Throughput ticks: 0 to a nice maximum above 7200 (8000 in steps of 1600).
  assert.ok(texts.includes('0') && texts.includes('8000'), texts.join('|'))
  assert.match(svg, /class="marker-saturation"/)
  assert.match(svg, /class="marker-knee"/)
  // Higher throughput is drawn higher: y of the 16-thread point < y of the 1-thread point.
  const cy = [...svg.matchAll(/class="point-throughput" cx="[\d.]+" cy="([\d.]+)"/g)].map((m) => Number(m[1]))
  assert.ok((cy[4] ?? 0) < (cy[0] ?? 0))
})

test('millisecond latencies switch the right axis to ms; no markers when the sweep still scales', () => {
  const a = analyzeSweep([1, 2, 4].map((x) => ({ x, throughput: 1000 * x, p99Us: 20_000 * x })))
  const svg = renderSweepChart(a, { xLabel: 'target (ops/s)' })
  const texts = parseXml(svg)
    .filter((e) => e.name === 'text')
    .map((e) => e.text)
  assert.ok(texts.includes('p99 (ms)'))
  assert.ok(texts.includes('target (ops/s)'))
  assert.doesNotMatch(svg, /marker-saturation|marker-knee/)
  // A point without p99 is left out of the p99 curve only.
  const gap = renderSweepChart(
    analyzeSweep([
      { x: 1, throughput: 10, p99Us: 5 },
      { x: 2, throughput: 20, p99Us: null },
    ]),
  )
  assert.equal(parseXml(gap).filter((e) => e.attrs.class === 'point-p99').length, 1)
  assert.equal(parseXml(gap).filter((e) => e.attrs.class === 'point-throughput').length, 2)
})
