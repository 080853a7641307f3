/**
 * `benchstream profile attach` into the real ClickHouse engine (embedded
 * chDB, a data directory of this test): real async-profiler and perf script
 * files stored and read back sample for sample, stacks stored once however
 * many profiles share them, the same file attached twice stored once,
 * selections by run, group, time range and labels, and a malformed file
 * among good ones: BS_ERR_DECODE naming file and line, nothing of any file
 * stored. And the processor's path: PROFILE records of a flush written by
 * the WindowStore, a replayed flush stored once.
 */
import assert from 'node:assert/strict'
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { openClickHouse, queryRows, type ClickHouse } from '../../services/adapters/clickhouse/client.js'
import { ClickHouseProfileStore } from '../../services/adapters/clickhouse/profile-store.js'
import { ClickHouseWindowStore } from '../../services/adapters/clickhouse/window-store.js'
import { profileMain } from '../../services/cli/profile.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { normalizeHiddenClasses, parseFolded } from '../../services/core/profiles/folded.js'
import { collapsePerfScript } from '../../services/core/profiles/perf-script.js'
import { encodeProfileRecords, profileId, type Profile } from '../../services/core/profiles/profile.js'
import { PartitionState } from '../../services/core/stats/partition-state.js'
import { migratedClickHouse } from '../helpers/clickhouse.js'
import { testEnv } from '../helpers/env.js'
import { joinRegExp } from '../helpers/regexp.js'

const FIX = path.join(repoRoot(), 'test', 'fixtures', 'profiles')
const CPU = path.join(FIX, 'async-profiler-4.6', 'kafka-broker-cpu-10ms.collapsed')
const ITIMER = path.join(FIX, 'async-profiler-4.6', 'kafka-broker-itimer-10ms.collapsed')
const WALL = path.join(FIX, 'async-profiler-4.6', 'kafka-broker-wall-50ms-threads.collapsed')
const PERF = path.join(FIX, 'perf-script', 'fpdemo.perf-script.txt')

const folded = (file: string) => normalizeHiddenClasses(parseFolded(readFileSync(file, 'utf8'), file).stacks).stacks

