/**
 * "Benchstream — live run": one run as it happens. Throughput against the
 * target, latency percentiles from merged histograms, coordinated-omission
 * corrected p99, cache-hit ratios as the client and as the server see them,
 * errors and per-client throughput. Every panel follows the time range; the
 * stat row summarises the run within it. The run's alerts are annotations on
 * every time panel, a table of those firing now and a state timeline per rule.
 */
import {
  DashboardBuilder,
  DashboardCursorSync,
  MappingType,
  type Dashboard,
} from '@grafana/grafana-foundation-sdk/dashboard'
import { VisibilityMode } from '@grafana/grafana-foundation-sdk/common'
import { PanelBuilder as StateTimelinePanelBuilder } from '@grafana/grafana-foundation-sdk/statetimeline'
import {
  alertsAnnotation,
  datasourceRef,
  dashedLine,
  datasourceVariable,
  finishDashboard,
  LIVE_REFRESH,
  queryVariable,
  RATE_DIVISOR,
  runVariable,
  SERVER_CACHE_COUNTERS,
  sql,
  SQL_FORMAT,
  sqlTarget,
  statPanel,
  tablePanel,
  thresholds,
  timeseriesPanel,
  UNITS,
  withSections,
  type DashboardConfig,
} from './common.js'

export const LIVE_RUN_UID = 'benchstream-live'

// Grafana variable references, kept out of TypeScript template interpolation.
const RUN = '${run:singlequote}'
const OPS = '${op:singlequote}'

/** Seconds of closed windows that "current throughput" averages over. */
const CURRENT_LOOKBACK_S = 10

/** The state timeline's values: a rule with no open incident, one firing, one firing but silenced. */
export const ALERT_STATE_VALUES = { ok: 0, firing: 1, silenced: 2 } as const

