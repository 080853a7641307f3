/**
 * `benchstream ycsb`'s command line (YCSB's own shapes after `--`, the
 * bridge put in front of the binding) and the comparison of YCSB's report
 * with Benchstream's, on a real YCSB 0.17.0 report.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import {
  BRIDGE_CLASS,
  bridgeArguments,
  chooseBinding,
  parseBindingsProperties,
  parseYcsbCommand,
} from '../../services/cli/ycsb-args.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { parseDriverArgs } from '../../services/driver/config.js'
import { buildReport } from '../../services/core/reports/ycsb-report.js'
import { parseYcsbFile } from '../../services/core/ycsb/import.js'
import { bridgeStatus, compareReports, formatComparison } from '../../services/core/ycsb/report-comparison.js'
import type { SummaryReport } from '../../services/core/ycsb/report-types.js'
import { joinRegExp } from '../helpers/regexp.js'

const usageError =
  (re: RegExp) =>
  (err: unknown): boolean =>
    isBenchstreamError(err, 'BS_ERR_USAGE') && re.test(err.message)

test(
  "YCSB's argument shapes: bin/ycsb's `run redis`, -t/-load, -db and -p db=, everything else passed " +
    'through in order',
  () => {
    const a = parseYcsbCommand([
      '--run-id',
      'r1',
      '--client-id',
      'c1',
      '--label',
      'system=redis',
      '--',
      'run',
      'redis',
      '-P',
      'workloads/workloada',
      '-p',
      'redis.port=7000',
      '-threads',
      '8',
      '-target',
      '100',
      '-s',
    ])
    assert.equal(a.phase, 'run')
    assert.equal(a.binding, 'redis')
    assert.deepEqual(a.passThrough, [
      '-P',
      'workloads/workloada',
      '-p',
      'redis.port=7000',
      '-threads',
      '8',
      '-target',
      '100',
      '-s',
    ])
    const b = parseYcsbCommand([
      '--',
      '-load',
      '-db',
      'site.ycsb.db.RedisClient',
      '-p',
      'db=hbase',
      '-p',
      'exportfile=out.json',
      '-P',
      'w',
    ])
    assert.equal(b.phase, 'load')
    assert.equal(b.binding, 'hbase', 'the last of -db and -p db= wins, as in YCSB')
    assert.equal(b.exportFile, 'out.json')
    assert.match(b.runId, /^ycsb-\d{8}T\d{6}-[a-z0-9]{1,4}$/)
    assert.equal(parseYcsbCommand(['--', '-P', 'w']).binding, 'basic', "YCSB's default DB")
    assert.throws(() => parseYcsbCommand(['--', 'load', '-t']), usageError(/-t contradicts the load phase/))
    assert.throws(
      () => parseYcsbCommand(['--', 'run', '-p', 'benchstream.runid=x']),
      usageError(/-p benchstream\.runid is set by benchstream ycsb: use --run-id instead/),
    )
    assert.throws(() => parseYcsbCommand(['run', '-db', 'redis']), usageError(/YCSB's arguments go after "--"/))
    assert.throws(() => parseYcsbCommand(['--label', 'a=b,c', '--', 'run']), usageError(/must not hold ","/))
    assert.throws(() => parseYcsbCommand(['--run-id', 'a b', '--', 'run']), usageError(/--run-id "a b" is not allowed/))
  },
)

test(
  'the bridge goes in front of the named binding; run id, client, labels, brokers and topic become ' +
    'bridge properties',
  () => {
    const cmd = parseYcsbCommand([
      '--run-id',
      'r1',
      '--client-id',
      'c1',
      '--label',
      'system=redis',
      '--label',
      'v=7',
      '--',
      'run',
      '-db',
      'redis',
      '-threads',
      '2',
    ])
    const args = bridgeArguments(cmd, chooseBinding(cmd.binding, undefined).className, 'h:9092', 'topic.x')
    assert.deepEqual(args, [
      '-t',
      '-threads',
      '2',
      '-db',
      BRIDGE_CLASS,
      '-p',
      'benchstream.db=io.benchstream.ycsb.redis.RedisClient',
      '-p',
      'benchstream.runid=r1',
      '-p',
      'benchstream.clientid=c1',
      '-p',
      'benchstream.brokers=h:9092',
      '-p',
      'benchstream.topic=topic.x',
      '-p',
      'benchstream.labels=system=redis,v=7',
    ])
  },
)

test(
  "binding names: ours, YCSB core, YCSB names of stores we have a binding for (said), an installation's " +
    'names, class names',
  () => {
    assert.deepEqual(chooseBinding('redis', undefined), {
      className: 'io.benchstream.ycsb.redis.RedisClient',
      classpath: 'runtime',
      note: undefined,
    })
    assert.deepEqual(chooseBinding('hbase', undefined), {
      className: 'io.benchstream.ycsb.hbase.HBaseClient',
      classpath: 'hbase',
      note: undefined,
    })
    assert.equal(chooseBinding('basic', undefined).className, 'site.ycsb.BasicDB')
    const mapped = chooseBinding('site.ycsb.db.RedisClient', undefined)
    assert.equal(mapped.className, 'io.benchstream.ycsb.redis.RedisClient')
    assert.match(mapped.note!, /not on Maven Central; using Benchstream's redis binding/)
    const home = {
      bindings: parseBindingsProperties(
        [
          '# YCSB',
          'redis:site.ycsb.db.RedisClient',
          'mongodb:site.ycsb.db.MongoDbClient',
          'mongodb-async:site.ycsb.db.AsyncMongoDbClient',
          '',
        ].join('\n'),
      ),
    }
    assert.deepEqual(chooseBinding('mongodb', home), {
      className: 'site.ycsb.db.MongoDbClient',
      classpath: 'user',
      note: undefined,
    })
    assert.deepEqual(
      chooseBinding('site.ycsb.db.RedisClient', home),
      { className: 'site.ycsb.db.RedisClient', classpath: 'user', note: undefined },
      'with an installation, its own Redis binding',
    )
    assert.equal(chooseBinding('com.example.MyDB', undefined).classpath, 'user')
    assert.throws(
      () => chooseBinding('mongo', home),
      usageError(
        joinRegExp([
          /neither a short name \(redis, hbase, basic, basicts, /,
          /or one of the installation's: mongodb, mongodb-async, redis\) nor a Java class name/,
        ]),
      ),
    )
  },
)

test(
  "YCSB's report against Benchstream's: counts per operation and status, p95/p99 side by side, " + 'a difference said',
  () => {
    const ycsb = parseYcsbFile(
      'run-workloada.stdout.txt',
      readFileSync('test/fixtures/ycsb-0.17.0/run-workloada.stdout.txt'),
    ) as SummaryReport
    const n = (name: string): number => ycsb.measurements.find((m) => m.name.name === name)!.operations!
    const agg = (op: string, count: number): Parameters<typeof buildReport>[0][number] => ({
      op,
      status: 'OK',
      count,
      sumUs: count * 300,
      minUs: 100,
      maxUs: 900,
      hist: [[300, count]],
    })
    const same = compareReports(ycsb, buildReport([agg('READ', n('READ')), agg('UPDATE', n('UPDATE'))], 1000))
    assert.ok(same.countsEqual)
    assert.deepEqual(
      same.counts.map((r) => r.key),
      ['READ/OK', 'UPDATE/OK'],
      'CLEANUP is not an operation',
    )
    assert.deepEqual(
      same.percentiles.map((r) => `${r.op} p${r.percentile}`),
      ['READ p95', 'READ p99', 'UPDATE p95', 'UPDATE p99'],
    )
    assert.equal(
      same.percentiles[0]!.ycsbUs,
      ycsb.measurements.find((m) => m.name.name === 'READ')!.percentiles.find((p) => p.percentile === 95)!.valueUs,
    )
    const off = compareReports(ycsb, buildReport([agg('READ', n('READ') - 1), agg('UPDATE', n('UPDATE'))], 1000))
    assert.equal(off.countsEqual, false)
    assert.match(formatComparison(off), new RegExp(`READ/OK\\s+${n('READ')}\\s+${n('READ') - 1}\\s+DIFFERENT by -1`))
    assert.match(formatComparison(same), /UPDATE\/OK\s+\d+\s+\d+\s+equal/)
    assert.equal(bridgeStatus('BATCHED_OK'), 'OK')
    assert.equal(bridgeStatus('NOT_FOUND'), 'NOT_FOUND')
    assert.equal(bridgeStatus('-1'), 'ERROR')
  },
)

test(
  'the bridge announces the workload by its -P files (compare pairs ' +
    'runs by it), unless -p benchstream.workload= names it',
  () => {
    const args = (ycsb: string[]): string[] =>
      bridgeArguments(parseYcsbCommand(['--run-id', 'r', '--client-id', 'c', '--', ...ycsb]), 'X', 'h:1', 't')
    assert.deepEqual(args(['run', '-P', 'workloads/workloade', '-threads', '2']).slice(0, 6), [
      '-t',
      '-P',
      'workloads/workloade',
      '-threads',
      '2',
      '-p',
    ])
    assert.ok(args(['run', '-P', 'workloads/workloade']).includes('benchstream.workload=workloade'))
    assert.ok(
      args(['run', '-P', '/a/base.properties', '-P', 'C:\\w\\workloada']).includes(
        'benchstream.workload=base.properties+workloada',
      ),
    )
    const own = args(['run', '-P', 'workloads/workloada', '-p', 'benchstream.workload=mine'])
    assert.equal(own.filter((a) => a.startsWith('benchstream.workload=')).join(), 'benchstream.workload=mine')
    assert.ok(
      !args(['run', '-p', 'recordcount=5']).some((a) => a.startsWith('benchstream.workload=')),
      'no -P: the bridge keeps its own default',
    )
  },
)

test(
  "an experiment's flags (--group, --repetition, --barrier stdin, --expected-clients, --clock-offset-ms) become " +
    "bridge properties, checked with the driver's messages",
  () => {
    const cmd = parseYcsbCommand([
      '--run-id',
      'r1',
      '--client-id',
      'c1',
      '--group',
      'exp-base-workloada',
      '--repetition',
      '2',
      '--barrier',
      'stdin',
      '--expected-clients',
      '3',
      '--clock-offset-ms',
      '-1.2504',
      '--',
      'run',
      '-db',
      'redis',
    ])
    assert.equal(cmd.barrier, 'stdin')
    assert.equal(cmd.clockOffsetMs, -1.2504)
    const args = bridgeArguments(cmd, 'io.benchstream.ycsb.redis.RedisClient', 'h:9092', 't')
    assert.deepEqual(args.slice(-10), [
      '-p',
      'benchstream.group=exp-base-workloada',
      '-p',
      'benchstream.repetition=2',
      '-p',
      'benchstream.barrier=stdin',
      '-p',
      'benchstream.expected.clients=3',
      '-p',
      'benchstream.clock.offset.ms=-1.25',
    ])
    // The bridge reads digits: to the µs, never JavaScript's exponent form.
    const offset = (ms: string): string | undefined =>
      bridgeArguments(
        parseYcsbCommand(['--clock-offset-ms', ms, '--', 'run']),
        'site.ycsb.BasicDB',
        'h:9092',
        't',
      ).find((a) => a.startsWith('benchstream.clock.offset.ms='))
    assert.equal(offset('0.0000001'), 'benchstream.clock.offset.ms=0')
    assert.equal(offset('-0.0004'), 'benchstream.clock.offset.ms=0')
    assert.equal(offset('86400000'), 'benchstream.clock.offset.ms=86400000')
    assert.equal(offset('0.001'), 'benchstream.clock.offset.ms=0.001')
    assert.equal(
      parseYcsbCommand(['--', 'run']).group,
      undefined,
      'none of them without the flags: a plain YCSB run is no experiment',
    )

    const bad: Array<[string, string]> = [
      ['--group', 'a b'],
      ['--repetition', '0'],
      ['--repetition', '1.5'],
      ['--barrier', 'file'],
      ['--expected-clients', '1025'],
      ['--clock-offset-ms', '1e9'],
      ['--clock-offset-ms', 'soon'],
    ]
    const firstLine = (f: () => unknown): string => {
      try {
        f()
      } catch (err) {
        assert.ok(isBenchstreamError(err, 'BS_ERR_USAGE'), String(err))
        return err.message.split('\n')[0]!
      }
      throw new Error('no error')
    }
    for (const [flag, value] of bad) {
      const ycsb = firstLine(() => parseYcsbCommand([flag, value, '--', 'run']))
      const driver = firstLine(() => parseDriverArgs('run', [flag, value], {}, { bindings: ['memory'] }))
      assert.equal(ycsb, driver, `${flag} ${value}: the same message from both clients`)
      assert.match(ycsb, new RegExp(`^${flag} "${value.replace('.', '\\.')}" is not allowed: `))
    }
    for (const [key, flag] of [
      ['benchstream.group', '--group'],
      ['benchstream.barrier', '--barrier stdin'],
      ['benchstream.clock.offset.ms', '--clock-offset-ms'],
    ] as const)
      assert.throws(
        () => parseYcsbCommand(['--', 'run', '-p', `${key}=x`]),
        usageError(new RegExp(`-p ${key.replace(/\./g, '\\.')} is set by benchstream ycsb: use ${flag} instead`)),
      )
  },
)
