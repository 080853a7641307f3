/**
 * Profiles through the whole backend (server: Kafka -> processor ->
 * ClickHouse -> API):
 *  - streamed as PROFILE records through Kafka (a real async-profiler
 *    capture split into many records, and `benchstream profile attach
 *    --kafka`): stored by the processor sample for sample; malformed records
 *    dead-lettered with their reason, nothing of them stored;
 *  - attached through the running server's API (the CLI finds it by the
 *    data directory); a malformed file stores nothing;
 *  - two runs where one frame's share doubles (10% -> 20%): the API's
 *    differential flame graph and frame list name it with +10 pp;
 *  - every query of the profiles dashboard run on this data as Grafana and
 *    the ClickHouse plugin would send it (test/helpers/grafana-macros.ts): the flame
 *    graph frames are nested sets (one root, pre-order, value = self +
 *    children) equal to the API's rows, the differential frame carries both
 *    sides, and the change tables equal the API's frame list.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { MAGIC_0, MAGIC_1, RECORD_KIND, SCHEMA_VERSION } from '../../schemas/events.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { profileMain } from '../../services/cli/profile.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { compareBytes, normalizeHiddenClasses, parseFolded, type Folded } from '../../services/core/profiles/folded.js'
import { frameShareChanges } from '../../services/core/profiles/flame-graph.js'
import { encodeProfileRecords, profileId, type Profile } from '../../services/core/profiles/profile.js'
import { startServer } from '../../services/server/main.js'
import { generateDashboards, generatedDir } from '../../dashboards/index.js'
import { expandQuery } from '../helpers/grafana-macros.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { joinRegExp } from '../helpers/regexp.js'

const FIX = path.join(repoRoot(), 'test', 'fixtures', 'profiles', 'async-profiler-4.6')
const fixture = (name: string): Folded => parseFolded(readFileSync(path.join(FIX, name), 'utf8'), name).stacks

interface Row {
  level: number
  label: string
  value: number
  self: number
  x: number
}
interface DiffRow extends Row {
  baselineValue: number
  baselineSelf: number
  selfDelta: number
  totalDelta: number
}
interface Change {
  frame: string
  baseline: number
  candidate: number
  change: number
}
interface JsonPanel {
  type: string
  title: string
  targets?: Array<{ refId: string; rawSql: string }>
  panels?: JsonPanel[]
}
interface JsonDashboard {
  uid: string
  panels: JsonPanel[]
  templating: { list: Array<{ name: string; type: string; query: string }> }
}

/**
 * Grafana's flame graph frame invariants: one root first, pre-order levels, value = self + children, siblings in byte
 * order.
 */
function checkFrame(
  rows: ReadonlyArray<{ level: number; label: string; value: number; self: number }>,
  what: string,
): void {
  assert.equal(rows[0]!.level, 0, `${what}: the root first`)
  assert.equal(rows.filter((r) => r.level === 0).length, 1, `${what}: one root`)
  for (let i = 1; i < rows.length; i++)
    assert.ok(
      rows[i]!.level >= 1 && rows[i]!.level <= rows[i - 1]!.level + 1,
      `${what}: row ${i} level ${rows[i]!.level} after ${rows[i - 1]!.level}`,
    )
  for (let i = 0; i < rows.length; i++) {
    let children = 0
    let prev: string | undefined
    for (let j = i + 1; j < rows.length && rows[j]!.level > rows[i]!.level; j++) {
      if (rows[j]!.level !== rows[i]!.level + 1) continue
      children += rows[j]!.value
      if (prev !== undefined)
        assert.ok(compareBytes(prev, rows[j]!.label) < 0, `${what}: siblings ${prev} < ${rows[j]!.label}`)
      prev = rows[j]!.label
    }
    assert.equal(
      rows[i]!.value,
      rows[i]!.self + children,
      `${what}: row ${i} (${rows[i]!.label}) value = self + children`,
    )
  }
}

