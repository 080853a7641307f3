/**
 * The guides' first blocks as the guides tier reads them (test/helpers/guide-blocks.ts), checked in npm test without
 * running them (npm run test:guides runs them): every guide's marker is valid, every guide with a ```sh block is
 * either run or skipped with a reason, and the list says which (a diagnostic of this test). Also the marker's
 * grammar and the script a block becomes.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { blockScript, parseMarker, readGuideBlocks, type GuideBlock } from '../helpers/guide-blocks.js'

test("every guide's first block is run by test:guides or skipped with a reason, never silently", (t) => {
  const blocks = readGuideBlocks(repoRoot())
  assert.ok(blocks.length >= 10)
  const run = blocks.filter((b) => b.block !== undefined && b.marker.skip === undefined)
  const skipped = blocks.filter((b) => b.block !== undefined && b.marker.skip !== undefined)
  const none = blocks.filter((b) => b.block === undefined)
  t.diagnostic(`run by npm run test:guides: ${run.map((b) => b.guide).join(', ')}`)
  for (const b of skipped) t.diagnostic(`skipped: ${b.guide}: ${b.marker.skip}`)
  t.diagnostic(`no \`\`\`sh block: ${none.map((b) => b.guide).join(', ')}`)
  // The example is run, as written: `npx benchstream server &` on a fresh clone.
  const experiments = run.find((b) => b.guide === 'docs/guides/experiments.md')
  assert.ok(experiments !== undefined)
  assert.match(experiments.block!, /^npx benchstream server & /)
  assert.deepEqual(experiments.marker.setup, [])
  for (const b of skipped) assert.ok(b.marker.skip!.length >= 20, `${b.guide}: say why it is skipped`)
  // A first block's commands run on a fresh clone from its root: `benchstream` alone is not on PATH there.
  for (const b of run)
    for (const line of [...b.marker.setup, ...b.block!.split('\n')])
      assert.doesNotMatch(line, /^\s*benchstream /, `${b.guide}: "${line}" needs npx`)
})

test('the marker: skip, setup, interrupt, exit and timeout; anything else is refused with where', () => {
  const m = parseMarker(
    'setup: npx benchstream server &\nsetup: cp a b\ninterrupt: 5 --follow\n' +
      'exit: 5 benchstream compare\ntimeout: 900\n',
    'g.md',
  )
  assert.deepEqual(m, {
    skip: undefined,
    setup: ['npx benchstream server &', 'cp a b'],
    interrupt: [{ afterS: 5, text: '--follow' }],
    exit: [{ code: 5, text: 'benchstream compare' }],
    timeoutS: 900,
  })
  assert.equal(parseMarker('skip: needs Docker\n', 'g.md').skip, 'needs Docker')
  assert.equal(parseMarker('', 'g.md').timeoutS, 600)
  assert.throws(() => parseMarker('run: x', 'g.md'), /g\.md: "run: x" is not a first-block-test line/)
  assert.throws(() => parseMarker('timeout: 5', 'g.md'), /timeout: 5: 10 to 3600 s/)
  assert.throws(() => parseMarker('interrupt: --follow', 'g.md'), /expected SECONDS TEXT/)
  assert.throws(() => parseMarker('exit: 0 compare', 'g.md'), /exit: 0 compare: a code from 1 to 255/)
  assert.throws(() => parseMarker('skip: x\nsetup: y', 'g.md'), /a skipped block has no setup/)
})

test("a block's script: strict, setup first, interrupted lines wrapped, the background jobs listed last", () => {
  const b: GuideBlock = {
    guide: 'docs/guides/x.md',
    line: 3,
    block: 'npx benchstream alerts\nnpx benchstream alerts --follow   # until Ctrl-C\nnpx benchstream compare a b',
    marker: parseMarker('setup: npx benchstream server &\ninterrupt: 5 --follow\nexit: 5 benchstream compare', 'x.md'),
  }
  const lines = blockScript(b, '/tmp/jobs').split('\n')
  assert.equal(lines[0], 'set -eo pipefail')
  assert.match(lines[1]!, /^__until_ctrl_c\(\) \{ .*timeout --preserve-status -s INT "\$s" "\$@"/)
  assert.match(lines[2]!, /^__exit_ok\(\) \{ .*"\$@" \|\| rc=\$\?; \[ "\$rc" -eq 0 \] \|\| \[ "\$rc" -eq "\$c" \]; \}$/)
  assert.deepEqual(lines.slice(3), [
    'npx benchstream server &',
    'npx benchstream alerts',
    '__until_ctrl_c 5 npx benchstream alerts --follow   # until Ctrl-C',
    '__exit_ok 5 npx benchstream compare a b',
    'jobs -p > "/tmp/jobs"',
    '',
  ])
})

test('the wrappers in bash: an allowed code passes and another fails; Ctrl-C ends a command that would run on', () => {
  const b: GuideBlock = { guide: 'x.md', line: 1, block: '', marker: parseMarker('', 'x.md') }
  const prelude = blockScript(b, '/dev/null').split('\n').slice(0, 3).join('\n')
  const rc = (line: string): number | null =>
    spawnSync('bash', ['-c', `${prelude}\n${line}`], { stdio: 'ignore', timeout: 20_000 }).status
  assert.equal(rc("__exit_ok 5 sh -c 'exit 5'"), 0)
  assert.equal(rc("__exit_ok 5 sh -c 'exit 0'"), 0)
  assert.notEqual(rc("__exit_ok 5 sh -c 'exit 4'"), 0)
  // sleep dies of the SIGINT (130): what Ctrl-C does to a command that has no handler.
  assert.equal(rc('__until_ctrl_c 1 sleep 30'), 0)
  assert.notEqual(rc("__until_ctrl_c 5 sh -c 'exit 3'"), 0)
})
