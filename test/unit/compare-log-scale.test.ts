/**
 * Welch's t-test on logarithms for ratio-scale figures (verdict.ts
 * logScale): a change by a factor with noise by a factor, as latencies of
 * repeated runs on a loaded machine are. The numbers are the SCAN p50s of
 * compare's e2e test on a two-core machine with eight clients.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compareFigure } from '../../services/core/compare/verdict.js'

const baseline = { runs: [37, 49, 52] }
const candidate = { runs: [16_576, 7632, 8352] }

test(
  '3 + 3 runs 200x apart with a factor-of-two spread: not significant on the raw scale, clearly ' + 'so on logarithms',
  () => {
    const raw = compareFigure(baseline, candidate, { direction: 'lower-is-better' })
    assert.equal(raw.method, 'welch-t')
    assert.equal(raw.verdict, 'no significant change')
    assert.ok(raw.pValue! > 0.05, `raw p ${raw.pValue}`)
    const log = compareFigure(baseline, candidate, { direction: 'lower-is-better', logScale: true })
    assert.equal(log.method, 'welch-t')
    assert.equal(log.verdict, 'regression')
    assert.ok(log.pValue! < 0.001, `log p ${log.pValue}`)
    assert.equal(log.effect.basis, 'geometric mean')
    const geo = (xs: number[]): number => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length)
    assert.ok(Math.abs(log.effect.relativeChange! - (geo(candidate.runs) / geo(baseline.runs) - 1)) < 1e-9)
    assert.ok(
      log.ci !== null &&
        log.ci.low > 0 &&
        log.ci.low <= log.effect.relativeChange! &&
        log.effect.relativeChange! <= log.ci.high,
    )
    assert.match(
      log.reason,
      /^Welch's t-test on the logarithms of 3 \+ 3 runs .*change of geometric means \+\d+\.\d\d%/,
    )
    // The cross-check stays on raw values (it is compared with ClickHouse's welchTTest on the same data).
    assert.equal(log.crossCheck!.welch.pValue, raw.crossCheck!.welch.pValue)
  },
)

test('logScale changes nothing where it does not apply: a zero sample, and Mann-Whitney (ranks)', () => {
  const withZero = compareFigure(
    { runs: [0, 1, 2] },
    { runs: [5, 6, 7] },
    { direction: 'lower-is-better', logScale: true },
  )
  assert.equal(withZero.effect.basis, 'mean')
  assert.equal(
    withZero.pValue,
    compareFigure({ runs: [0, 1, 2] }, { runs: [5, 6, 7] }, { direction: 'lower-is-better' }).pValue,
  )
  const a = { runs: [10, 11, 12, 13, 14] }
  const b = { runs: [20, 21, 22, 23, 24] }
  const mw = compareFigure(a, b, { direction: 'lower-is-better', logScale: true })
  assert.equal(mw.method, 'mann-whitney-u-exact')
  assert.equal(mw.pValue, compareFigure(a, b, { direction: 'lower-is-better' }).pValue)
})
