/**
 * Shared pieces of Benchstream's Grafana dashboards: the ClickHouse
 * datasource reference, units, panel defaults, the query target the
 * grafana-clickhouse-datasource plugin reads, and SQL fragments used by more
 * than one dashboard. The dashboards themselves are one module each
 * (live-run.ts, compare-runs.ts, sweep.ts); index.ts writes their JSON.
 */
import type * as cog from '@grafana/grafana-foundation-sdk/cog'
import {
  VizLegendOptionsBuilder,
  VizTooltipOptionsBuilder,
  ReduceDataOptionsBuilder,
  LegendDisplayMode,
  LegendPlacement,
  TooltipDisplayMode,
  SortOrder,
  BigValueGraphMode,
  BigValueColorMode,
  BigValueTextMode,
} from '@grafana/grafana-foundation-sdk/common'
import {
  AnnotationQueryBuilder,
  DatasourceVariableBuilder,
  QueryVariableBuilder,
  RowBuilder,
  ThresholdsConfigBuilder,
  ThresholdsMode,
  VariableRefresh,
  VariableSort,
  AnnotationEventFieldSource,
  type AnnotationEventFieldMapping,
  type DashboardBuilder,
  type Dashboard,
  type Panel,
  type RowPanel,
  type Threshold,
} from '@grafana/grafana-foundation-sdk/dashboard'
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries'
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat'
import { PanelBuilder as TablePanelBuilder } from '@grafana/grafana-foundation-sdk/table'
import { PanelBuilder as BarChartPanelBuilder } from '@grafana/grafana-foundation-sdk/barchart'
import { PanelBuilder as TrendPanelBuilder } from '@grafana/grafana-foundation-sdk/trend'
import { BenchstreamError } from '../services/core/errors.js'

/** Plugin id of grafana-clickhouse-datasource. */
export const DATASOURCE_TYPE = 'grafana-clickhouse-datasource'

/**
 * The plugin version the queries are written for (deploy/docker-compose.yml
 * pins it). Stored on every query: the plugin's editor migrates any query
 * whose pluginVersion is missing or below 4.0.0 (src/data/migration.ts:176-181).
 */
export const PLUGIN_VERSION = '4.20.0'

/**
 * The Grafana release the panels are written for (deploy/docker-compose.yml
 * pins the image). Stored on every panel: Grafana migrates and re-stamps a
 * panel whose pluginVersion differs from the running one.
 */
export const GRAFANA_VERSION = '12.2.0'

/** Name of the dashboards' datasource variable: every panel, query and variable reads `${datasource}`. */
export const DATASOURCE_VARIABLE = 'datasource'

/** Grafana unit ids. */
export const UNITS = {
  /** Latencies are stored in µs everywhere (histograms, sum_us). */
  latency: 'µs',
  throughput: 'ops',
  /** A 0..1 ratio shown as a percentage. */
  ratio: 'percentunit',
  percent: 'percent',
  count: 'short',
  seconds: 's',
  /** Failed operations per second (Grafana's custom-suffix unit): not "ops/s", which reads as throughput. */
  errorRate: 'suffix: err/s',
  /** Plain numbers (labels, ids) in tables. */
  none: 'none',
} as const

/**
 * A single base colour: Grafana's default thresholds (green, red above 80) would colour values that mean nothing of the
 * sort.
 */
export function neutralThresholds(color = 'text'): ThresholdsConfigBuilder {
  return thresholds([{ value: null, color }])
}

/** Absolute thresholds; the first step's value is null (Grafana's -Infinity). */
export function thresholds(steps: Threshold[]): ThresholdsConfigBuilder {
  return new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps(steps)
}

/** sqlutil.FormatQueryOption: what the plugin's backend makes of the rows. */
export const SQL_FORMAT = {
  /** Long frames (time, label columns, values) become one series per label set. */
  timeSeries: 0,
  table: 1,
} as const
export type SqlFormat = (typeof SQL_FORMAT)[keyof typeof SQL_FORMAT]

