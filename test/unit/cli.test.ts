/**
 * The command line as a user meets it, through the real entry file
 * (bin/benchstream.js): help everywhere, one-line errors with what is
 * allowed, "did you mean", the same range whatever was wrong, and no stack
 * trace unless --debug. No services are started.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { describeFailure } from '../../services/cli/main.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { joinRegExp } from '../helpers/regexp.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')
const COMMANDS = [
  'demo',
  'run',
  'load',
  'server',
  'processor',
  'report',
  'runs',
  'sql',
  'ycsb',
  'import-ycsb',
  'compare',
  'history',
  'sweep',
  'alerts',
]

function cli(
  args: string[],
  env: Record<string, string> = {},
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, BENCHSTREAM_DATA_DIR: path.join(os.tmpdir(), 'benchstream-cli-unit-none'), ...env },
    timeout: 60_000,
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

const STACK = /\n\s+at .+\(.*:\d+:\d+\)|\n\s+at file:/

test('every subcommand answers --help, -h and `help <command>` with its usage, on stdout, exit 0', () => {
  for (const c of COMMANDS) {
    const long = cli([c, '--help'])
    assert.equal(long.code, 0, `${c} --help: ${long.stderr}`)
    assert.match(long.stdout, /^usage: benchstream /, `${c} --help`)
    assert.equal(long.stderr, '', `${c} --help wrote to stderr`)
    assert.equal(cli([c, '-h']).stdout, long.stdout, `${c} -h`)
    assert.equal(cli(['help', c]).stdout, long.stdout, `help ${c}`)
  }
  // sql --help is help, not a query named "--help"
  assert.match(cli(['sql', '--help']).stdout, /read-only query/)
  assert.match(cli(['help', 'thresholds']).stdout, /exits with code 99/)
  const top = cli(['--help'])
  assert.equal(top.code, 0)
  for (const c of COMMANDS) assert.match(top.stdout, new RegExp(`\\n  ${c} `), `top-level help lists ${c}`)
})

test('unknown commands, flags, properties and bindings name the closest valid one', () => {
  const cases: Array<[string[], RegExp]> = [
    [['runz'], /unknown command "runz"; did you mean run\?/],
    [['run', '--threads', '4'], /unknown option "--threads"; did you mean -threads\?/],
    [['run', '-p', 'readproportoin=0.5'], /unknown property readproportoin \(did you mean readproportion\?\)/],
    [['run', '-db', 'reddis'], /unknown binding "reddis"; did you mean redis\?/],
    [['demo', '--secnds', '3'], /unknown option --secnds; did you mean --seconds\?/],
    [['report', 'x', '--jsn'], /unknown option --jsn; did you mean --json\?/],
    [['alerts', '--folow'], /unknown option --folow; did you mean --follow\?/],
    [['alerts', '--state', 'open'], /--state "open" is not allowed: expected firing or resolved/],
    [['alerts', 'silence', '--rule', 'X'], /a silence without --run needs an end: --for DURATION or --until TIME/],
    [['alerts', 'silence', '--for', '1h'], /needs at least one of --rule, --run, --op, --severity/],
    [['alerts', 'silence', '--run', 'r1', '--for', '1 hour'], /--for "1 hour" is not allowed: expected a duration/],
    [['help', 'tresholds'], /no help for "tresholds"; did you mean thresholds\?/],
    [['run', '--threshold', 'READX.p99<2ms'], /unknown measurement READX \(did you mean READ\?\)/],
    [
      ['run', '--threshold', 'READ.p999<2ms'],
      /unknown metric p999 \(did you mean p99\.9\?\)|unknown metric p999 \(did you mean p99\?\)/,
    ],
  ]
  for (const [args, want] of cases) {
    const r = cli(args)
    assert.notEqual(r.code, 0, args.join(' '))
    assert.match(r.stderr, want, args.join(' '))
    assert.doesNotMatch(r.stderr, STACK, `${args.join(' ')} printed a stack trace`)
  }
})

test('a flag states one range whatever was wrong with its value', () => {
  const messages = ['abc', '0', '-1', '1.5', '100001', ''].map((v) => cli(['run', '-threads', v]).stderr.split('\n')[0])
  for (const m of messages)
    assert.match(m!, /^benchstream: BS_ERR_USAGE: -threads ".*" is not allowed: expected an integer from 1 to 100000$/)
  for (const v of ['abc', '0'])
    assert.match(
      cli(['demo', '--threads', v]).stderr,
      /--threads ".*" is not allowed: expected an integer from 1 to 100000/,
    )
  assert.match(cli(['run', '--seconds', '0']).stderr, /--seconds "0" is not allowed: expected an integer from 1 to/)
})

test('thresholds: a latency needs a unit, OVERALL has no latency, the grammar is stated', () => {
  assert.match(cli(['run', '--threshold', 'READ.p99<2']).stderr, /latency needs a unit: us, ms or s/)
  assert.match(cli(['run', '--threshold', 'OVERALL.p99<2ms']).stderr, /OVERALL has no latency/)
  assert.match(
    cli(['report', 'r', '--threshold', 'READ p99 < 2ms']).stderr,
    /expected <measurement>\.<metric><operator><value>\[unit\]/,
  )
})

test('--seconds with a smaller operationcount says which ends the run; the ending is k6-like with thresholds', () => {
  const r = cli([
    'run',
    '-P',
    'workloads/workloada',
    '-p',
    'recordcount=100',
    '-p',
    'operationcount=500',
    '--seconds',
    '60',
    '-db',
    'memory',
    '--no-emit',
    '--threshold',
    'OVERALL.operations==500',
    '--threshold',
    'READ.p99<1us',
  ])
  assert.match(
    r.stderr,
    joinRegExp([
      /note: --seconds 60 and operationcount=500: the run ends at whichever comes first; /,
      /add -p operationcount=0 to run for the full 60 s/,
    ]),
  )
  assert.match(r.stdout, /\[OVERALL\], RunTime\(ms\), \d+/)
  // 500 operations ended it; the verdicts are on stderr and one failed: exit 99.
  assert.match(r.stderr, /thresholds \(this client only .*\): 1 of 2 failed/)
  assert.match(r.stderr, /✓ OVERALL\.operations==500 +500/)
  assert.match(r.stderr, /✗ READ\.p99<1us +\d+ µs/)
  assert.equal(r.code, 99)
})

test('a failure prints one line; --debug adds the stack and its causes', () => {
  // ClickHouse that refuses connections: a library's error under ours.
  const plain = cli(['report', 'no-such-run'], { CLICKHOUSE_URL: 'http://127.0.0.1:1' })
  assert.equal(plain.code, 1)
  assert.equal(
    plain.stderr,
    'benchstream: BS_ERR_CLICKHOUSE: ClickHouse at http://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1\n',
  )
  const debug = cli(['--debug', 'report', 'no-such-run'], { CLICKHOUSE_URL: 'http://127.0.0.1:1' })
  assert.match(debug.stderr, STACK)
  assert.match(debug.stderr, /caused by: Error: connect ECONNREFUSED/)
  // An error that is not ours says how to see where it came from.
  assert.equal(
    describeFailure(new TypeError('x is not a function\n  more'), false),
    'benchstream: x is not a function\n(run again with --debug for the stack trace)\n',
  )
})