test(
  'profiles streamed through Kafka and attached through the API; the doubled frame in diffs; every ' +
    'profiles dashboard query on this data',
  async (t) => {
    const te = testEnv({ ALERTS_ENABLED: 'false' })
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const api = svc.apiUrl!
    const get = async <T>(route: string): Promise<T> => {
      const res = await fetch(api + route)
      assert.equal(res.status, 200, `${route}: ${res.status} ${await res.clone().text()}`)
      return (await res.json()) as T
    }
    const stamp = Date.now()
    const nowUs = stamp * 1000
    const out: string[] = []
    const io = { env: te.env, out: (s: string) => out.push(s), err: (s: string) => out.push(s) }

    // -- Kafka: a real capture split into many PROFILE records, and malformed ones ---------------
    const infra = readInfraConfig(te.env)
    const kafka = createKafka(infra.kafka, 'e2e-profiles')
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    t.after(() => producer.disconnect())
    const streamed: Profile = {
      runId: `prof-stream-${stamp}`,
      labels: { host: 'rs1', process: 'broker' },
      fromUs: nowUs - 20e6,
      toUs: nowUs - 15e6,
      event: 'cpu',
      intervalNs: 1e6,
      source: 'async-profiler 4.6',
      stacks: fixture('kafka-broker-cpu-1ms-threads-ann.min2.collapsed'),
    }
    const records = encodeProfileRecords(streamed, profileId(streamed), 8 * 1024)
    assert.ok(records.length >= 5, `${records.length} records`)
    const head = Buffer.from([MAGIC_0, MAGIC_1, SCHEMA_VERSION, RECORD_KIND.PROFILE])
    const bad = (body: object): Buffer => Buffer.concat([head, Buffer.from(JSON.stringify(body))])
    const badRun = `prof-bad-${stamp}`
    const valid = {
      profileId: 'p-bad',
      runId: badRun,
      fromUs: nowUs - 1e6,
      toUs: nowUs,
      event: 'cpu',
      frames: ['main', 'work'],
      stacks: [[3, 0, 1]],
    }
    const junk = [
      bad({ ...valid, stacks: [[3, 0, 5]] }),
      bad({ ...valid, stacks: [[0, 0]] }),
      Buffer.concat([head, Buffer.from('{"profileId": "p-bad", ')]),
      bad({ ...valid, frames: ['x'.repeat(4000)], pad: 'y'.repeat(800 * 1024) }),
    ]
    await producer.send({
      topic: infra.topics.events,
      acks: -1,
      messages: records.map((value, i) => ({ key: `k${i % 3}`, value })),
    })
    // One at a time: the oversized one alone is near the broker's message.max.bytes.
    for (const value of junk)
      await producer.send({ topic: infra.topics.events, acks: -1, messages: [{ key: 'junk', value }] })
    // And the CLI's own Kafka route (hidden-class addresses normalized on the way).
    const cpu10 = path.join(FIX, 'kafka-broker-cpu-10ms.collapsed')
    const viaCli = `prof-cli-kafka-${stamp}`
    assert.equal(
      await profileMain(
        ['attach', '--kafka', '--run-id', viaCli, '--from', String(stamp - 30_000), '--seconds', '10', cpu10],
        io,
      ),
      0,
    )
    assert.match(out.join(''), /^sent profile p-[0-9a-f]{24} of run prof-cli-kafka-\d+ from .*: 170 samples/)

    const ch = svc.ch
    await waitFor('streamed profiles and dead letters in ClickHouse', async () => {
      const [r] = await queryRows<{ s: string; c: string; d: string }>(
        ch,
        `SELECT
      (SELECT sum(samples) FROM benchstream.profile_slices WHERE run_id = {a:String}) AS s,
      (SELECT sum(samples) FROM benchstream.profile_slices WHERE run_id = {b:String}) AS c,
      (SELECT count() FROM benchstream.dead_letters) AS d`,
        { a: streamed.runId, b: viaCli },
      )
      return Number(r!.s) === 715 && Number(r!.c) === 170 && Number(r!.d) === 4 ? true : undefined
    })
    const reasons = await queryRows<{ reason: string; n: string }>(
      ch,
      `SELECT reason, count() AS n FROM benchstream.dead_letters GROUP BY reason ORDER BY reason`,
    )
    assert.deepEqual(Object.fromEntries(reasons.map((r) => [r.reason, Number(r.n)])), {
      invalid_json: 1,
      invalid_record: 2,
      record_too_large: 1,
    })
    const [none] = await queryRows<{ n: string }>(
      ch,
      'SELECT count() AS n FROM benchstream.profile_samples WHERE run_id = {r:String}',
      { r: badRun },
    )
    assert.equal(Number(none!.n), 0, 'nothing of a malformed record is stored')
    const streamedGraph = await get<{ total: number; rows: Row[] }>(`/api/v1/profiles/flamegraph?run=${streamed.runId}`)
    assert.equal(streamedGraph.total, 715)
    const [slices] = await queryRows<{ n: string; stacks: string }>(
      ch,
      'SELECT count() AS n, sum(stacks) AS stacks FROM benchstream.profile_slices WHERE run_id = {r:String}',
      { r: streamed.runId },
    )
    assert.equal(Number(slices!.n), records.length, 'one slice row per record')
    const stackRows = await queryRows<{ frames: string[]; n: string }>(
      ch,
      `SELECT any(st.frames) AS frames, sum(sa.count) AS n FROM benchstream.profile_samples AS sa ` +
        `INNER JOIN benchstream.profile_stacks AS st ON st.stack_id = sa.stack_id WHERE sa.run_id = ` +
        `{r:String} GROUP BY sa.stack_id`,
      { r: streamed.runId },
    )
    assert.deepEqual(
      new Map(stackRows.map((r) => [r.frames.join(';'), Number(r.n)])),
      streamed.stacks,
      'sample for sample',
    )

    // -- Attach through the running server's API ------------------------------------------------
    const itimerRun = `prof-api-${stamp}`
    out.length = 0
    assert.equal(
      await profileMain(
        [
          'attach',
          '--run-id',
          itimerRun,
          '--label',
          'host=rs1',
          '--from',
          String(stamp - 60_000),
          '--seconds',
          '10',
          '--interval',
          '10ms',
          '--event',
          'itimer',
          path.join(FIX, 'kafka-broker-itimer-10ms.collapsed'),
        ],
        io,
      ),
      0,
    )
    assert.match(
      out.join(''),
      /^stored profile p-\w+ of run prof-api-\d+ from .*\(collapsed\): 247 samples, \d+ stacks \(\d+ new\)/,
    )
    const brokenFile = path.join(te.dataDir, 'broken.collapsed')
    writeFileSync(brokenFile, 'java/lang/Thread.run;kafka/server/KafkaRequestHandler.run 12\nnot a stack line\n')
    await assert.rejects(
      profileMain(['attach', '--run-id', `prof-broken-${stamp}`, cpu10, brokenFile], io),
      (err: unknown) =>
        isBenchstreamError(err, 'BS_ERR_DECODE') &&
        /broken\.collapsed:2: the count "line" is not a whole number of samples/.test(err.message),
    )
    assert.deepEqual((await get<{ profiles: unknown[] }>(`/api/v1/profiles?run=prof-broken-${stamp}`)).profiles, [])

    // -- One frame's share doubles ------------------------------------------------------------
    const others = Array.from({ length: 9 }, (_, i) => `java/lang/Thread.run;app/Server.handle;app/Other${i}.work`)
    const write = (name: string, hot: number, other: number): string => {
      const f = path.join(te.dataDir, name)
      writeFileSync(
        f,
        [`java/lang/Thread.run;app/Server.handle;app/Codec.encode ${hot}`, ...others.map((o) => `${o} ${other}`)].join(
          '\n',
        ) + '\n',
      )
      return f
    }
    const base = `prof-base-${stamp}`
    const cand = `prof-cand-${stamp}`
    assert.equal(
      await profileMain(
        [
          'attach',
          '--run-id',
          base,
          '--from',
          String(stamp - 120_000),
          '--seconds',
          '10',
          write('base.collapsed', 10, 10),
        ],
        io,
      ),
      0,
    )
    assert.equal(
      await profileMain(
        [
          'attach',
          '--run-id',
          cand,
          '--from',
          String(stamp - 100_000),
          '--seconds',
          '10',
          write('cand.collapsed', 36, 16),
        ],
        io,
      ),
      0,
    )
    const frames = await get<{ baselineSamples: number; candidateSamples: number; self: Change[]; total: Change[] }>(
      `/api/v1/profiles/diff?baseline=${base}&candidate=${cand}&limit=3`,
    )
    assert.deepEqual([frames.baselineSamples, frames.candidateSamples], [100, 180])
    for (const kind of ['self', 'total'] as const) {
      const top = frames[kind][0]!
      assert.equal(top.frame, 'app/Codec.encode', kind)
      assert.ok(
        Math.abs(top.baseline - 10) < 1e-9 && Math.abs(top.candidate - 20) < 1e-9 && Math.abs(top.change - 10) < 1e-9,
        `${kind}: ${JSON.stringify(top)}`,
      )
    }
    const dg = await get<{ total: number; baselineTotal: number; maxSelfDelta: number; rows: DiffRow[] }>(
      `/api/v1/profiles/diff-flamegraph?baseline=${base}&candidate=${cand}`,
    )
    const hot = dg.rows.find((r) => r.label === 'app/Codec.encode')!
    assert.deepEqual([hot.value, hot.baselineValue, hot.level], [36, 10, 3])
    assert.ok(Math.abs(hot.selfDelta - 10) < 1e-9 && hot.selfDelta === dg.maxSelfDelta)
    const svg = await fetch(`${api}/api/v1/profiles/diff-flamegraph?baseline=${base}&candidate=${cand}&format=svg`)
    assert.match(svg.headers.get('content-type') ?? '', /^image\/svg\+xml/)
    assert.match(
      await svg.text(),
      joinRegExp([
        /<title>app\/Codec\.encode \(36 samples, 20\.00%\); /,
        /self \+10\.00 pp, total \+10\.00 pp \(baseline 10 samples\)<\/title>/,
        /<rect [^>]*fill="rgb\(255,0,0\)"/,
      ]),
    )

    // -- The profiles dashboard on this data ----------------------------------------------------
    const g = generateDashboards().find((d) => d.uid === 'benchstream-profiles')!
    const dash = JSON.parse(readFileSync(path.join(generatedDir(), g.file), 'utf8')) as JsonDashboard
    const range = { fromMs: stamp - 3_600_000, toMs: stamp + 60_000, intervalMs: 1000 }
    const run = async (
      sqlText: string,
      variables: Record<string, string>,
      within = range,
    ): Promise<{ meta: Array<{ name: string }>; data: Array<Record<string, unknown>> }> => {
      const rs = await ch.client.query({ query: expandQuery(sqlText, { ...within, variables }), format: 'JSON' })
      return (await rs.json()) as never
    }
    const panel = (title: string): string =>
      dash.panels.find((p) => p.title === title)?.targets?.[0]?.rawSql ?? assert.fail(`no panel ${title}`)
    const num = (v: unknown): number => Number(v)
    for (const v of dash.templating.list.filter((x) => x.type === 'query')) {
      const listed = (await run(v.query, {})).data.map((r) => String(r.run_id))
      for (const r of [streamed.runId, viaCli, itimerRun, base, cand])
        assert.ok(listed.includes(r), `$${v.name} lists ${r}`)
    }
    const covered = new Set<string>()

    // Flame graph of one run = the API's rows, and a valid nested set.
    for (const r of [itimerRun, streamed.runId]) {
      const res = await run(panel('CPU profile of ${run}'), { run: r })
      assert.deepEqual(
        res.meta.map((m) => m.name),
        ['level', 'value', 'self', 'label'],
      )
      const rows = res.data.map((x) => ({
        level: num(x.level),
        value: num(x.value),
        self: num(x.self),
        label: String(x.label),
      }))
      checkFrame(rows, r)
      const apiRows = (await get<{ rows: Row[] }>(`/api/v1/profiles/flamegraph?run=${r}`)).rows
      assert.deepEqual(
        rows,
        apiRows.map((x) => ({ level: x.level, value: x.value, self: x.self, label: x.label })),
        `${r}: the panel's frame = the API's rows`,
      )
    }
    covered.add('CPU profile of ${run}')
    // The time range cuts: a range before the slices leaves nothing.
    const early = await run(
      panel('CPU profile of ${run}'),
      { run: itimerRun },
      { fromMs: stamp - 7_200_000, toMs: stamp - 3_600_000, intervalMs: 1000 },
    )
    assert.equal(num(early.data[0]!.value), 0)
    assert.equal(early.data.length, 1, 'only the empty root')

    // Differential: baseline in value/self, candidate in valueRight/selfRight, the same tree as the API's.
    for (const [a, b] of [
      [base, cand],
      [itimerRun, viaCli],
    ] as const) {
      const res = await run(panel('Differential profile: ${candidate} against ${baseline}'), {
        baseline: a,
        candidate: b,
      })
      assert.deepEqual(
        res.meta.map((m) => m.name),
        ['level', 'value', 'self', 'valueRight', 'selfRight', 'label'],
      )
      const rows = res.data.map((x) => ({
        level: num(x.level),
        value: num(x.value),
        self: num(x.self),
        valueRight: num(x.valueRight),
        selfRight: num(x.selfRight),
        label: String(x.label),
      }))
      checkFrame(rows, `${a} (left)`)
      checkFrame(
        rows.map((x) => ({ ...x, value: x.valueRight, self: x.selfRight })),
        `${b} (right)`,
      )
      const apiRows = (await get<{ rows: DiffRow[] }>(`/api/v1/profiles/diff-flamegraph?baseline=${a}&candidate=${b}`))
        .rows
      assert.deepEqual(
        rows,
        apiRows.map((x) => ({
          level: x.level,
          value: x.baselineValue,
          self: x.baselineSelf,
          valueRight: x.value,
          selfRight: x.self,
          label: x.label,
        })),
      )
      if (a === base)
        assert.deepEqual(
          rows.find((x) => x.label === 'app/Codec.encode'),
          { level: 3, value: 10, self: 10, valueRight: 36, selfRight: 36, label: 'app/Codec.encode' },
        )
    }
    covered.add('Differential profile: ${candidate} against ${baseline}')

    // Change tables = the API's frame list (frameShareChanges), frame by frame.
    for (const [a, b] of [
      [base, cand],
      [itimerRun, viaCli],
    ] as const) {
      const all = await get<{ self: Change[]; total: Change[] }>(
        `/api/v1/profiles/diff?baseline=${a}&candidate=${b}&limit=1000`,
      )
      for (const [title, kind] of [
        ['Frames whose self share changed most', 'self'],
        ['Frames whose total share changed most', 'total'],
      ] as const) {
        const res = await run(panel(title), { baseline: a, candidate: b })
        assert.deepEqual(
          res.meta.map((m) => m.name),
          ['frame', 'baseline_pct', 'candidate_pct', 'change_pp'],
        )
        assert.equal(res.data.length, Math.min(20, all[kind].length), `${title}: rows`)
        const expected = new Map(all[kind].map((c) => [c.frame, c]))
        for (const row of res.data) {
          const e =
            expected.get(String(row.frame)) ?? assert.fail(`${title}: ${String(row.frame)} is not in the API's list`)
          for (const [col, v] of [
            ['baseline_pct', e.baseline],
            ['candidate_pct', e.candidate],
            ['change_pp', e.change],
          ] as const)
            assert.ok(Math.abs(num(row[col]) - v) < 1e-9, `${title} ${e.frame} ${col}: ${num(row[col])} vs ${v}`)
        }
        // The largest changes, in order (|change| rounded, ties by name).
        const mags = res.data.map((row) => Math.round(Math.abs(num(row.change_pp)) * 1e6))
        assert.deepEqual(
          mags,
          [...mags].sort((x, y) => y - x),
        )
        assert.equal(
          Math.round(Math.abs(num(res.data[0]!.change_pp)) * 1e6),
          Math.round(Math.abs(all[kind][0]!.change) * 1e6),
        )
        if (a === base) assert.equal(res.data[0]!.frame, 'app/Codec.encode')
        covered.add(title)
      }
    }
    const titles = dash.panels.filter((p) => p.type !== 'row').map((p) => p.title)
    assert.deepEqual(
      titles.filter((x) => !covered.has(x)),
      [],
      'every panel ran',
    )
    // The CLI's normalization: what the Kafka route stored is the file with hidden-class addresses removed.
    const cliStored = (await get<{ rows: Row[] }>(`/api/v1/profiles/flamegraph?run=${viaCli}`)).rows
    const normalized = frameShareChanges(
      new Map(),
      normalizeHiddenClasses(fixture('kafka-broker-cpu-10ms.collapsed')).stacks,
      1,
    ).candidateSamples
    assert.equal(cliStored[0]!.value, normalized)
    assert.ok(!cliStored.some((r) => /\.0x[0-9a-f]{6,}/.test(r.label)))
  },
)