/** The plugin's QueryType for each format (types/queryBuilder.ts); Explore picks a visualisation from it. */
const QUERY_TYPE = { 0: 'timeseries', 1: 'table' } as const

/** Refresh of the live dashboard: the processor flushes open windows about once a second. */
export const LIVE_REFRESH = '5s'

/** Server-side cache counters by sampler source: the same table the reports use. */
export { SERVER_CACHE_COUNTERS } from '../services/core/reports/server-cache.js'

/** YCSB's operation order, used to sort tables the way YCSB prints reports. */
export const OPERATION_ORDER = ['READ', 'UPDATE', 'INSERT', 'SCAN', 'READ-MODIFY-WRITE', 'DELETE'] as const

export interface DashboardConfig {
  /** ClickHouse database holding Benchstream's tables (CLICKHOUSE_DATABASE). @default benchstream */
  database: string
  /**
   * uid of the grafana-clickhouse-datasource instance selected at first in
   * the dashboards' datasource variable (deploy/grafana/provisioning/datasources/clickhouse.yaml);
   * where no datasource has it, Grafana selects the default one of the plugin's type.
   * @default benchstream-clickhouse
   */
  datasourceUid: string
}

const DATABASE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
const UID = /^[A-Za-z0-9_-]{1,40}$/

/** Validated, frozen dashboard configuration. */
export function dashboardConfig(overrides: Partial<DashboardConfig> = {}): Readonly<DashboardConfig> {
  const cfg: DashboardConfig = { database: 'benchstream', datasourceUid: 'benchstream-clickhouse', ...overrides }
  if (!DATABASE.test(cfg.database))
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `dashboard database ${JSON.stringify(cfg.database)} is not allowed: a ClickHouse identifier, ` +
        `letters, digits and _ (not starting with a digit), at most 64`,
    )
  if (!UID.test(cfg.datasourceUid))
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `datasource uid ${JSON.stringify(cfg.datasourceUid)} is not allowed: 1-40 characters from A-Z a-z 0-9 _ -`,
    )
  return Object.freeze(cfg)
}

export interface DataSourceRef {
  type: typeof DATASOURCE_TYPE
  uid: string
}

/** The datasource of every panel, query and query variable: the one the datasource variable selects. */
export function datasourceRef(_cfg: DashboardConfig): DataSourceRef {
  return { type: DATASOURCE_TYPE, uid: `\${${DATASOURCE_VARIABLE}}` }
}

/** The datasource picker: any grafana-clickhouse-datasource instance, so an import needs no fixed uid. */
export function datasourceVariable(cfg: DashboardConfig): DatasourceVariableBuilder {
  return new DatasourceVariableBuilder(DATASOURCE_VARIABLE)
    .label('ClickHouse')
    .description(
      "The grafana-clickhouse-datasource instance to read: a ClickHouse server with Benchstream's " +
        "tables, or Benchstream's API at /clickhouse (embedded mode).",
    )
    .type(DATASOURCE_TYPE)
    .regex('')
    .current({ text: cfg.datasourceUid, value: cfg.datasourceUid })
}

/** A SQL-editor query of grafana-clickhouse-datasource (types/sql.ts CHSqlQuery), as stored in dashboard JSON. */
export interface ClickHouseSqlQuery extends cog.Dataquery {
  refId: string
  datasource: DataSourceRef
  editorType: 'sql'
  format: SqlFormat
  queryType: (typeof QUERY_TYPE)[SqlFormat]
  rawSql: string
  pluginVersion: typeof PLUGIN_VERSION
}