test(
  'attach: real files stored and read back exactly, stacks once, idempotent, cut by run, group, ' +
    'time and labels; a malformed file stores nothing',
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const out: string[] = []
    const io = { env: te.env, out: (s: string) => out.push(s), err: (s: string) => out.push(s) }
    const attach = (...args: string[]) => profileMain(['attach', ...args], io)
    const t0 = Date.parse('2026-12-02T10:00:00Z')

    assert.equal(
      await attach(
        '--run-id',
        'r1',
        '--label',
        'host=rs1',
        '--from',
        '2026-12-02T10:00:00Z',
        '--seconds',
        '10',
        '--interval',
        '10ms',
        CPU,
      ),
      0,
    )
    assert.match(
      out.join(''),
      joinRegExp([
        /^stored profile p-[0-9a-f]{24} of run r1 from .*kafka-broker-cpu-10ms\.collapsed \(collapsed\): /,
        /170 samples, \d+ stacks \(\d+ new\)\n/,
      ]),
    )
    assert.match(out.join(''), /note: \d+ stacks had JVM hidden-class addresses, removed/)
    // The same file to the same run again: recognised, not counted twice.
    out.length = 0
    assert.equal(
      await attach(
        '--run-id',
        'r1',
        '--label',
        'host=rs1',
        '--from',
        '2026-12-02T10:00:00Z',
        '--seconds',
        '10',
        '--interval',
        '10ms',
        CPU,
      ),
      0,
    )
    assert.match(out.join(''), /^already stored profile p-/)
    // The same stacks in another run (and group member): no new stack rows.
    out.length = 0
    assert.equal(
      await attach(
        '--run-id',
        'r2',
        '--label',
        'host=rs2',
        '--from',
        String(t0 + 3_600_000),
        '--to',
        String(t0 + 3_610_000),
        CPU,
      ),
      0,
    )
    assert.match(out.join(''), /\(0 new\)/)
    // perf script text, collapsed on the way in.
    out.length = 0
    assert.equal(await attach('--run-id', 'r-perf', PERF), 0)
    assert.match(out.join(''), /\(perf-script\): 1111111100 samples/)
    // Two slices of one run at different times, for the time cut.
    assert.equal(
      await attach('--run-id', 'r4', '--label', 'host=rs1', '--from', String(t0), '--seconds', '10', ITIMER),
      0,
    )
    assert.equal(
      await attach('--run-id', 'r4', '--label', 'host=rs2', '--from', String(t0 + 60_000), '--seconds', '5', WALL),
      0,
    )

    // A malformed file among good ones: the error names it and its line; nothing of either is stored.
    const bad = path.join(te.dataDir, 'broken.collapsed')
    const lines = readFileSync(ITIMER, 'utf8').split('\n')
    lines[6] = lines[6]!.replace(/ \d+$/, ' many')
    writeFileSync(bad, lines.join('\n'))
    const good = path.join(te.dataDir, 'good.collapsed')
    copyFileSync(CPU, good)
    await assert.rejects(attach('--run-id', 'r3', good, bad), (err: unknown) => {
      assert.ok(isBenchstreamError(err, 'BS_ERR_DECODE'), String(err))
      assert.match(
        err.message,
        /broken\.collapsed:7: the count "many" is not a whole number of samples; expected a folded stack line/,
      )
      return true
    })
    await assert.rejects(
      attach('--run-id', 'r3', '--perf-option', 'colour', PERF),
      /--perf-option "colour" is not allowed: one of pid, tid, kernel, jit, all, addrs/,
    )

    const ch: ClickHouse = openClickHouse(readInfraConfig(te.env).clickhouse)
    t.after(() => ch.close())
    const store = new ClickHouseProfileStore(ch)
    const one = async (sql: string, params: Record<string, unknown> = {}): Promise<number> =>
      Number(Object.values((await queryRows<Record<string, string>>(ch, sql, params))[0]!)[0])

    // Read back sample for sample.
    const cpu = folded(CPU)
    assert.deepEqual(await store.stacks({ runIds: ['r1'] }, 10_000), cpu)
    assert.deepEqual(
      await store.stacks({ runIds: ['r-perf'] }, 10_000),
      collapsePerfScript(readFileSync(PERF, 'utf8'), PERF).stacks,
    )
    // Stacks once: one row per distinct stack of all files, though r1 and r2 share theirs.
    const distinct = new Set([
      ...cpu.keys(),
      ...folded(ITIMER).keys(),
      ...folded(WALL).keys(),
      ...collapsePerfScript(readFileSync(PERF, 'utf8'), PERF).stacks.keys(),
    ])
    assert.equal(await one('SELECT count() FROM benchstream.profile_stacks'), distinct.size)
    assert.equal(await one('SELECT uniqExact(stack_id) FROM benchstream.profile_stacks'), distinct.size)
    assert.equal(
      await one("SELECT sum(count) FROM benchstream.profile_samples WHERE run_id = 'r1'"),
      170,
      'attached twice, counted once',
    )
    // Nothing of the malformed attach.
    assert.equal(await one("SELECT count() FROM benchstream.profile_slices WHERE run_id = 'r3'"), 0)
    assert.equal(await one("SELECT count() FROM benchstream.profile_samples WHERE run_id = 'r3'"), 0)

    const [info] = await store.list({ runIds: ['r1'] })
    assert.deepEqual(
      [
        info!.labels,
        info!.event,
        info!.intervalNs,
        info!.fromMs,
        info!.toMs,
        info!.samples,
        info!.slices,
        info!.source,
      ],
      [{ host: 'rs1' }, 'cpu', 1e7, t0, t0 + 10_000, 170, 1, 'folded stacks'],
    )
    const [perf] = await store.list({ runIds: ['r-perf'] })
    assert.equal(perf!.event, 'perf:cpu-clock')

    // Time range (slices by their start), labels, groups.
    const itimer = folded(ITIMER)
    const wall = folded(WALL)
    assert.deepEqual(await store.stacks({ runIds: ['r4'], fromMs: t0, toMs: t0 + 30_000 }, 10_000), itimer)
    assert.deepEqual(await store.stacks({ runIds: ['r4'], fromMs: t0 + 30_000 }, 10_000), wall)
    assert.deepEqual(await store.stacks({ runIds: ['r4'], labels: { host: 'rs2' } }, 10_000), wall)
    assert.equal((await store.stacks({ runIds: ['r4'], labels: { host: 'rs3' } }, 10_000)).size, 0)
    assert.equal((await store.stacks({}, 10_000)).size, 0, 'no run and no group selects nothing')
    await ch.client.insert({
      table: 'benchstream.run_clients',
      format: 'JSONEachRow',
      values: ['r1', 'r2'].map((run_id) => ({
        run_id,
        client_id: 'c',
        phase: 'start',
        at: '2026-12-02 10:00:00',
        group_id: 'release-1.2',
        src_partition: 0,
        src_offset: 0,
      })),
    })
    const group = await store.stacks({ group: 'release-1.2' }, 10_000)
    assert.equal(
      [...group.values()].reduce((a, b) => a + b, 0),
      340,
    )
    assert.deepEqual([...group.keys()].sort(), [...cpu.keys()].sort())
    await assert.rejects(store.stacks({ runIds: ['r1'] }, 10), (err: unknown) =>
      isBenchstreamError(err, 'BS_ERR_TOO_LARGE'),
    )
    assert.deepEqual((await store.runs(10)).map((r) => r.runId).sort(), ['r-perf', 'r1', 'r2', 'r4'])
  },
)

