import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  formatMarkdownTable,
  formatTerminalTable,
  rowFromThroughputVerdict,
  rowFromVerdict,
  type ComparisonRow,
} from '../../services/core/compare/format.js'
import { assessThrottle, throttledThroughputVerdict } from '../../services/core/compare/throttled.js'
import { compareFigure } from '../../services/core/compare/verdict.js'

const tp = compareFigure(
  { runs: [12_300, 12_350, 12_400, 12_200, 12_350] },
  { runs: [10_980, 11_000, 10_950, 11_020, 10_990] },
  { direction: 'higher-is-better' },
)
const p99 = compareFigure(
  { runs: [812, 800, 830, 805, 815] },
  { runs: [809, 820, 798, 811, 825] },
  { direction: 'lower-is-better' },
)
// ANSI escapes start with ESC (0x1b); built from its code so no regex holds a control character.
const ESC = String.fromCharCode(27)
const ANSI_SGR = new RegExp(`${ESC}\\[\\d+m`, 'g')
const rows: ComparisonRow[] = [rowFromVerdict('throughput (ops/s)', tp), rowFromVerdict('READ p99 (µs)', p99)]

test('rows carry the center, spread, change and verdict of the statistics', () => {
  const r = rows[0]
  assert.equal(r?.verdict, 'regression')
  assert.equal(r?.baseline?.center, 12_350)
  assert.equal(r?.candidate?.center, 10_990)
  assert.ok(Math.abs((r?.changePercent ?? 0) - ((10_990 - 12_350) / 12_350) * 100) < 1e-9)
  assert.equal(r?.pValue, 2 / 252)
  assert.equal(r?.samples, 'runs')
})

test('terminal table: aligned columns, benchstat-like ~ and (p=... n=...)', () => {
  const text = formatTerminalTable(rows)
  const lines = text.trimEnd().split('\n')
  assert.equal(lines.length, 3)
  assert.match(lines[0] ?? '', /^figure\s+baseline\s+candidate\s+change\s+verdict$/)
  assert.match(
    lines[1] ?? '',
    /^throughput \(ops\/s\)\s+12\.35k ± 1%\s+10\.99k ± 0%\s+-11\.01%\s+regression \(p=0\.008 n=5\+5\)$/,
  )
  assert.match(lines[2] ?? '', /^READ p99 \(µs\)\s+812 ± 2%\s+811 ± 2%\s+~\s+~ \(p=\d\.\d{3} n=5\+5\)$/)
  // Columns line up: each header starts where its cells start (left-aligned) or ends where they end (right-aligned).
  const verdictAt = (lines[0] ?? '').indexOf('verdict')
  assert.equal((lines[1] ?? '').indexOf('regression'), verdictAt)
  assert.equal((lines[2] ?? '').lastIndexOf('~ ('), verdictAt)
  const changeEnd = (lines[0] ?? '').indexOf('change') + 'change'.length
  assert.equal((lines[1] ?? '').indexOf('-11.01%') + '-11.01%'.length, changeEnd)
  assert.ok(!text.includes(ESC))
})

test('colour marks regressions red and keeps the alignment', () => {
  const plain = formatTerminalTable(rows)
  const coloured = formatTerminalTable(rows, { color: true })
  assert.ok(coloured.includes(`${ESC}[31m`))
  assert.ok(coloured.includes(`${ESC}[2m`))
  // Stripped of escapes, each coloured line is the plain line (trailing padding aside).
  const strip = (s: string): string[] =>
    s
      .replace(ANSI_SGR, '')
      .split('\n')
      .map((l) => l.trimEnd())
  assert.deepEqual(strip(coloured), strip(plain))
})

test('markdown table: header, alignment row, escaped pipes, minimum-effect and target notes', () => {
  const below = compareFigure(
    { runs: Array.from({ length: 30 }, (_, i) => 10_000 + (i % 3)) },
    { runs: Array.from({ length: 30 }, (_, i) => 10_050 + (i % 3)) },
    { direction: 'higher-is-better' },
  )
  const throttled = throttledThroughputVerdict(
    assessThrottle([10_000, 10_000, 10_000].map((throughput) => ({ throughput, target: 10_000 }))),
    assessThrottle([8_800, 8_700, 8_900].map((throughput) => ({ throughput, target: 10_000 }))),
    null,
  )
  const md = formatMarkdownTable([
    ...rows,
    rowFromVerdict('UPDATE|INSERT p99 (µs)', below),
    rowFromThroughputVerdict('throughput (ops/s), throttled', throttled),
  ])
  const lines = md.trimEnd().split('\n')
  assert.equal(lines[0], '| figure | baseline | candidate | change | verdict |')
  assert.equal(lines[1], '| :--- | ---: | ---: | ---: | :--- |')
  assert.match(
    lines[2] ?? '',
    /^\| throughput \(ops\/s\) \| 12\.35k ± 1% \| 10\.99k ± 0% \| -11\.01% \| regression \(p=0\.008 n=5\+5\) \|$/,
  )
  assert.match(
    lines[4] ?? '',
    /^\| UPDATE\\\|INSERT p99 \(µs\) \| .* \| ~ \| ~ below 1% minimum effect \(p=\d\.\de-\d+ n=30\+30\) \|$/,
  )
  assert.equal(
    lines[5],
    '| throughput (ops/s), throttled | — | — | — | below target: 13.0% short of target 10000 ops/s |',
  )
  // Every row has the same number of unescaped cell separators.
  for (const l of lines) assert.equal(l.replace(/\\\|/g, '').split('|').length, 7, l)
})

test('windows and insufficient data are shown as such', () => {
  const w = compareFigure(
    { runs: [1], windows: [Array.from({ length: 12 }, (_, i) => 100 + (i % 4))] },
    { runs: [1], windows: [Array.from({ length: 12 }, (_, i) => 101 + (i % 4))] },
    { direction: 'higher-is-better', replicates: 200 },
  )
  const none = compareFigure({ runs: [100] }, { runs: [90] }, { direction: 'higher-is-better' })
  const text = formatTerminalTable([rowFromVerdict('throughput (ops/s)', w), rowFromVerdict('p99 (µs)', none)])
  assert.match(text, /n=12\+12 windows\)/)
  // Not testable: both values, their change, and why no verdict.
  assert.match(text, /p99 \(µs\)\s+100\s+90\s+-10\.00%\s+n = 1 \+ 1: not testable$/m)
})
