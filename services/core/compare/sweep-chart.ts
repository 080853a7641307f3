/**
 * A sweep as a standalone SVG (throughput left, p99 right, markers at
 * saturation and knee), pure string building with every text escaped. The x
 * axis is categorical: sweeps double the load, and a linear axis would crowd
 * the low end (docs/design/sweeps.md#the-chart).
 */
import type { SweepAnalysis } from './saturation.js'

export interface SweepChartOptions {
  /** Shown above the chart. */
  title?: string
  /** What x is, with its unit: `threads` or `target (ops/s)`. @default 'threads' */
  xLabel?: string
  /** @default 760 */
  width?: number
  /** @default 420 */
  height?: number
}

const COLORS = {
  throughput: '#1f77b4',
  p99: '#d62728',
  saturation: '#2ca02c',
  knee: '#9467bd',
  axis: '#333333',
  grid: '#e5e5e5',
}
const MARGIN = { left: 78, right: 78, top: 64, bottom: 64 }
const TICKS = 5

/** Renders the sweep as an SVG document (see the file comment). */
export function renderSweepChart(analysis: SweepAnalysis, options: SweepChartOptions = {}): string {
  const width = options.width ?? 760
  const height = options.height ?? 420
  const xLabel = options.xLabel ?? 'threads'
  const pts = analysis.points
  const plotW = width - MARGIN.left - MARGIN.right
  const plotH = height - MARGIN.top - MARGIN.bottom
  const bottom = MARGIN.top + plotH
  const right = MARGIN.left + plotW
  const xAt = (i: number): number => MARGIN.left + ((i + 0.5) * plotW) / Math.max(1, pts.length)

  const tpAxis = niceAxis(Math.max(0, ...pts.map((p) => p.throughput)))
  const p99s = pts.map((p) => p.p99Us).filter((v): v is number => v !== null && Number.isFinite(v))
  // Latencies in ms once they reach 10 ms, so tick labels stay short.
  const p99Max = Math.max(0, ...p99s)
  const inMs = p99Max >= 10_000
  const p99Axis = niceAxis(inMs ? p99Max / 1000 : p99Max)
  const yTp = (v: number): number => bottom - (v / tpAxis.max) * plotH
  const yP99 = (us: number): number => bottom - ((inMs ? us / 1000 : us) / p99Axis.max) * plotH

  const out: string[] = []
  const title = options.title ?? 'Sweep: throughput and p99'
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ` +
      `${height}" font-family="sans-serif" font-size="12" role="img" aria-label="${esc(title)}">`,
  )
  out.push(`<title>${esc(title)}</title>`)
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`)
  out.push(`<text x="${width / 2}" y="20" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`)

  // Grid and left axis (throughput), right axis (p99).
  out.push('<g class="axis-left">')
  for (let k = 0; k <= TICKS; k++) {
    const v = (tpAxis.max * k) / TICKS
    const y = n1(yTp(v))
    out.push(`<line x1="${MARGIN.left}" y1="${y}" x2="${right}" y2="${y}" stroke="${COLORS.grid}"/>`)
    out.push(
      `<text x="${MARGIN.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" ` +
        `fill="${COLORS.throughput}">${esc(tickLabel(v))}</text>`,
    )
  }
  out.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${bottom}" stroke="${COLORS.axis}"/>`)
  out.push(
    `<text transform="translate(18 ${n1(MARGIN.top + plotH / 2)}) rotate(-90)" text-anchor="middle" ` +
      `fill="${COLORS.throughput}">throughput (ops/s)</text>`,
  )
  out.push('</g>')
  out.push('<g class="axis-right">')
  for (let k = 0; k <= TICKS; k++) {
    const v = (p99Axis.max * k) / TICKS
    out.push(
      `<text x="${right + 6}" y="${n1(bottom - (k / TICKS) * plotH)}" ` +
        `dominant-baseline="middle" fill="${COLORS.p99}">${esc(tickLabel(v))}</text>`,
    )
  }
  out.push(`<line x1="${right}" y1="${MARGIN.top}" x2="${right}" y2="${bottom}" stroke="${COLORS.axis}"/>`)
  out.push(
    `<text transform="translate(${width - 14} ${n1(MARGIN.top + plotH / 2)}) rotate(90)" text-anchor="middle" ` +
      `fill="${COLORS.p99}">p99 (${inMs ? 'ms' : 'µs'})</text>`,
  )
  out.push('</g>')

  // x axis: one labelled position per point.
  out.push('<g class="axis-x">')
  out.push(`<line x1="${MARGIN.left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="${COLORS.axis}"/>`)
  pts.forEach((p, i) => {
    const x = n1(xAt(i))
    out.push(`<line x1="${x}" y1="${bottom}" x2="${x}" y2="${bottom + 5}" stroke="${COLORS.axis}"/>`)
    out.push(`<text x="${x}" y="${bottom + 18}" text-anchor="middle">${esc(tickLabel(p.x))}</text>`)
  })
  out.push(`<text x="${n1(MARGIN.left + plotW / 2)}" y="${height - 14}" text-anchor="middle">${esc(xLabel)}</text>`)
  out.push('</g>')

  // Markers first, so the curves are drawn over them.
  const marker = (cls: string, i: number, color: string, label: string): void => {
    const x = n1(xAt(i))
    out.push(
      `<g class="${cls}"><line x1="${x}" y1="${MARGIN.top}" x2="${x}" y2="${bottom}" stroke="${color}" ` +
        `stroke-width="1.5" stroke-dasharray="6 4"/>`,
    )
    out.push(`<text x="${x}" y="${MARGIN.top - 6}" text-anchor="middle" fill="${color}">${esc(label)}</text></g>`)
  }
  if (analysis.saturation !== null)
    marker(
      'marker-saturation',
      analysis.saturation.index,
      COLORS.saturation,
      `saturation at ${tickLabel(analysis.saturation.x)}`,
    )
  if (analysis.knee !== null)
    marker('marker-knee', analysis.knee.index, COLORS.knee, `knee at ${tickLabel(analysis.knee.x)}`)

  // Curves.
  const tpPath = pts.map((p, i) => `${n1(xAt(i))},${n1(yTp(p.throughput))}`).join(' ')
  out.push(
    `<g class="series-throughput"><polyline points="${tpPath}" fill="none" stroke="${COLORS.throughput}" ` +
      `stroke-width="2"/>`,
  )
  pts.forEach((p, i) =>
    out.push(
      `<circle class="point-throughput" cx="${n1(xAt(i))}" cy="${n1(yTp(p.throughput))}" ` +
        `r="4" fill="${COLORS.throughput}">` +
        `<title>${esc(`${tickLabel(p.x)}: ${tickLabel(p.throughput)} ops/s`)}</title></circle>`,
    ),
  )
  out.push('</g>')
  const withP99 = pts
    .map((p, i) => ({ p, i }))
    .filter(
      (e): e is { p: typeof e.p & { p99Us: number }; i: number } => e.p.p99Us !== null && Number.isFinite(e.p.p99Us),
    )
  out.push(
    '<g class="series-p99"><polyline points="' +
      withP99.map((e) => `${n1(xAt(e.i))},${n1(yP99(e.p.p99Us))}`).join(' ') +
      '" ' +
      `fill="none" stroke="${COLORS.p99}" stroke-width="2" stroke-dasharray="5 3"/>`,
  )
  withP99.forEach((e) =>
    out.push(
      `<rect class="point-p99" x="${n1(xAt(e.i) - 4)}" y="${n1(yP99(e.p.p99Us) - 4)}" width="8" height="8" ` +
        `fill="${COLORS.p99}"><title>${esc(`${tickLabel(e.p.x)}: p99 ${tickLabel(e.p.p99Us)} µs`)}</title></rect>`,
    ),
  )
  out.push('</g>')

  // Legend, top left, one row.
  const legend: Array<[string, string, string]> = [
    ['throughput (left axis)', COLORS.throughput, 'solid'],
    ['p99 (right axis)', COLORS.p99, 'dashed'],
  ]
  if (analysis.saturation !== null) legend.push(['saturation', COLORS.saturation, 'marker'])
  if (analysis.knee !== null) legend.push(['latency knee', COLORS.knee, 'marker'])
  out.push('<g class="legend">')
  let lx = MARGIN.left
  for (const [label, color, style] of legend) {
    const dash = style === 'solid' ? '' : ` stroke-dasharray="${style === 'dashed' ? '5 3' : '6 4'}"`
    out.push(`<line x1="${lx}" y1="38" x2="${lx + 22}" y2="38" stroke="${color}" stroke-width="2"${dash}/>`)
    out.push(`<text x="${lx + 28}" y="42">${esc(label)}</text>`)
    lx += 28 + label.length * 7 + 18
  }
  out.push('</g>')
  out.push('</svg>')
  return out.join('\n') + '\n'
}

/** Axis from 0 to a "nice" maximum (1, 2, 2.5 or 5 × 10^k per tick) at or above `max`. */
function niceAxis(max: number): { max: number } {
  if (!(max > 0)) return { max: 1 }
  const rough = max / TICKS
  const mag = 10 ** Math.floor(Math.log10(rough))
  const step = ([1, 2, 2.5, 5, 10].find((f) => f * mag >= rough) ?? 10) * mag
  return { max: step * TICKS }
}

/** 1234 → "1234", 12500 → "12.5k", 2000000 → "2M"; at most 3 significant digits after scaling. */
function tickLabel(v: number): string {
  const abs = Math.abs(v)
  if (abs >= 1e6) return `${trim(v / 1e6)}M`
  if (abs >= 1e4) return `${trim(v / 1e3)}k`
  return trim(v)
}

function trim(v: number): string {
  return String(Number(v.toPrecision(4)))
}

function n1(v: number): string {
  return String(Math.round(v * 10) / 10)
}

/** Escapes text for element content and double-quoted attribute values. */
function esc(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
}