/** The foundation SDK has no ClickHouse query builder; this one writes the plugin's query model. */
export class ClickHouseQueryBuilder implements cog.Builder<cog.Dataquery> {
  private readonly query: ClickHouseSqlQuery
  constructor(cfg: DashboardConfig, refId: string, format: SqlFormat, rawSql: string) {
    this.query = {
      refId,
      datasource: datasourceRef(cfg),
      editorType: 'sql',
      format,
      queryType: QUERY_TYPE[format],
      rawSql,
      pluginVersion: PLUGIN_VERSION,
      // Marks the object as a dataquery for the SDK's types; JSON.stringify drops it.
      _implementsDataqueryVariant: () => undefined,
    }
  }
  build(): ClickHouseSqlQuery {
    return this.query
  }
}

export function sqlTarget(
  cfg: DashboardConfig,
  refId: string,
  format: SqlFormat,
  rawSql: string,
): ClickHouseQueryBuilder {
  return new ClickHouseQueryBuilder(cfg, refId, format, rawSql)
}

/** Template tag that strips the common indentation, so SQL reads well in Grafana's editor and in the JSON. */
export function sql(strings: TemplateStringsArray, ...values: Array<string | number>): string {
  const text = strings.reduce((acc, s, i) => acc + s + (i < values.length ? String(values[i]) : ''), '')
  const lines = text.replace(/^\n/, '').replace(/\s+$/, '').split('\n')
  const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length))
  return lines.map((l) => l.slice(indent)).join('\n')
}

/** Indents every line but the first by n spaces: for SQL placed inside another sql`` template at that column. */
export function indentTail(text: string, n: number): string {
  return text.split('\n').join('\n' + ' '.repeat(n))
}

// -- SQL fragments ------------------------------------------------------------

/**
 * Operations per second in a time bucket: the bucket's count over the bucket
 * length, or over the window length when windows are longer than the bucket
 * (then each bucket holds one window).
 */
export const RATE_DIVISOR = 'greatest($__interval_s, max(window_ms) / 1000)'

/** Runs whose life overlaps the dashboard's time range (a run still going has no end). */
export function runsInRangeWhere(alias = ''): string {
  const p = alias === '' ? '' : `${alias}.`
  return `${p}started_at <= $__toTime_ms AND (${p}ended_at IS NULL OR ${p}ended_at >= $__fromTime_ms)`
}

/**
 * A run picker: runs overlapping the time range, newest first; a summary run (YCSB's final reports as printed, view
 * reported_runs) is shown as `<run> (reported)`, its value still the run id.
 */
export function runVariable(
  cfg: DashboardConfig,
  name: string,
  label: string,
  description: string,
): QueryVariableBuilder {
  const query = sql`
    SELECT if(p.origin = 'reported', concat(r.run_id, ' (reported)'), r.run_id) AS __text, r.run_id AS __value
    FROM ${cfg.database}.runs AS r
    LEFT JOIN (SELECT run_id, origin FROM ${cfg.database}.reported_runs) AS p ON p.run_id = r.run_id
    WHERE ${runsInRangeWhere('r')}
    ORDER BY r.started_at DESC, r.run_id`
  return queryVariable(cfg, name, label, description, query)
}

export function queryVariable(
  cfg: DashboardConfig,
  name: string,
  label: string,
  description: string,
  query: string,
): QueryVariableBuilder {
  // A plain string query: every version of the plugin reads it as raw SQL.
  return (
    new QueryVariableBuilder(name)
      .label(label)
      .description(description)
      .datasource(datasourceRef(cfg))
      .query(query)
      .definition(query)
      // On every load, so a run started since appears in the picker (queried with the time range at load).
      .refresh(VariableRefresh.OnDashboardLoad)
      .sort(VariableSort.Disabled)
  )
}

// -- alerts -------------------------------------------------------------------

/** Grafana's annotation field names (standardAnnotationSupport) and the columns the alerts query gives them. */
const ANNOTATION_FIELDS = ['time', 'timeEnd', 'title', 'text', 'tags'] as const

/**
 * The alerts of the runs the dashboard shows, as Grafana annotations on every time panel: a region from the incident's
 * start to its end (to now while it fires), the rule, operation and state as title, the evaluator's summary as text,
 * and rule, op, severity (and `silenced`) as tags, which Grafana splits on commas. The plugin uses Grafana's standard
 * annotation support, which maps columns by name (case-insensitive); the mappings say so explicitly.
 *
 * @param runCondition SQL over run_id: which runs' alerts (the dashboard's run variables).
 */
