/**
 * A flame graph (or a differential one) as a self-contained SVG: no script,
 * no external font or style, so it shows the same in a mail client, a
 * browser or an image viewer. Frames grow upwards from the root, as in
 * flamegraph.pl; each has a <title> tooltip with its samples and share.
 *
 * The colour functions are self-contained on purpose: the web view
 * (services/api/profiles-page.ts) embeds their source, so both draw alike.
 */
import type { DiffFlameGraph, DiffRow, FlameGraph } from './flame-graph.js'

/**
 * flamegraph.pl's "hot" palette, chosen by a hash of the name so a frame
 * keeps its colour across graphs: red 205-255, green 0-230, blue 0-55.
 */
export function frameColor(name: string): string {
  let h = 2166136261
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0
  const v1 = (h & 0xff) / 256
  const v2 = ((h >>> 8) & 0xff) / 256
  const v3 = ((h >>> 16) & 0xff) / 256
  return `rgb(${205 + Math.floor(50 * v3)},${Math.floor(230 * v1)},${Math.floor(55 * v2)})`
}

/**
 * flamegraph.pl's color_scale for differential graphs: white for no change,
 * red for a larger share in the candidate, blue for a smaller one, full
 * strength at the largest change of the graph (`max`, > 0).
 */
export function diffColor(delta: number, max: number): string {
  let r = 255
  let g = 255
  let b = 255
  const m = max > 0 ? max : 1
  if (delta > 0) g = b = Math.floor((210 * (m - Math.min(delta, m))) / m)
  else if (delta < 0) r = g = Math.floor((210 * (m + Math.max(delta, -m))) / m)
  return `rgb(${r},${g},${b})`
}

export interface SvgOptions {
  title: string
  subtitle?: string
  /** Image width in px. @default 1200 */
  width?: number
  /** Frames narrower than this (px) are left out. @default 0.1 */
  minWidthPx?: number
}

const FRAME_H = 16
const FONT = 12
/** Average glyph width relative to the font size (Verdana-like), for cutting labels. */
const CHAR_W = 0.59
const PAD = 10
const TOP = 50
const BOTTOM = 30

export function flameGraphSvg(g: FlameGraph | DiffFlameGraph, opts: SvgOptions): string {
  const width = opts.width ?? 1200
  const minWidth = opts.minWidthPx ?? 0.1
  const diff = isDiff(g)
  const scale = g.total > 0 ? (width - 2 * PAD) / g.total : 0
  const rows = g.rows.filter((r) => r.value * scale >= minWidth)
  const depth = rows.reduce((m, r) => Math.max(m, r.level), 0)
  const height = TOP + (depth + 1) * FRAME_H + BOTTOM
  const out: string[] = []
  out.push(`<?xml version="1.0" standalone="no"?>`)
  out.push(
    `<svg version="1.1" width="${width}" height="${height}" viewBox="0 ` +
      `0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg">`,
  )
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#f8f8f8"/>`)
  out.push(
    `<text x="${width / 2}" y="24" font-family="Verdana,sans-serif" ` +
      `font-size="17" text-anchor="middle">${esc(opts.title)}</text>`,
  )
  if (opts.subtitle !== undefined)
    out.push(
      `<text x="${width / 2}" y="42" font-family="Verdana,sans-serif" font-size="12" text-anchor="middle" ` +
        `fill="#555">${esc(opts.subtitle)}</text>`,
    )
  out.push(`<g font-family="Verdana,sans-serif" font-size="${FONT}">`)
  for (const r of rows) {
    const x = PAD + r.x * scale
    const w = r.value * scale
    const y = height - BOTTOM - (r.level + 1) * FRAME_H
    const pct = g.total > 0 ? (100 * r.value) / g.total : 0
    let info = `${r.label} (${r.value.toLocaleString('en-US')} samples, ${pct.toFixed(2)}%)`
    let fill = frameColor(r.label)
    if (diff) {
      const d = r as DiffRow
      info +=
        `; self ${signed(d.selfDelta)} pp, total ${signed(d.totalDelta)} ` +
        `pp (baseline ${d.baselineValue.toLocaleString('en-US')} samples)`
      fill = diffColor(d.selfDelta, g.maxSelfDelta)
    }
    const chars = Math.floor(w / (FONT * CHAR_W))
    const text = chars < 3 ? '' : r.label.length <= chars ? r.label : `${r.label.slice(0, chars - 2)}..`
    out.push(
      `<g><title>${esc(info)}</title><rect x="${x.toFixed(2)}" y="${y}" ` +
        `width="${w.toFixed(2)}" height="${FRAME_H - 1}" ` +
        `fill="${fill}" rx="2" ry="2"/>` +
        (text === '' ? '' : `<text x="${(x + 3).toFixed(2)}" y="${y + FRAME_H - 4}">${esc(text)}</text>`) +
        '</g>',
    )
  }
  out.push('</g>')
  const legend = diff
    ? "width: candidate samples; colour: change of the frame's self share from the baseline (red more, blue less)"
    : 'width: samples; frames grow upwards from the root'
  out.push(
    `<text x="${PAD}" y="${height - 10}" font-family="Verdana,sans-serif" ` +
      `font-size="11" fill="#555">${esc(legend)}</text>`,
  )
  out.push('</svg>\n')
  return out.join('\n')
}

function isDiff(g: FlameGraph | DiffFlameGraph): g is DiffFlameGraph {
  return 'baselineTotal' in g
}

function signed(n: number): string {
  return `${n > 0 ? '+' : ''}${n.toFixed(2)}`
}

// oxlint-disable-next-line no-control-regex
const XML_FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g

function esc(s: string): string {
  // Control characters are not allowed in XML 1.0 at all, escaped or not.
  return s
    .replace(XML_FORBIDDEN, '?')
    .replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'))
}
