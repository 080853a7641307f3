/**
 * The import map's rules (run by npm run lint). The layers, bottom up:
 *   schemas/            shapes of events, API and tables; imports nothing of ours
 *   services/core/      pure domain (codec, stats, workload, alerting, reports, ycsb) and the ports it owns
 *   services/common/    configuration, logging, paths
 *   services/<service>/ processor, api, alerts, driver: build(config, ports), no infrastructure client
 *   services/adapters/  ports implemented over Kafka, ClickHouse, HTTP, datastores, OpenTelemetry
 * entry files services/<x>/main.ts, services/<x>/<thread>-main.ts and services/cli/*: the only importers of adapters
 * web/                the browser's modules (web/src/<page>/main.ts and what it imports): types alone from schemas/
 *                     and uplot, nothing of services/, so that no server code reaches the browser
 * Folder-level cycles ("two-way pairs") are checked by a second pass that
 * collapses files into their folders (scripts/lint-folders.mjs, also in npm run lint).
 */
// Entry files: services/<x>/main.ts, a thread entry of a service named like one
// (services/driver/worker-main.ts, delivery-main.ts: worker_threads load them by URL), and services/cli/*.
const ENTRY = '^services/(?:[^/]+/main\\.ts$|[^/]+/[a-z]+-main\\.ts$|cli/)'
const INFRA_CLIENTS = `^(?:${[
  'kafkajs',
  '@clickhouse/client',
  'chdb',
  'ioredis',
  'pg',
  '@opentelemetry/sdk-',
  '@opentelemetry/exporter-',
  '@opentelemetry/resources',
].join('|')})`

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Files must not import each other in a loop.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-is-pure',
      severity: 'error',
      comment: 'The core imports only the core and schemas/: no service, no adapter, no infrastructure client.',
      from: { path: '^services/core/' },
      to: { pathNot: ['^services/core/', '^schemas/', '^(node_modules/)?typebox(/|$)'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'schemas-are-leaves',
      severity: 'error',
      comment: 'schemas/ describes shapes; it imports only schemas/ and typebox.',
      from: { path: '^schemas/' },
      to: { pathNot: ['^schemas/', '^(node_modules/)?typebox(/|$)'] },
    },
    {
      name: 'adapters-only-from-entry-files',
      severity: 'error',
      comment:
        'Only entry files (services/*/main.ts, services/*/*-main.ts, services/cli/*) import adapters; ' +
        'services receive ports.',
      from: { path: '^services/', pathNot: [ENTRY, '^services/adapters/'] },
      to: { path: '^services/adapters/' },
    },
    {
      name: 'adapters-see-only-the-core',
      severity: 'error',
      comment: 'Adapters implement ports of the core; they import no service and no entry file.',
      from: { path: '^services/adapters/' },
      to: { path: '^services/(?!adapters/|core/|common/)' },
    },
    {
      name: 'infrastructure-clients-only-in-adapters',
      severity: 'error',
      comment:
        'kafkajs, ClickHouse, chDB, datastore clients and the OpenTelemetry SDK are used only by adapters ' +
        '(and wired by entry files).',
      from: { path: '^services/', pathNot: ['^services/adapters/', ENTRY] },
      to: { path: `^node_modules/${INFRA_CLIENTS.slice(1)}` },
    },
    {
      name: 'web-is-browser-code',
      severity: 'error',
      comment:
        'web/ runs in the browser as tsc emits it (no bundler): it imports web/, and types alone from schemas/ and ' +
        "uplot (the types-alone part is .oxlintrc.json's no-restricted-imports for web/); nothing of services/.",
      from: { path: '^web/' },
      to: { pathNot: ['^web/', '^schemas/', '^node_modules/uplot/'] },
    },
    {
      name: 'no-orphans',
      severity: 'error',
      comment: 'A module nobody imports is dead code (entry points excepted).',
      from: {
        orphan: true,
        pathNot: [
          '^services/cli/main\\.ts$',
          '\\.d\\.ts$',
          '(^|/)\\.[^/]+\\.(c?js|json)$',
          '^dashboards/index\\.ts$',
          '^web/src/[^/]+/main\\.ts$',
          '^bench/',
          '^test/',
        ],
      },
      to: {},
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
    reporterOptions: { text: { highlightFocused: true } },
  },
}
