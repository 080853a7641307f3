/**
 * deploy/docker-compose.yml is a valid Compose file (checked against the
 * Compose Specification's JSON schema, since `docker compose config` cannot
 * run here) and works from the host: the Grafana plugin pinned and installed
 * before start, a Kafka listener advertised for the host, a driver that runs
 * for its duration, data in named volumes, datasources that point at
 * services the file defines.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { Ajv } from 'ajv'
import YAML from 'yaml'
import { BINDING_NAMES } from '../../services/adapters/datastores/index.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { parseDriverArgs } from '../../services/driver/config.js'

interface Service {
  image?: string
  command?: string[]
  environment?: Record<string, string | number>
  ports?: string[]
  volumes?: string[]
  profiles?: string[]
}
interface Compose {
  services: Record<string, Service>
  volumes?: Record<string, unknown>
}

const root = repoRoot()
const composeText = readFileSync(path.join(root, 'deploy/docker-compose.yml'), 'utf8')
// merge: true resolves the `<<: *benchstream-env` merge keys, as docker compose does.
const compose = YAML.parse(composeText, { merge: true }) as Compose
const service = (name: string): Service => compose.services[name] ?? assert.fail(`no service ${name}`)
const env = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(service(name).environment ?? {}).map(([k, v]) => [k, String(v)]))

function validator() {
  const schema = JSON.parse(
    readFileSync(path.join(root, 'test/fixtures/compose-spec/compose.schema.json'), 'utf8'),
  ) as Record<string, unknown>
  // ajv 8 does not know the https draft-07 meta-schema URI; draft-07 is its default.
  delete schema.$schema
  return new Ajv({ allErrors: true, strict: false }).compile(schema)
}

test('the compose file validates against the Compose Specification schema; a broken one does not', () => {
  const validate = validator()
  assert.ok(validate(compose), `deploy/docker-compose.yml: ${JSON.stringify(validate.errors, null, 1)}`)
  // The schema is strict enough to catch mistakes (negative control).
  const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> }
  broken.services.kafka!.restart_policy = 'always'
  broken.services.processor!.depends_on = { kafka: { condition: 'service_ready' } }
  assert.equal(validate(broken), false)
  const messages = (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`)
  assert.ok(
    messages.some((m) => m.includes('/services/kafka') && m.includes('additional properties')),
    messages.join('; '),
  )
  assert.ok(
    messages.some((m) => m.includes('/services/processor/depends_on')),
    messages.join('; '),
  )
})

test('Grafana installs the ClickHouse plugin pinned, before it starts, and keeps its data', () => {
  const g = env('grafana')
  assert.equal(g.GF_PLUGINS_PREINSTALL_SYNC, 'grafana-clickhouse-datasource@4.20.0')
  assert.equal(g.GF_INSTALL_PLUGINS, undefined, 'GF_INSTALL_PLUGINS is deprecated')
  assert.ok(service('grafana').volumes?.includes('grafana-data:/var/lib/grafana'))
})

test('Kafka advertises kafka:9092 inside and localhost:29092 to the host, published on 29092', () => {
  const k = env('kafka')
  const listeners = k.KAFKA_LISTENERS!.split(',')
  const advertised = k.KAFKA_ADVERTISED_LISTENERS!.split(',')
  assert.deepEqual(advertised, ['PLAINTEXT://kafka:9092', 'EXTERNAL://localhost:29092'])
  assert.ok(listeners.includes('EXTERNAL://:29092') && listeners.includes('PLAINTEXT://:9092'), k.KAFKA_LISTENERS)
  // Every listener has a security protocol; brokers talk to each other inside.
  const protocols = new Map(
    k.KAFKA_LISTENER_SECURITY_PROTOCOL_MAP!.split(',').map((p) => p.split(':') as [string, string]),
  )
  for (const l of listeners) assert.ok(protocols.has(l.split(':')[0]!), `no protocol for ${l}`)
  assert.equal(k.KAFKA_INTER_BROKER_LISTENER_NAME, 'PLAINTEXT')
  assert.deepEqual(service('kafka').ports, ['29092:29092'])
  // Services in the network use the internal listener.
  assert.equal(env('processor').KAFKA_BROKERS, 'kafka:9092')
})

test("the driver service runs for its duration, not for workloada's 1,000 operations", () => {
  const [phase, ...args] = service('driver').command ?? assert.fail('driver has no command')
  assert.equal(phase, 'run')
  const cfg = parseDriverArgs(
    'run',
    args,
    {},
    { bindings: BINDING_NAMES, readFile: (f) => readFileSync(path.join(root, f), 'utf8') },
  )
  const workload = CoreWorkload.fromProperties(cfg.properties)
  assert.equal(workload.operationCount, 0, 'operationcount=0: no operation limit')
  assert.ok(workload.maxExecutionTimeS >= 60, `runs for --seconds (${workload.maxExecutionTimeS} s)`)
  // Without the override the file's own operationcount would end the run first.
  const plain = parseDriverArgs(
    'run',
    args.filter((a, i) => a !== 'operationcount=0' && args[i + 1] !== 'operationcount=0'),
    {},
    { bindings: BINDING_NAMES, readFile: (f) => readFileSync(path.join(root, f), 'utf8') },
  )
  assert.equal(CoreWorkload.fromProperties(plain.properties).operationCount, 1000)
})

test('Kafka, ClickHouse and Grafana keep their data in named volumes', () => {
  const declared = Object.keys(compose.volumes ?? {})
  const mounts: Record<string, string> = {
    kafka: '/var/lib/kafka/data',
    clickhouse: '/var/lib/clickhouse',
    grafana: '/var/lib/grafana',
  }
  for (const [name, target] of Object.entries(mounts)) {
    const named = (service(name).volumes ?? [])
      .map((v) => v.split(':'))
      .find(([src, dst]) => dst === target && !src!.startsWith('.'))
    assert.ok(named !== undefined, `${name} mounts no named volume at ${target}`)
    assert.ok(declared.includes(named[0]!), `volume ${named[0]} is not declared`)
  }
  assert.equal(env('kafka').KAFKA_LOG_DIRS, '/var/lib/kafka/data', 'the broker writes into its volume')
})

test('the provisioned datasources point at services and ports the compose file defines', () => {
  const ds = YAML.parse(
    readFileSync(path.join(root, 'deploy/grafana/provisioning/datasources/clickhouse.yaml'), 'utf8'),
  ) as {
    datasources: Array<{
      uid: string
      type: string
      isDefault?: boolean
      jsonData: { host: string; port: number; protocol: string; path?: string; defaultDatabase: string }
      secureJsonData: { password: string }
    }>
  }
  const byUid = new Map(ds.datasources.map((d) => [d.uid, d]))
  for (const d of ds.datasources) {
    assert.equal(d.type, 'grafana-clickhouse-datasource')
    assert.equal(d.jsonData.protocol, 'http')
    assert.equal(d.jsonData.defaultDatabase, env('processor').CLICKHOUSE_DATABASE)
    const published = (service(d.jsonData.host).ports ?? []).map((p) => Number(p.split(':')[1]))
    assert.ok(published.includes(d.jsonData.port), `${d.uid}: ${d.jsonData.host} does not listen on ${d.jsonData.port}`)
    // $NAME in secureJsonData is read from Grafana's environment.
    const variable = /^\$(\w+)$/.exec(d.secureJsonData.password)?.[1]
    assert.ok(
      variable !== undefined && env('grafana')[variable] !== undefined,
      `${d.uid}: Grafana has no ${d.secureJsonData.password}`,
    )
  }
  assert.equal(byUid.get('benchstream-clickhouse')?.isDefault, true)
  assert.equal(
    env('processor').CLICKHOUSE_URL,
    `http://clickhouse:${byUid.get('benchstream-clickhouse')!.jsonData.port}`,
  )
  const api = byUid.get('benchstream-api') ?? assert.fail('no datasource for the API endpoint')
  assert.equal(api.jsonData.path, '/clickhouse')
  assert.equal(String(api.jsonData.port), env('processor').API_PORT)
})
