/**
 * The Prometheus alert rules (deploy/prometheus/benchstream-rules.yml,
 * generated from deploy/alerts/rules.json) are the committed generator
 * output, pass their promtool unit tests, and the tests catch a broken rule:
 * a copy whose threshold no longer sees a halving, and one that fires on a
 * steady run, must both fail. Needs promtool (Debian package prometheus;
 * .ci/run installs it).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { prometheusRulesText } from '../../services/cli/generate.js'
import { repoRoot } from '../../services/common/repo-root.js'

const dir = path.join(repoRoot(), 'deploy', 'prometheus')
const RULES = 'benchstream-rules.yml'
const TESTS = 'benchstream-rules.test.yml'

function promtool(args: string[], cwd: string): { status: number | null; out: string } {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8', timeout: 60_000 })
  if (r.error !== undefined && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error(
      'promtool is not installed: install the Debian package prometheus (apt-get install prometheus), as .ci/run does',
    )
  }
  return { status: r.status, out: `${r.stdout}${r.stderr}` }
}

test('the committed Prometheus rules are generated from the alert rules file (npm run generate)', () => {
  assert.equal(
    readFileSync(path.join(dir, RULES), 'utf8'),
    prometheusRulesText(),
    'deploy/prometheus/benchstream-rules.yml differs from deploy/alerts/rules.json: run `npm run generate`',
  )
})

test(
  'promtool: the rules pass their unit tests (steady run silent; drop, error rate, below target ' +
    'and no data fire with their labels)',
  () => {
    const r = promtool(['test', 'rules', path.join('deploy', 'prometheus', TESTS)], repoRoot())
    assert.equal(r.status, 0, r.out)
    assert.match(r.out, /SUCCESS/)
    const check = promtool(['check', 'rules', path.join(dir, RULES)], repoRoot())
    assert.equal(check.status, 0, check.out)
    assert.match(check.out, /SUCCESS: 7 rules found/)
  },
)

test('promtool: deliberately broken copies of the rules fail the same tests', (t) => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'benchstream-promtool-'))
  t.after(() => rmSync(tmp, { recursive: true, force: true }))
  copyFileSync(path.join(dir, TESTS), path.join(tmp, TESTS))
  const original = readFileSync(path.join(dir, RULES), 'utf8')
  assert.ok(original.includes('< 0.7 *'), 'the rule compares with 0.7 times the baseline')

  // Too lax: a halving is no longer a drop, so the expected alert is missing.
  writeFileSync(path.join(tmp, RULES), original.replace('< 0.7 *', '< 0.4 *'))
  const lax = promtool(['test', 'rules', TESTS], tmp)
  assert.notEqual(lax.status, 0, lax.out)
  assert.match(lax.out, /FAILED/)
  assert.match(lax.out, /BenchstreamThroughputDrop/)

  // Too eager: steady throughput counts as a drop, so alerts appear where none are expected.
  writeFileSync(path.join(tmp, RULES), original.replace('< 0.7 *', '< 1.1 *'))
  const eager = promtool(['test', 'rules', TESTS], tmp)
  assert.notEqual(eager.status, 0, eager.out)
  assert.match(eager.out, /run_id="steady"/)
})