export function liveRunDashboard(cfg: DashboardConfig): Dashboard {
  const db = cfg.database
  const windows = `${db}.op_windows`
  const where = `run_id = ${RUN} AND op IN (${OPS}) AND $__timeFilter_ms(window_start)`
  const bucket = '$__timeInterval(window_start)'

  const hitNames = Object.entries(SERVER_CACHE_COUNTERS)
    .map(([source, c]) => `('${source}', '${c.hits}')`)
    .join(', ')
  const missNames = Object.entries(SERVER_CACHE_COUNTERS)
    .map(([source, c]) => `('${source}', '${c.misses}')`)
    .join(', ')

  const stat = (title: string, unit: string, description: string, query: string) =>
    statPanel(cfg, title, unit, description).withTarget(sqlTarget(cfg, 'A', SQL_FORMAT.table, query))
  const stats = [
    stat(
      'Operations',
      UNITS.count,
      'Operations counted into windows, all selected operations and outcomes.',
      sql`
      SELECT sum(count) AS operations
      FROM ${windows}
      WHERE ${where}`,
    ),
    stat(
      'Current throughput',
      UNITS.throughput,
      `Operations per second over the last ${CURRENT_LOOKBACK_S} s of closed windows (the newest window ` +
        `may still be filling).`,
      sql`
      WITH (SELECT max(window_start) FROM ${windows} WHERE run_id = ${RUN} AND $__timeFilter_ms(window_start)) AS newest
      SELECT if(count() = 0, NULL,
                sum(count) * 1000 / (toUnixTimestamp64Milli(newest) - toUnixTimestamp64Milli(min(window_start))))
             AS ops_per_s
      FROM ${windows}
      WHERE run_id = ${RUN} AND op IN (${OPS})
        AND window_start >= newest - INTERVAL ${CURRENT_LOOKBACK_S} SECOND AND window_start < newest`,
    ),
    stat(
      'p99 latency',
      UNITS.latency,
      'p99 of the merged histogram of all clients, selected operations, all outcomes.',
      sql`
      SELECT if(sum(count) = 0, NULL, least(bs_quantile(0.99, sumMap(hist)), max(max_us))) AS p99_us
      FROM ${windows}
      WHERE ${where}`,
    ),
    stat(
      'Intended p99',
      UNITS.latency,
      "p99 of intended latency (from each operation's scheduled start, -target runs): beside the measured " +
        'p99, the wait behind a slow operation that measured latency leaves out (coordinated omission). ' +
        'Equal to the measured p99 when unthrottled.',
      sql`
      SELECT if(sum(count) = 0, NULL, least(bs_quantile(0.99, sumMap(intended_hist)), max(intended_max_us)))
             AS intended_p99_us
      FROM ${windows}
      WHERE ${where}`,
    ),
    stat(
      'Cache-hit ratio',
      UNITS.ratio,
      'hits / (hits + misses) as the client saw them; empty when the binding cannot tell.',
      sql`
      SELECT sum(cache_hits) / nullIf(sum(cache_hits) + sum(cache_misses), 0) AS hit_ratio
      FROM ${windows}
      WHERE ${where}`,
    ),
    stat(
      'Errors',
      UNITS.count,
      'Operations whose status was not OK (red from the first one).',
      sql`
      SELECT sum(errors) AS errors
      FROM ${windows}
      WHERE ${where}`,
    ).thresholds(
      thresholds([
        { value: null, color: 'green' },
        { value: 1, color: 'red' },
      ]),
    ),
    stat(
      'Clients',
      UNITS.count,
      'Driver clients that announced the run.',
      sql`
      SELECT clients
      FROM ${db}.runs
      WHERE run_id = ${RUN}`,
    ),
  ]

  const throughput = [
    timeseriesPanel(
      cfg,
      'Throughput',
      UNITS.throughput,
      'Operations per second per operation (selected operations), the total over all operations, and ' +
        "the run target (sum of the clients' -target; absent when unthrottled).",
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT ${bucket} AS time, op, sum(count) / ${RATE_DIVISOR} AS ops_per_s
        FROM ${windows}
        WHERE ${where}
        GROUP BY time, op
        ORDER BY time, op`,
        ),
      )
      .withTarget(
        sqlTarget(
          cfg,
          'B',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT ${bucket} AS time,
               sum(count) / ${RATE_DIVISOR} AS total,
               nullIf((SELECT any(target) FROM ${db}.runs WHERE run_id = ${RUN}), 0) AS target
        FROM ${windows}
        WHERE run_id = ${RUN} AND $__timeFilter_ms(window_start)
        GROUP BY time
        ORDER BY time`,
        ),
      )
      .overrideByQuery('A', [{ id: 'displayName', value: '${__field.labels.op}' }])
      .overrideByName('target', dashedLine())
      .span(16),
    timeseriesPanel(
      cfg,
      'Throughput per client',
      UNITS.throughput,
      'Operations per second per driver client (selected operations); the clients add up to the total.',
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT ${bucket} AS time, client_id, sum(count) / ${RATE_DIVISOR} AS ops_per_s
        FROM ${windows}
        WHERE ${where}
        GROUP BY time, client_id
        ORDER BY time, client_id`,
        ),
      )
      .displayName('${__field.labels.client_id}')
      .span(8),
  ]

  // Percentiles are capped at the largest latency seen, as run_summary and the reports cap them: a histogram
  // bucket's value can lie above the maximum (p99.9 6,608 µs beside a maximum of 6,601, seen in the e2e test).
  const latency = [
    timeseriesPanel(
      cfg,
      'Latency percentiles',
      UNITS.latency,
      'p50, p95, p99 and p99.9 per operation from the histograms of all clients merged per time bucket ' +
        '(never averaged percentiles). All outcomes.',
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT time, op,
               least(bs_quantile(0.5, h), mx) AS p50,
               least(bs_quantile(0.95, h), mx) AS p95,
               least(bs_quantile(0.99, h), mx) AS p99,
               least(bs_quantile(0.999, h), mx) AS \`p99.9\`
        FROM
        (
            SELECT ${bucket} AS time, op, sumMap(hist) AS h, max(max_us) AS mx
            FROM ${windows}
            WHERE ${where}
            GROUP BY time, op
        )
        ORDER BY time, op`,
        ),
      )
      .displayName('${__field.labels.op} ${__field.name}')
      .span(12),
    timeseriesPanel(
      cfg,
      'p99: measured vs intended',
      UNITS.latency,
      'Measured p99 (from issue) beside intended p99 (from the scheduled start, corrected for coordinated ' +
        'omission). They part when a throttled client falls behind its schedule.',
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT time, op,
               least(bs_quantile(0.99, h), mx) AS measured_p99,
               least(bs_quantile(0.99, ih), imx) AS intended_p99
        FROM
        (
            SELECT ${bucket} AS time, op, sumMap(hist) AS h, sumMap(intended_hist) AS ih,
                   max(max_us) AS mx, max(intended_max_us) AS imx
            FROM ${windows}
            WHERE ${where}
            GROUP BY time, op
        )
        ORDER BY time, op`,
        ),
      )
      .displayName('${__field.labels.op} ${__field.name}')
      .overrideByRegexp(
        '.*intended_p99',
        dashedLine().filter((p) => p.id !== 'color'),
      )
      .span(12),
  ]

  const cache = [
    timeseriesPanel(
      cfg,
      'Cache-hit ratio per operation (client)',
      UNITS.ratio,
      'hits / (hits + misses) per operation, as the binding reported each operation.',
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT ${bucket} AS time, op,
               sum(cache_hits) / nullIf(sum(cache_hits) + sum(cache_misses), 0) AS hit_ratio
        FROM ${windows}
        WHERE ${where}
        GROUP BY time, op
        ORDER BY time, op`,
        ),
      )
      .displayName('${__field.labels.op}')
      .min(0)
      .max(1),
    timeseriesPanel(
      cfg,
      'Cache-hit ratio (server)',
      UNITS.ratio,
      `From the datastore's cumulative counters (${Object.entries(SERVER_CACHE_COUNTERS)
        .map(([s, c]) => `${s}: ${c.hits}/${c.misses}`)
        .join(', ')}): the increase between consecutive samples of each client, summed per source and bucket. ` +
        'A counter that went down (server restart) counts from zero.',
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT $__timeInterval(at) AS time, source,
               sumIf(delta, hit) / nullIf(sum(delta), 0) AS hit_ratio
        FROM
        (
            SELECT at, source, (source, name) IN (${hitNames}) AS hit,
                   if(value >= prev, value - prev, value) AS delta
            FROM
            (
                SELECT at, source, name, value,
                       lagInFrame(value) OVER w AS prev,
                       row_number() OVER w AS n
                FROM ${db}.server_metrics
                WHERE run_id = ${RUN} AND (source, name) IN (${hitNames}, ${missNames}) AND at <= $__toTime_ms
                WINDOW w AS (PARTITION BY client_id, source, name ORDER BY at
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
            )
            WHERE n > 1
        )
        WHERE $__timeFilter_ms(at)
        GROUP BY time, source
        ORDER BY time, source`,
        ),
      )
      .displayName('${__field.labels.source}')
      .min(0)
      .max(1),
  ]

  const errors = [
    timeseriesPanel(
      cfg,
      'Errors per second by status',
      UNITS.errorRate,
      'Failed operations per second by status (selected operations): operations that ended in each non-OK status.',
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT ${bucket} AS time, status, sum(count) / ${RATE_DIVISOR} AS errors_per_s
        FROM ${windows}
        WHERE ${where} AND status != 'OK'
        GROUP BY time, status
        ORDER BY time, status`,
        ),
      )
      .displayName('${__field.labels.status}')
      .noValue('no errors')
      .span(24),
  ]

  const incidents = `${db}.alert_incidents`
  const alerts = [
    tablePanel(
      cfg,
      'Firing now',
      "The run's alerts that are firing now (an incident of a rule and operation, from its first breaching " +
        'window): value is what the rule measured when it fired (ops/s, an error fraction, or seconds without ' +
        'data), threshold what it was compared with. A silenced one is still shown, with its silence.',
    )
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.table,
          sql`
        SELECT rule, op, severity, starts_at AS since, value, threshold, summary, silenced_by
        FROM ${incidents}
        WHERE run_id = ${RUN} AND state = 'firing'
        ORDER BY since DESC, rule, op`,
        ),
      )
      .noValue('no alert firing')
      .height(8)
      .span(10),
    new StateTimelinePanelBuilder()
      .title('Alert state per rule')
      .description(
        "Each rule's state over the run: firing while any of its incidents (of any operation) is open, " +
          'silenced while only silenced ones are, ok from the run start otherwise. Rules that never fired ' +
          'in this run have no row.',
      )
      .datasource(datasourceRef(cfg))
      .withTarget(
        sqlTarget(
          cfg,
          'A',
          SQL_FORMAT.timeSeries,
          sql`
        SELECT time, rule,
               multiIf(firing > 0, ${ALERT_STATE_VALUES.firing},
                       silenced > 0, ${ALERT_STATE_VALUES.silenced},
                       ${ALERT_STATE_VALUES.ok}) AS state
        FROM
        (
            SELECT time, rule,
                   sum(d_firing) OVER w AS firing,
                   sum(d_silenced) OVER w AS silenced
            FROM
            (
                SELECT time, rule, sum(df) AS d_firing, sum(ds) AS d_silenced
                FROM
                (
                    SELECT toDateTime64(starts_at, 3, 'UTC') AS time, rule,
                           toInt32(silenced_by = '') AS df, toInt32(silenced_by != '') AS ds
                    FROM ${incidents}
                    WHERE run_id = ${RUN}
                    UNION ALL
                    SELECT toDateTime64(assumeNotNull(ends_at), 3, 'UTC') AS time, rule,
                           -toInt32(silenced_by = '') AS df, -toInt32(silenced_by != '') AS ds
                    FROM ${incidents}
                    WHERE run_id = ${RUN} AND ends_at IS NOT NULL
                    UNION ALL
                    SELECT toDateTime64(assumeNotNull(r.started_at), 3, 'UTC') AS time, i.rule AS rule, 0 AS df, 0 AS ds
                    FROM (SELECT DISTINCT rule FROM ${incidents} WHERE run_id = ${RUN}) AS i
                    CROSS JOIN (SELECT started_at FROM ${db}.runs WHERE run_id = ${RUN} AND started_at IS NOT NULL) AS r
                )
                GROUP BY time, rule
            )
            WINDOW w AS (PARTITION BY rule ORDER BY time ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
        )
        ORDER BY time, rule`,
        ),
      )
      .displayName('${__field.labels.rule}')
      .unit(UNITS.none)
      .thresholds(thresholds([{ value: null, color: 'green' }]))
      .mappings([
        {
          type: MappingType.ValueToText,
          options: {
            [ALERT_STATE_VALUES.ok]: { text: 'ok', color: 'green', index: 0 },
            [ALERT_STATE_VALUES.firing]: { text: 'firing', color: 'red', index: 1 },
            [ALERT_STATE_VALUES.silenced]: { text: 'silenced', color: 'purple', index: 2 },
          },
        },
      ])
      .showValue(VisibilityMode.Auto)
      .mergeValues(true)
      .noValue('no alert in this run')
      .height(8)
      .span(14),
  ]

  const builder = new DashboardBuilder('Benchstream — live run')
    .uid(LIVE_RUN_UID)
    .description('One benchmark run as it happens, from ClickHouse windows written by the Benchstream processor.')
    .tags(['benchstream'])
    .editable()
    .timezone('browser')
    .tooltip(DashboardCursorSync.Crosshair)
    .time({ from: 'now-15m', to: 'now' })
    .refresh(LIVE_REFRESH)
    .annotations([alertsAnnotation(cfg, `run_id = ${RUN}`)])
    .withVariable(datasourceVariable(cfg))
    .withVariable(runVariable(cfg, 'run', 'Run', 'Runs active in the time range, newest first.'))
    .withVariable(
      queryVariable(
        cfg,
        'op',
        'Operation',
        'Operations of the run.',
        sql`
        SELECT DISTINCT op
        FROM ${windows}
        WHERE run_id = ${RUN}
        ORDER BY op`,
      )
        .multi(true)
        .includeAll(true),
    )
  withSections(builder, [
    // One row of stats: 24 grid columns shared evenly.
    ['Run so far (within the time range)', stats.map((p) => p.span(Math.floor(24 / stats.length)))],
    ['Alerts', alerts],
    ['Throughput', throughput],
    ['Latency', latency],
    ['Cache', cache],
    ['Errors', errors],
  ])
  return finishDashboard(builder.build(), cfg)
}
