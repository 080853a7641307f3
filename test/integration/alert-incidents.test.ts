/**
 * Alerts and silences against the real engine (embedded chDB): transitions
 * written by the alert store fold into incidents (view alert_incidents) with
 * the firing row's words and the resolved row's end; the read model filters
 * them by run, state, rule and time and pages them by cursor; the silence a
 * transition carries survives a restart of the engine (loadRuns); a silence's
 * expiry is a new version that hides the old one.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ClickHouseAlertStore, ClickHouseSilenceStore } from '../../services/adapters/clickhouse/alerts.js'
import { ClickHouseReadModel } from '../../services/adapters/clickhouse/read-model.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import type { AlertTransition } from '../../services/core/alerting/alert-window.js'
import { expireSilence, newSilence } from '../../services/core/alerting/silences.js'
import { migratedClickHouse } from '../helpers/clickhouse.js'
import { testEnv } from '../helpers/env.js'

const T0 = Date.UTC(2026, 0, 10, 12, 0, 0)

function firing(rule: string, runId: string, op: string, startsAtMs: number, fingerprint: string): AlertTransition {
  return {
    state: 'firing',
    rule,
    ruleType: rule === 'Below' ? 'below_target' : 'drop_vs_baseline',
    severity: 'warning',
    runId,
    op,
    fingerprint,
    startsAtMs,
    endsAtMs: undefined,
    atWindowMs: startsAtMs + 2000,
    value: 40,
    threshold: 700,
    summary: `${op} dropped to 40 ops/s, 96% below its baseline of 1,000 ops/s`,
    description: 'for 3 windows',
  }
}

test(
  'transitions fold into incidents, filtered and paged; ' + 'silences survive a restart and expire by a new version',
  async (t) => {
    const te = testEnv({ KAFKA_BROKERS: '127.0.0.1:1' })
    t.after(te.cleanup)
    const ch = await migratedClickHouse(t, readInfraConfig(te.env).clickhouse)
    const store = new ClickHouseAlertStore(ch)
    const rm = new ClickHouseReadModel(ch)

    // r1: a resolved drop of READ (silenced) and a firing Below; r2: a resolved drop of UPDATE.
    const a = { ...firing('Drop', 'r1', 'READ', T0 + 5000, 'aaaaaaaaaaaaaaaa'), silencedBy: 'sil-1' }
    await store.record(a, T0 + 7000)
    await store.record(
      { ...a, state: 'resolved', endsAtMs: T0 + 9000, atWindowMs: T0 + 10_000, value: 990, summary: 'READ recovered' },
      T0 + 11_000,
    )
    await store.record(firing('Below', 'r1', 'ALL', T0 + 6000, 'bbbbbbbbbbbbbbbb'), T0 + 8000)
    const c = firing('Drop', 'r2', 'UPDATE', T0 + 1000, 'cccccccccccccccc')
    await store.record(c, T0 + 3000)
    await store.record({ ...c, state: 'resolved', endsAtMs: T0 + 2000, summary: 'UPDATE recovered' }, T0 + 4000)
    // The same change written twice (a retry) is stored once.
    await store.record(c, T0 + 3000)

    const all = await rm.alerts({}, { limit: 10 })
    assert.deepEqual(
      all.alerts.map((x) => [x.runId, x.rule, x.op, x.state, x.startsAt, x.endsAt]),
      [
        ['r1', 'Below', 'ALL', 'firing', new Date(T0 + 6000).toISOString(), null],
        ['r1', 'Drop', 'READ', 'resolved', new Date(T0 + 5000).toISOString(), new Date(T0 + 9000).toISOString()],
        ['r2', 'Drop', 'UPDATE', 'resolved', new Date(T0 + 1000).toISOString(), new Date(T0 + 2000).toISOString()],
      ],
      'newest first',
    )
    assert.equal(all.nextCursor, null)
    const drop = all.alerts[1]!
    assert.deepEqual(
      [
        drop.summary,
        drop.resolvedSummary,
        drop.value,
        drop.threshold,
        drop.silencedBy,
        drop.ruleType,
        drop.fingerprint,
      ],
      [a.summary, 'READ recovered', 40, 700, 'sil-1', 'drop_vs_baseline', 'aaaaaaaaaaaaaaaa'],
      'the firing row says why, the resolved row how it ended',
    )
    assert.equal(all.alerts[0]!.silencedBy, null)

    const ids = async (filter: Parameters<typeof rm.alerts>[0]): Promise<string[]> =>
      (await rm.alerts(filter, { limit: 10 })).alerts.map((x) => x.fingerprint.slice(0, 1))
    assert.deepEqual(await ids({ runId: 'r1' }), ['b', 'a'])
    assert.deepEqual(await ids({ state: 'firing' }), ['b'])
    assert.deepEqual(await ids({ state: 'resolved' }), ['a', 'c'])
    assert.deepEqual(await ids({ rule: 'Drop', runId: 'r1' }), ['a'])
    // Firing at some time at or after `since`: still open, or ended at or after it.
    assert.deepEqual(await ids({ sinceMs: T0 + 9000 }), ['b', 'a'])
    assert.deepEqual(await ids({ sinceMs: T0 + 9001 }), ['b'])

    // Pages of one, by cursor, cover everything once.
    const seen: string[] = []
    let cursor: string | undefined
    for (let i = 0; i < 5; i++) {
      const p = await rm.alerts({}, { limit: 1, ...(cursor === undefined ? {} : { cursor }) })
      seen.push(...p.alerts.map((x) => x.fingerprint.slice(0, 1)))
      if (p.nextCursor === null) break
      cursor = p.nextCursor
    }
    assert.deepEqual(seen, ['b', 'a', 'c'])

    const loaded = await store.loadRuns(['r1'])
    assert.deepEqual(
      loaded
        .map((x) => [x.fingerprint.slice(0, 1), x.state, x.silencedBy])
        .sort((p, q) => String(p[0]).localeCompare(String(q[0]))),
      [
        ['a', 'resolved', 'sil-1'],
        ['b', 'firing', undefined],
      ],
      'a restarted engine knows which incidents were silenced',
    )

    // Silences: stored, the latest version wins, an expired one is no longer current.
    const silences = new ClickHouseSilenceStore(ch)
    const s = newSilence(
      {
        matchers: [
          { name: 'alertname', value: 'Below' },
          { name: 'run_id', value: 'r1' },
          { name: 'op', value: 'SCAN', isEqual: false },
        ],
        createdBy: 'ann',
        comment: 'target too high',
      },
      '3b241101-e2bb-4255-8caf-4136c566a962',
      T0,
    )
    await silences.save(s)
    const timed = newSilence(
      { matchers: [{ name: 'severity', value: 'warning' }], endsAt: new Date(T0 + 60_000).toISOString() },
      '7c9e6679-7425-40de-944b-e07fc1f90ae7',
      T0 + 1,
    )
    await silences.save(timed)
    assert.deepEqual(await silences.get(s.id), s)
    assert.deepEqual(
      (await silences.current(T0 + 1000)).map((x) => x.id),
      [timed.id, s.id],
    )
    assert.deepEqual(
      (await silences.current(T0 + 60_000)).map((x) => x.id),
      [s.id],
      'the timed one ended',
    )
    await silences.save(expireSilence(s, T0 + 2000))
    assert.deepEqual(
      (await silences.current(T0 + 3000)).map((x) => x.id),
      [timed.id],
    )
    const listed = await silences.list(10)
    assert.deepEqual(
      listed.map((x) => [x.id, x.endsAtMs]),
      [
        [s.id, T0 + 2000],
        [timed.id, T0 + 60_000],
      ],
      'one row per silence, its latest version, newest change first',
    )
  },
)
