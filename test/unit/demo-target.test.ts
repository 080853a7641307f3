/**
 * The demo's default target from its probe (services/core/reports/demo-target.ts): a tenth of what the driver ran
 * unthrottled, rounded down to two significant digits, between a floor and a cap; a probe too short or without a
 * throughput gives the floor, said as such. The probe's figures are read with the demo's parser from a report the
 * real driver printed as the demo's probe (test/fixtures/demo/probe.stdout.txt).
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import {
  chooseDemoTarget,
  DEMO_TARGET_FRACTION,
  DEMO_TARGET_MAX,
  DEMO_TARGET_MIN,
} from '../../services/core/reports/demo-target.js'
import { parseDemoArgs } from '../../services/cli/demo.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'

test("a tenth of the probe's rate, rounded down to two digits, and why", () => {
  const text = readFileSync('test/fixtures/demo/probe.stdout.txt', 'utf8')
  const figure = (name: string): number => Number(new RegExp(`^\\[OVERALL\\], ${name}, (\\S+)$`, 'm').exec(text)![1])
  const ops = [...text.matchAll(/^\[(READ|UPDATE)\], Operations, (\d+)$/gm)].reduce((a, m) => a + Number(m[2]), 0)
  const r = parseYcsbFile('probe', text)
  assert.equal(r.kind, 'summary')
  if (r.kind !== 'summary') return
  const c = chooseDemoTarget({
    opsPerSec: r.throughputOpsPerSec ?? null,
    runtimeMs: r.runtimeMs ?? null,
    operations: r.operations,
  })
  assert.equal(r.operations, ops)
  const rate = figure('Throughput\\(ops\\/sec\\)')
  // 24,053.3 x 0.1 = 2,405.3 -> 2,400
  assert.equal(c.target, Math.floor(rate / 1000) * 100)
  const shown = Math.round(rate).toLocaleString('en-US')
  const seconds = (figure('RunTime\\(ms\\)') / 1000).toFixed(1)
  assert.ok(
    c.why.startsWith(`a tenth of the ${shown} ops/s this machine's driver ran unthrottled in a ${seconds} s probe, `),
    c.why,
  )
  assert.match(c.why, /--target N to choose/)
  for (const [rate, want] of [
    [66_468, 6600],
    [8650, 860],
    [12_345.6, 1200],
    [2000, 200],
  ] as const)
    assert.equal(chooseDemoTarget({ opsPerSec: rate, runtimeMs: 2000, operations: rate * 2 }).target, want, `${rate}`)
  assert.equal(DEMO_TARGET_FRACTION, 0.1)
})

test('the floor and the cap, each said', () => {
  const slow = chooseDemoTarget({ opsPerSec: 1500, runtimeMs: 2000, operations: 3000 })
  assert.equal(slow.target, DEMO_TARGET_MIN)
  assert.match(slow.why, /under the demo's floor of 200 ops\/s: expect the client to fall behind its schedule/)
  const fast = chooseDemoTarget({ opsPerSec: 900_000, runtimeMs: 2000, operations: 1_800_000 })
  assert.equal(fast.target, DEMO_TARGET_MAX)
  assert.match(fast.why, /over the demo's cap of 20,000 ops\/s/)
})

test('a probe that measured start-up, or nothing, gives the floor and says so', () => {
  const short = chooseDemoTarget({ opsPerSec: 50_000, runtimeMs: 400, operations: 20_000 })
  assert.equal(short.target, DEMO_TARGET_MIN)
  assert.match(short.why, /^the probe ran 20,000 operations in 400 ms, too few to size a target/)
  const few = chooseDemoTarget({ opsPerSec: 300, runtimeMs: 2000, operations: 600 })
  assert.equal(few.target, DEMO_TARGET_MIN)
  assert.match(few.why, /600 operations/)
  for (const opsPerSec of [null, 0, Number.NaN]) {
    const none = chooseDemoTarget({ opsPerSec, runtimeMs: 2000, operations: 0 })
    assert.equal(none.target, DEMO_TARGET_MIN)
    assert.match(none.why, /no throughput/)
  }
})

test('--target overrides the probe; without it the memory demo probes, the HBase demo runs unthrottled', () => {
  assert.equal(parseDemoArgs([]).target, undefined)
  assert.equal(parseDemoArgs(['--target', '750']).target, 750)
  assert.equal(parseDemoArgs(['--target', '0']).target, 0)
  assert.equal(parseDemoArgs(['--system', 'hbase']).target, 0)
  assert.throws(() => parseDemoArgs(['--target', '1.5']), /--target "1.5" is not allowed/)
})
