/**
 * `benchstream pe`'s command line (services/cli/pe.ts), as the agent writes
 * it for a client of a `driver: pe` run (test/unit/agent.test.ts checks the
 * agent's side): a negative clock offset is a value, not a flag; PE's
 * arguments must run its clients as threads (--nomapred) and end with one
 * of its tests and a client count; each refusal says what is allowed.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parsePeCommand } from '../../services/cli/pe.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const OWN = ['--command', '/opt/hbase/bin/hbase', '--run-id', 'r-1', '--client-id', 'a1']
const PE = ['-Dhbase.zookeeper.property.clientPort=12181', '--nomapred', '--rows=500', 'randomRead', '4']

test("the agent's command line: every flag read, a negative clock offset taken as a value", () => {
  const cmd = parsePeCommand([
    ...OWN,
    '--label',
    'setup=cache',
    '--group',
    'g-1',
    '--repetition',
    '2',
    '--barrier',
    'stdin',
    '--expected-clients',
    '1',
    '--clock-offset-ms',
    '-37.500',
    '--server-metrics',
    'hbase=http://127.0.0.1:16030',
    '--',
    ...PE,
  ])
  assert.deepEqual(
    [cmd.command, cmd.runId, cmd.clientId, cmd.labels, cmd.group, cmd.repetition, cmd.barrier, cmd.expectedClients],
    ['/opt/hbase/bin/hbase', 'r-1', 'a1', { setup: 'cache' }, 'g-1', 2, 'stdin', 1],
  )
  assert.equal(cmd.clockOffsetMs, -37.5)
  assert.deepEqual(
    cmd.serverMetrics.map((s) => s.source),
    ['hbase'],
  )
  assert.deepEqual(cmd.peArgs, PE)
  assert.deepEqual([cmd.test, cmd.nclients], ['randomRead', 4])
})

test('refused, each saying what is allowed', () => {
  for (const [argv, why] of [
    [[...OWN], /PE's arguments go after --/],
    [[...OWN.slice(2), '--', ...PE], /--command is required/],
    [[...OWN, '--', '--rows=5', 'randomRead', '4'], /runs here with --nomapred/],
    [[...OWN, '--', '--nomapred', 'randomReed', '4'], /"randomReed" is not one of PE's tests; they are .*randomRead/],
    [[...OWN, '--', '--nomapred', 'randomRead', '0'], /<nclients> "0" is not allowed: expected a whole number from 1/],
    [[...OWN, '--clock-offset-ms', 'soon', '--', ...PE], /--clock-offset-ms "soon" is not a number of ms/],
    [[...OWN, '--barrier', 'tcp', '--', ...PE], /--barrier "tcp" is not allowed: stdin/],
    [[...OWN, '--run-id', 'a b', '--', ...PE], /--run-id "a b" is not allowed/],
  ] as const)
    assert.throws(
      () => parsePeCommand(argv),
      (err: unknown) => isBenchstreamError(err, 'BS_ERR_USAGE') && why.test(err.message),
      String(why),
    )
})
