/**
 * The command line as a user meets it: help everywhere, one-line errors with
 * what is allowed, "did you mean", the same range whatever was wrong, and no
 * stack trace unless --debug. No services are started. The help and argument
 * matrices call the CLI's main() in this process (a hundred process starts
 * would cost a minute); the real entry file (bin/benchstream.js) is run for
 * the top-level help, a whole run and a failure, where the process itself is
 * what is checked.
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
  'agent',
  'experiment',
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

/**
 * main() for each command line, all in one process (test/helpers/cli-batch.ts), with each call's stdout, stderr
 * and exit code: what bin/benchstream.js runs, minus a process start each.
 */
function inProcess(
  calls: Array<{ args: string[]; env?: Record<string, string> }>,
): Array<{ code: number; stdout: string; stderr: string }> {
  const r = spawnSync(process.execPath, [BATCH, JSON.stringify(calls)], { encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as Array<{ code: number; stdout: string; stderr: string }>
}
const BATCH = new URL('../helpers/cli-batch.js', import.meta.url).pathname

const STACK = /\n\s+at .+\(.*:\d+:\d+\)|\n\s+at file:/

test('every subcommand answers --help, -h and `help <command>` with its usage, on stdout, exit 0', () => {
  const forms = (c: string): string[][] => [
    [c, '--help'],
    [c, '-h'],
    ['help', c],
  ]
  const r = inProcess([
    ...COMMANDS.flatMap((c) => forms(c).map((args) => ({ args }))),
    { args: ['sql', '--help'] },
    { args: ['help', 'thresholds'] },
  ])
  COMMANDS.forEach((c, i) => {
    const [long, short, help] = r.slice(3 * i, 3 * i + 3) as [(typeof r)[0], (typeof r)[0], (typeof r)[0]]
    assert.equal(long.code, 0, `${c} --help: ${long.stderr}`)
    assert.match(long.stdout, /^usage: benchstream /, `${c} --help`)
    assert.equal(long.stderr, '', `${c} --help wrote to stderr`)
    assert.equal(short.stdout, long.stdout, `${c} -h`)
    assert.equal(help.stdout, long.stdout, `help ${c}`)
  })
  // sql --help is help, not a query named "--help"
  assert.match(r.at(-2)!.stdout, /read-only query/)
  assert.match(r.at(-1)!.stdout, /exits with code 99/)
  // The real entry file, once.
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
  const results = inProcess(cases.map(([args]) => ({ args })))
  for (const [i, [args, want]] of cases.entries()) {
    const r = results[i]!
    assert.notEqual(r.code, 0, args.join(' '))
    assert.match(r.stderr, want, args.join(' '))
    assert.doesNotMatch(r.stderr, STACK, `${args.join(' ')} printed a stack trace`)
  }
})

test('a flag states one range whatever was wrong with its value', () => {
  const threads = ['abc', '0', '-1', '1.5', '100001', '']
  const demo = ['abc', '0']
  const r = inProcess([
    ...threads.map((v) => ({ args: ['run', '-threads', v] })),
    ...demo.map((v) => ({ args: ['demo', '--threads', v] })),
    { args: ['run', '--seconds', '0'] },
  ])
  for (const x of r.slice(0, threads.length))
    assert.match(
      x.stderr.split('\n')[0]!,
      /^benchstream: BS_ERR_USAGE: -threads ".*" is not allowed: expected an integer from 1 to 100000$/,
    )
  for (const x of r.slice(threads.length, threads.length + demo.length))
    assert.match(x.stderr, /--threads ".*" is not allowed: expected an integer from 1 to 100000/)
  assert.match(r.at(-1)!.stderr, /--seconds "0" is not allowed: expected an integer from 1 to/)
})

test('thresholds: a latency needs a unit, OVERALL has no latency, the grammar is stated', () => {
  const [unit, overall, grammar] = inProcess([
    { args: ['run', '--threshold', 'READ.p99<2'] },
    { args: ['run', '--threshold', 'OVERALL.p99<2ms'] },
    { args: ['report', 'r', '--threshold', 'READ p99 < 2ms'] },
  ])
  assert.match(unit!.stderr, /latency needs a unit: us, ms or s/)
  assert.match(overall!.stderr, /OVERALL has no latency/)
  assert.match(grammar!.stderr, /expected <measurement>\.<metric><operator><value>\[unit\]/)
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
  // The figure is printed in the unit that reads best: 412 µs, 4.14 ms, 1.2 s.
  assert.match(r.stderr, /✗ READ\.p99<1us +[\d.]+ (µs|ms|s)\n/)
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
