// The test runner's own accounting (test/verdicts.mjs): every top-level test a file queued must reach the runner
// with a verdict, or the run fails. Checked on what Node's runner and our results reporter really write, for the two
// ways a verdict goes missing that Node itself reports as a pass: a file's process exiting part-way, and the tail of
// a child's report cut off on its way (nodejs/node#64833, seen in a CI run here: 725 of 729 tests, exit 0).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'

interface ResultRecord {
  outcome: string
  name: string
  file: string
  line?: number
  column?: number
  nesting: number
}
interface Problem {
  file: string
  name: string | undefined
  line: number | undefined
  why: string
}
type Unreported = (records: ResultRecord[]) => Problem[]

const root = repoRoot()
const { unreported } = (await import(pathToFileURL(path.join(root, 'test', 'verdicts.mjs')).href)) as {
  unreported: Unreported
}
const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-verdicts-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const write = (name: string, text: string): string => {
  const file = path.join(dir, name)
  writeFileSync(file, text)
  return file
}
const helper = write(
  'helper.mjs',
  "import { test } from 'node:test'\nexport const declare = (n) => test(`via helper ${n}`, () => {})\n",
)
// Every kind of top-level test the suite has: plain, in a suite, skipped, todo, declared by a helper module.
const whole = write(
  'whole.test.mjs',
  [
    "import { describe, test } from 'node:test'",
    `import { declare } from ${JSON.stringify(pathToFileURL(helper).href)}`,
    "for (let i = 0; i < 6; i++) test(`plain ${i}`, async (t) => { await t.test('sub', () => {}) })",
    "describe('a suite', () => { test('in the suite', () => {}) })",
    "test.skip('skipped', () => {})",
    "test.todo('todo')",
    'declare(1)',
    'declare(2)',
  ].join('\n'),
)
const exits = write(
  'exits.test.mjs',
  [
    "import { test } from 'node:test'",
    "test('one', () => {})",
    "test('two: the code under test calls process.exit(0)', () => { process.exit(0) })",
    "test('three', () => {})",
  ].join('\n'),
)

/**
 * The environment of a runner of our own: without NODE_TEST_CONTEXT, which the runner running this file sets and
 * which would make the inner runner a child that streams its events to stdout instead of running reporters.
 */
function childEnv(results: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, BENCHSTREAM_TEST_RESULTS: results }
  delete env.NODE_TEST_CONTEXT
  return env
}

/** Runs Node's test runner on `files` with our results reporter, as test/run.mjs does; its records. */
function run(files: string[]): { status: number | null; records: ResultRecord[] } {
  const results = path.join(dir, `results-${Math.random().toString(36).slice(2)}.jsonl`)
  const r = spawnSync(
    process.execPath,
    [
      '--test',
      '--test-concurrency=2',
      `--test-reporter=${path.join(root, 'test', 'results-reporter.mjs')}`,
      '--test-reporter-destination=stdout',
      ...files,
    ],
    { env: childEnv(results), encoding: 'utf8', timeout: 60_000 },
  )
  const text = readFileSync(results, 'utf8')
  return {
    status: r.status,
    records: text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as ResultRecord),
  }
}

test('a whole run: every queued test has its verdict, none is missing', () => {
  const { status, records } = run([whole])
  assert.equal(status, 0)
  const verdicts = records.filter((r) => r.nesting === 0 && r.outcome !== 'queued')
  // 6 plain, the suite, skipped, todo, 2 by the helper (their file is the helper's)
  assert.equal(verdicts.length, 11)
  assert.equal(verdicts.filter((r) => r.file === helper).length, 2)
  assert.deepEqual(unreported(records), [])
})

test('a report cut off on its way: exactly the tests whose verdicts were lost are named', () => {
  const { records } = run([whole])
  // What a cut pipe leaves: the stream up to some point. Cut before the last three top-level verdicts.
  const verdictAt = records.flatMap((r, i) => (r.nesting === 0 && r.outcome !== 'queued' ? [i] : []))
  const cut = records.slice(0, verdictAt.at(-3))
  const lost = records.slice(verdictAt.at(-3)).filter((r) => r.nesting === 0 && r.outcome !== 'queued')
  assert.deepEqual(
    unreported(cut).map((p) => p.name),
    lost.map((r) => r.name),
  )
  assert.match(unreported(cut)[0]?.why ?? '', /never reported a verdict/)
})

test('a file whose process exits 0 part-way: Node passes it as one test; it is named as reporting nothing', () => {
  const { status, records } = run([exits, whole])
  assert.equal(status, 0, "Node's runner itself passes this run")
  const problems = unreported(records)
  assert.equal(problems.length, 1)
  assert.equal(problems[0]?.file, exits)
  assert.match(problems[0]?.why ?? '', /ended without reporting any test/)
})