export function alertsAnnotation(cfg: DashboardConfig, runCondition: string): AnnotationQueryBuilder {
  const query = sql`
    SELECT starts_at AS time,
           ifNull(ends_at, greatest(starts_at, now64(3, 'UTC'))) AS timeEnd,
           concat(rule, ' (', op, '): ', toString(state), if(silenced_by = '', '', ', silenced')) AS title,
           summary AS text,
           concat(rule, ',', op, ',', severity, if(silenced_by = '', '', ',silenced')) AS tags
    FROM ${cfg.database}.alert_incidents
    WHERE ${runCondition}
      AND starts_at <= $__toTime_ms AND (ends_at IS NULL OR ends_at >= $__fromTime_ms)
    ORDER BY time, rule, op`
  return new AnnotationQueryBuilder()
    .name('Alerts')
    .datasource(datasourceRef(cfg))
    .enable(true)
    .hide(false)
    .iconColor('red')
    .target(sqlTarget(cfg, 'Anno', SQL_FORMAT.table, query))
    .mappings(Object.fromEntries(ANNOTATION_FIELDS.map((f) => [f, new AnnotationFieldBuilder(f)])))
}

/** A field mapping of an annotation: the column of that name. */
class AnnotationFieldBuilder implements cog.Builder<AnnotationEventFieldMapping> {
  constructor(private readonly column: string) {}
  build(): AnnotationEventFieldMapping {
    return { source: AnnotationEventFieldSource.Field, value: this.column }
  }
}

// -- panel defaults -----------------------------------------------------------

function legend(): VizLegendOptionsBuilder {
  return new VizLegendOptionsBuilder()
    .showLegend(true)
    .displayMode(LegendDisplayMode.Table)
    .placement(LegendPlacement.Bottom)
    .calcs(['mean', 'max', 'lastNotNull'])
}

function tooltip(): VizTooltipOptionsBuilder {
  return new VizTooltipOptionsBuilder().mode(TooltipDisplayMode.Multi).sort(SortOrder.Descending)
}

export function timeseriesPanel(
  cfg: DashboardConfig,
  title: string,
  unit: string,
  description: string,
): TimeseriesPanelBuilder {
  return new TimeseriesPanelBuilder()
    .title(title)
    .description(description)
    .datasource(datasourceRef(cfg))
    .unit(unit)
    .thresholds(neutralThresholds('green'))
    .legend(legend())
    .tooltip(tooltip())
    .lineWidth(1)
    .fillOpacity(10)
    .spanNulls(false)
    .height(9)
    .span(12)
}

export function statPanel(cfg: DashboardConfig, title: string, unit: string, description: string): StatPanelBuilder {
  return new StatPanelBuilder()
    .title(title)
    .description(description)
    .datasource(datasourceRef(cfg))
    .unit(unit)
    .thresholds(neutralThresholds())
    .graphMode(BigValueGraphMode.None)
    .colorMode(BigValueColorMode.Value)
    .textMode(BigValueTextMode.Value)
    .reduceOptions(new ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false))
    .noValue('no data')
    .height(4)
    .span(4)
}

/** A table; its columns get their units by overrides, the rest are plain numbers. */
export function tablePanel(cfg: DashboardConfig, title: string, description: string): TablePanelBuilder {
  return new TablePanelBuilder()
    .title(title)
    .description(description)
    .datasource(datasourceRef(cfg))
    .unit(UNITS.none)
    .thresholds(neutralThresholds())
    .height(10)
    .span(24)
}

export function barChartPanel(
  cfg: DashboardConfig,
  title: string,
  unit: string,
  xField: string,
  description: string,
): BarChartPanelBuilder {
  return new BarChartPanelBuilder()
    .title(title)
    .description(description)
    .datasource(datasourceRef(cfg))
    .unit(unit)
    .thresholds(neutralThresholds('green'))
    .xField(xField)
    .legend(legend().calcs([]))
    .tooltip(tooltip())
    .height(9)
    .span(12)
}

