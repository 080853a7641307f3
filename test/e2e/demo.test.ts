/**
 * `benchstream demo` as a newcomer runs it, without --target, against the test broker (KAFKA_BROKERS set, so the demo
 * starts none): a probe of the driver chooses the target, the demo says which and why, and the run uses it (the stored
 * report's Target is that number); the server's log lines, the alert election's stop among them, go into
 * <BENCHSTREAM_DATA_DIR>/demo.log, and the screen ends with the report, no JSON line on stdout or stderr.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { cli } from '../helpers/cli.js'
import { testEnv } from '../helpers/env.js'

test('demo: the target from a probe, said; server logs in demo.log; the screen ends with the report', async (t) => {
  const te = testEnv()
  t.after(te.cleanup)
  const r = await cli(te.env, ['demo', '--seconds', '3', '--records', '10000'])
  const screen = `--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`
  assert.equal(r.code, 0, screen)

  // The probe, the choice and its reason, then the run at that target.
  assert.match(r.stdout, /^\[demo\] no --target: probing what this machine keeps, the driver unthrottled for 2 s/m)
  const chosen = /^\[demo\] target ([\d,]+) ops\/s: (.*)$/m.exec(r.stdout)
  assert.ok(chosen !== null, screen)
  const target = Number(chosen[1]!.replace(/,/g, ''))
  const probed = /the ([\d,]+) ops\/s this machine's driver ran unthrottled in a ([\d.]+) s probe/.exec(chosen[2]!)
  assert.ok(probed !== null, chosen[0])
  const rate = Number(probed[1]!.replace(/,/g, ''))
  assert.ok(Number(probed[2]) >= 1.5, `the probe ran ${probed[2]} s`)
  // A tenth, rounded down to two digits (rate is printed rounded: within one step), or the floor or the cap, said.
  if (/is under the demo's floor/.test(chosen[2]!)) assert.equal(target, 200)
  else if (/is over the demo's cap/.test(chosen[2]!)) assert.equal(target, 20_000)
  else {
    const step = 10 ** (Math.floor(Math.log10(rate / 10)) - 1)
    assert.ok(target <= rate / 10 + 1 && target > rate / 10 - 2 * step, `${target} from ${rate}`)
  }
  assert.match(
    r.stdout,
    new RegExp(`^\\[demo\\] run demo-\\S+: workloada for 3s, 8 threads, target ${target} ops/s$`, 'm'),
  )
  // What the driver ran at, as ClickHouse's report gives it back.
  assert.match(r.stdout, new RegExp(`^\\[BENCHSTREAM\\], Target\\(ops/sec\\), ${target}$`, 'm'))

  // No log line on the screen: no JSON on either stream.
  for (const line of `${r.stdout}\n${r.stderr}`.split('\n'))
    assert.ok(!/^\s*\{.*\}\s*$/.test(line), `a JSON line on the demo's screen: ${line}`)
  // stdout ends with the report's last block: the run, where its data and the server's log are, what to run next.
  const tail = r.stdout.trimEnd().split('\n')
  const last = tail.map((l) => l.startsWith('===== ')).lastIndexOf(true)
  assert.match(tail[last]!, /^===== Run demo-\S+ =====$/)
  const logFile = path.join(te.dataDir, 'demo.log')
  assert.ok(
    tail.slice(last).includes(`  The server's log (processor, alerts, API): ${logFile}`),
    tail.slice(last).join('\n'),
  )
  assert.match(tail.at(-1)!, /^ {2}While a processor runs: /)

  // The server's lines are in the log instead, its stop included.
  const log = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { msg: string; name: string })
  assert.ok(log.every((l) => l.name === 'benchstream-server'))
  const msgs = log.map((l) => l.msg)
  assert.ok(msgs.includes('alert evaluation: this replica leads and evaluates alerts'), msgs.join('\n'))
  assert.ok(msgs.includes('alert evaluation: this replica is stopping and leaves the election'), msgs.join('\n'))
})
