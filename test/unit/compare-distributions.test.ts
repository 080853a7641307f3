import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  erfc,
  logGamma,
  normalCdf,
  normalUpperTail,
  studentTCdf,
  studentTQuantile,
  studentTTwoSided,
} from '../../services/core/compare/distributions.js'

// References computed with mpmath at 30 digits (erfc, betainc, ncdf, findroot).
const close = (actual: number, expected: number, rel: number, what: string): void => {
  assert.ok(
    Math.abs(actual - expected) <= rel * Math.abs(expected),
    `${what}: ${actual} vs ${expected} (relative error ${Math.abs(actual - expected) / Math.abs(expected)})`,
  )
}

test('erfc matches high-precision values on both sides of the series/continued-fraction switch', () => {
  const ref: Array<[number, number]> = [
    [0.1, 0.8875370839817152],
    [0.9, 0.20309178757716786],
    [2.4, 0.0006885138966450786],
    [2.6, 0.0002360344165293492],
    [4, 1.541725790028002e-8],
    [7, 4.183825607779414e-23],
  ]
  for (const [x, e] of ref) close(erfc(x), e, 1e-13, `erfc(${x})`)
  close(erfc(-0.9), 2 - 0.20309178757716786, 1e-15, 'erfc(-0.9)')
})

test('normal CDF and its upper tail, including far in the tail', () => {
  close(normalCdf(-6), 9.86587645037698e-10, 1e-12, 'Φ(-6)')
  close(normalCdf(1.5), 0.9331927987311419, 1e-14, 'Φ(1.5)')
  close(normalUpperTail(6), 9.86587645037698e-10, 1e-12, '1-Φ(6)')
  assert.equal(normalCdf(0), 0.5)
})

test('log-gamma against factorials and Γ(1/2) = √π', () => {
  close(logGamma(5), Math.log(24), 1e-14, 'lnΓ(5)')
  close(logGamma(0.5), Math.log(Math.sqrt(Math.PI)), 1e-14, 'lnΓ(1/2)')
  close(logGamma(11), Math.log(3628800), 1e-14, 'lnΓ(11)')
})

test("Student's t two-sided tails, with fractional and large degrees of freedom", () => {
  const ref: Array<[number, number, number]> = [
    [0.5, 3, 0.651447964848151],
    [2.0, 3.7999, 0.11982249437115952],
    [3.5, 12.25, 0.004255053032057365],
    [1.0, 500, 0.3177942072606084],
    [8, 4, 0.0013238969092171679],
  ]
  for (const [t, df, e] of ref) {
    close(studentTTwoSided(t, df), e, 1e-11, `P(|T_${df}| >= ${t})`)
    close(studentTCdf(-t, df), e / 2, 1e-11, `P(T_${df} <= -${t})`)
  }
  assert.equal(studentTTwoSided(Number.POSITIVE_INFINITY, 3), 0)
  assert.ok(Number.isNaN(studentTTwoSided(1, 0)))
})

test("Student's t quantiles invert the CDF", () => {
  close(studentTQuantile(0.975, 3.8), 2.835035879321204, 1e-10, 't(0.975, 3.8)')
  close(studentTQuantile(0.995, 30), 2.7499956535672254, 1e-10, 't(0.995, 30)')
  close(studentTQuantile(0.9, 2), 1.8856180831641267, 1e-10, 't(0.9, 2)') // closed form: 4/sqrt(4.5)
  close(studentTQuantile(0.025, 3.8), -2.835035879321204, 1e-10, 't(0.025, 3.8)')
  assert.equal(studentTQuantile(0.5, 7), 0)
})