/** Trend: a line chart over a numeric x field instead of time (runs aligned on seconds since their start). */
export function trendPanel(
  cfg: DashboardConfig,
  title: string,
  unit: string,
  xField: string,
  description: string,
): TrendPanelBuilder {
  return new TrendPanelBuilder()
    .title(title)
    .description(description)
    .datasource(datasourceRef(cfg))
    .unit(unit)
    .thresholds(neutralThresholds('green'))
    .xField(xField)
    .legend(legend())
    .tooltip(tooltip())
    .lineWidth(1)
    .height(9)
    .span(12)
}

/** A field override that draws one series as a dashed reference line. */
export function dashedLine(): Array<{ id: string; value: unknown }> {
  return [
    { id: 'custom.lineStyle', value: { fill: 'dash', dash: [10, 10] } },
    { id: 'custom.fillOpacity', value: 0 },
    { id: 'color', value: { mode: 'fixed', fixedColor: 'red' } },
  ]
}

/**
 * Adds expanded rows, each followed by its panels at the top level (the
 * layout Grafana uses for rows that are open; RowBuilder.withPanel would
 * collapse the row and hide its panels).
 */
export function withSections(
  d: DashboardBuilder,
  sections: ReadonlyArray<readonly [title: string, panels: ReadonlyArray<cog.Builder<Panel>>]>,
): DashboardBuilder {
  for (const [title, panels] of sections) {
    d.withRow(new RowBuilder(title).collapsed(false))
    for (const p of panels) d.withPanel(p)
  }
  return d
}

/**
 * Gives every panel and row a stable id (1, 2, ... in layout order), stamps
 * panels with the Grafana version they are written for, makes every variable
 * refresh on load, and checks that each panel reads the datasource variable
 * with explicit units and thresholds; Grafana needs ids for links and the
 * SDK leaves them unset.
 */
export function finishDashboard(d: Dashboard, cfg: DashboardConfig): Dashboard {
  let id = 0
  const ds = datasourceRef(cfg).uid
  const visit = (p: Panel | RowPanel): void => {
    p.id = ++id
    if (p.type === 'row') {
      for (const inner of (p as RowPanel).panels) visit(inner)
      return
    }
    const panel = p as Panel
    panel.pluginVersion = GRAFANA_VERSION
    const where = `panel ${JSON.stringify(panel.title)} of dashboard ${d.uid ?? ''}`
    if (panel.datasource?.uid !== ds) throw new BenchstreamError('BS_ERR_CONFIG', `${where} has no datasource ${ds}`)
    const defaults = panel.fieldConfig?.defaults
    if (defaults?.unit === undefined || (defaults.thresholds?.steps ?? []).length === 0)
      throw new BenchstreamError('BS_ERR_CONFIG', `${where} needs an explicit unit and thresholds`)
  }
  for (const p of d.panels ?? []) visit(p)
  for (const a of d.annotations?.list ?? [])
    if (
      a.datasource?.uid !== ds ||
      (a.target as { pluginVersion?: string } | undefined)?.pluginVersion !== PLUGIN_VERSION
    )
      throw new BenchstreamError(
        'BS_ERR_CONFIG',
        `annotation ${JSON.stringify(a.name)} of dashboard ${d.uid ?? ''} needs datasource ${ds} and a query ` +
          `of plugin version ${PLUGIN_VERSION}`,
      )
  const variables = d.templating.list ?? []
  if (variables[0]?.name !== DATASOURCE_VARIABLE)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `dashboard ${d.uid ?? ''} must start with the ${DATASOURCE_VARIABLE} variable`,
    )
  for (const v of variables)
    if (v.type === 'query' || v.type === 'datasource') v.refresh = VariableRefresh.OnDashboardLoad
  return d
}