test(
  "the processor's write of PROFILE records is idempotent by its flush token: a replayed flush " + 'stores them once',
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const ch = await migratedClickHouse(t, readInfraConfig(te.env).clickhouse)
    const nowUs = Date.now() * 1000
    const p: Profile = {
      runId: 'r-stream',
      labels: { host: 'rs1' },
      fromUs: nowUs - 5e6,
      toUs: nowUs,
      event: 'wall',
      intervalNs: 5e7,
      source: 'async-profiler 4.6',
      stacks: folded(WALL),
    }
    const records = encodeProfileRecords(p, profileId(p), 16 * 1024)
    const state = () => {
      const st = new PartitionState('events', 2, 100, {
        windowUs: 1e6,
        allowedLatenessUs: 0,
        storeRawEvents: false,
        maxEventAgeUs: 86_400e6,
        maxEventFutureUs: 600e6,
      })
      records.forEach((r, i) => st.add(r, 100 + i, nowUs))
      return st.drain('group')
    }
    const store = new ClickHouseWindowStore(ch)
    assert.deepEqual((await store.write(state())).refused, [])
    assert.deepEqual((await store.write(state())).refused, [], 'the same offsets again (a replay after a crash)')
    const one = async (sql: string): Promise<number> =>
      Number(Object.values((await queryRows<Record<string, string>>(ch, sql))[0]!)[0])
    assert.equal(await one("SELECT sum(count) FROM benchstream.profile_samples WHERE run_id = 'r-stream'"), 9872)
    assert.equal(await one("SELECT count() FROM benchstream.profile_slices WHERE run_id = 'r-stream'"), records.length)
    assert.equal(await one('SELECT count() FROM benchstream.profile_stacks'), p.stacks.size, 'each stack once')
    assert.deepEqual(await new ClickHouseProfileStore(ch).stacks({ runIds: ['r-stream'] }, 10_000), p.stacks)
    const [src] = await queryRows<{ p: number; o: string }>(
      ch,
      'SELECT min(src_partition) AS p, toString(min(src_offset)) AS o FROM benchstream.profile_slices ' +
        "WHERE run_id = 'r-stream'",
    )
    assert.deepEqual([src!.p, src!.o], [2, '100'])
  },
)
