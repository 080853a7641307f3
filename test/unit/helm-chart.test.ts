/**
 * The Helm chart (deploy/helm/benchstream), through its committed renderings (deploy/helm/rendered/*.yaml, written by
 * `npm run k8s:render` with Helm itself): every object valid against the schemas of Kubernetes 1.36 and of the
 * operators' CRDs (test/fixtures/k8s, strict: unknown fields refused), broken objects refused, and the wiring right
 * (configuration the server accepts, probes, the token from the Secret, topics, the cluster name, dashboards).
 * When deploy/helm/check.sh has built and cached helm and kubeconform, the chart is rendered again and compared, and
 * kubeconform validates too; building them takes minutes, so `npm test` does not (`npm run test:k8s` does).
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import type { TObject } from 'typebox'
import YAML from 'yaml'
import { AlertsEnv } from '../../services/alerts/config.js'
import { ApiEnv, readApiConfig } from '../../services/api/config.js'
import { readEnv, type Env } from '../../services/common/config.js'
import { InfraEnv, readInfraConfig } from '../../services/common/infra-config.js'
import { LogEnv } from '../../services/common/logger.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { ProcessorEnv, readProcessorConfig } from '../../services/processor/config.js'
import { ServerEnv, readServerConfig } from '../../services/server/config.js'
import { loadSchemas, objectValidator, writeSchemaFiles, type K8sObject } from '../helpers/k8s-schemas.js'

/** The variables `benchstream server` reads (as docs/reference/configuration.md lists them). */
const SERVER_ENV: TObject[] = [InfraEnv, ProcessorEnv, ApiEnv, AlertsEnv, ServerEnv, LogEnv]
const root = repoRoot()
const RENDERED = path.join(root, 'deploy/helm/rendered')
const CHART = path.join(root, 'deploy/helm/benchstream')

function parseAll(text: string): K8sObject[] {
  return YAML.parseAllDocuments(text)
    .map((d) => d.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null)
}

const renderings = new Map(
  readdirSync(RENDERED)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => [f, parseAll(readFileSync(path.join(RENDERED, f), 'utf8'))]),
)
const all = renderings.get('default.yaml') ?? assert.fail('no deploy/helm/rendered/default.yaml')
const schemas = loadSchemas()
const validate = objectValidator(schemas)

function find(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name))
  assert.equal(found.length, 1, `one ${kind} ${name ?? ''} (found ${found.length})`)
  return found[0]!
}

type Container = {
  name: string
  args?: string[]
  env?: Array<{ name: string; value?: string; valueFrom?: Record<string, Record<string, string>> }>
  envFrom?: Array<{ configMapRef?: { name: string } }>
  ports?: Array<{ name: string; containerPort: number }>
  readinessProbe?: { httpGet?: { path: string; port: string | number } }
  livenessProbe?: { httpGet?: { path: string; port: string | number } }
  volumeMounts?: Array<{ name: string; mountPath: string; subPath?: string }>
}
type PodTemplate = {
  metadata: { labels: Record<string, string> }
  spec: { containers: Container[]; volumes?: unknown[] }
}
const podOf = (o: K8sObject): PodTemplate => (o.spec as { template: PodTemplate }).template
const containerOf = (o: K8sObject): Container => podOf(o).spec.containers[0]!

/** A container's environment as the process sees it: the ConfigMaps it reads, its values, secrets as placeholders. */
function envOf(objects: K8sObject[], c: Container): Record<string, string> {
  const env: Record<string, string> = {}
  for (const from of c.envFrom ?? []) {
    const cm = find(objects, 'ConfigMap', from.configMapRef?.name)
    Object.assign(env, cm.data as Record<string, string>)
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value
    else if (e.valueFrom?.secretKeyRef !== undefined)
      env[e.name] = `secret:${e.valueFrom.secretKeyRef.key!}:0123456789abcdef`
    else if (e.valueFrom?.fieldRef !== undefined) env[e.name] = `field:${e.valueFrom.fieldRef.fieldPath!}`
  }
  return env
}

test('every rendered object is valid against Kubernetes 1.36 and the operators’ CRD schemas', () => {
  assert.ok(renderings.size >= 2, [...renderings.keys()].join(', '))
  const problems: string[] = []
  for (const [file, objects] of renderings)
    for (const o of objects) for (const p of validate(o)) problems.push(`${file} ${o.kind}/${o.metadata.name}: ${p}`)
  assert.deepEqual(problems, [])
  const kinds = new Set(all.map((o) => `${o.apiVersion} ${o.kind}`))
  for (const k of [
    'apps/v1 Deployment',
    'apps/v1 StatefulSet',
    'policy/v1 PodDisruptionBudget',
    'v1 ConfigMap',
    'v1 Service',
    'kafka.strimzi.io/v1 Kafka',
    'kafka.strimzi.io/v1 KafkaNodePool',
    'kafka.strimzi.io/v1 KafkaTopic',
    'clickhouse.altinity.com/v1 ClickHouseInstallation',
    'clickhouse-keeper.altinity.com/v1 ClickHouseKeeperInstallation',
  ])
    assert.ok(kinds.has(k), `the chart renders a ${k}`)
})

test('a broken manifest is refused: unknown fields, wrong types, missing required fields, unknown kinds', () => {
  const broken = (kind: string, name: string | undefined, change: (o: Record<string, any>) => void): string[] => {
    const o = structuredClone(find(all, kind, name)) as Record<string, any>
    change(o)
    return validate(o as K8sObject)
  }
  const refused = (problems: string[], pattern: RegExp): void =>
    assert.ok(
      problems.some((p) => pattern.test(p)),
      `expected ${pattern} in ${JSON.stringify(problems)}`,
    )
  refused(
    broken('Deployment', 'benchstream-server', (o) => {
      o.spec.template.spec.terminationGracePeriodSecond = 60
    }),
    /\/spec\/template\/spec must NOT have additional properties \(terminationGracePeriodSecond\)/,
  )
  refused(
    broken('Deployment', 'benchstream-server', (o) => {
      o.spec.replicas = '2'
    }),
    /\/spec\/replicas must be integer/,
  )
  refused(
    broken('Deployment', 'benchstream-server', (o) => {
      delete o.spec.template.spec.containers[0].name
    }),
    /\/spec\/template\/spec\/containers\/0 must have required property 'name'/,
  )
  refused(
    broken('PodDisruptionBudget', undefined, (o) => {
      o.spec.minAvailable = { count: 1 }
    }),
    /\/spec\/minAvailable/,
  )
  refused(
    broken('Kafka', undefined, (o) => {
      delete o.spec.kafka.listeners[0].tls
    }),
    /\/spec\/kafka\/listeners\/0 must have required property 'tls'/,
  )
  refused(
    broken('KafkaNodePool', undefined, (o) => {
      o.spec.roles = ['controller', 'zookeeper']
    }),
    /\/spec\/roles\/1 must be equal to one of the allowed values/,
  )
  refused(
    broken('KafkaTopic', 'benchstream-events', (o) => {
      o.spec.partitions = 'twelve'
    }),
    /\/spec\/partitions must be integer/,
  )
  refused(
    broken('ClickHouseInstallation', undefined, (o) => {
      o.spec.configuration.clusters[0].layout.replicaCount = 2
    }),
    /\/spec\/configuration\/clusters\/0\/layout must NOT have additional properties \(replicaCount\)/,
  )
  refused(
    broken('ClickHouseKeeperInstallation', undefined, (o) => {
      o.metadata.label = { a: 'b' }
    }),
    /\/metadata must NOT have additional properties \(label\)/,
  )
  assert.deepEqual(validate({ apiVersion: 'v1', kind: 'Pdo', metadata: { name: 'x' } }), ['no schema for v1 Pdo'])
})

test('the server: its configuration accepted by its own readers, probes on /healthz, its token from the Secret', () => {
  const server = find(all, 'Deployment', 'benchstream-server')
  const c = containerOf(server)
  assert.deepEqual(c.args, ['server'])
  const env = envOf(all, c) as Env
  const known = new Set(SERVER_ENV.flatMap((s) => Object.keys(s.properties)))
  for (const name of Object.keys(env)) assert.ok(known.has(name), `${name} is a configuration variable`)
  for (const s of SERVER_ENV) readEnv(s, env)
  const infra = readInfraConfig(env)
  readProcessorConfig(env)
  readServerConfig(env)
  const api = readApiConfig(env)
  assert.equal(api.host, '0.0.0.0')
  for (const [name, key] of [
    ['API_TOKEN', 'api-token'],
    ['CLICKHOUSE_PASSWORD', 'clickhouse-password'],
  ] as const) {
    const e = c.env?.find((x) => x.name === name)
    assert.deepEqual(e?.valueFrom, { secretKeyRef: { name: 'benchstream', key } }, name)
  }
  const port = c.ports?.find((p) => p.name === 'http')
  assert.equal(port?.containerPort, api.port)
  assert.deepEqual(c.readinessProbe?.httpGet, { path: '/healthz', port: 'http' })
  assert.deepEqual(c.livenessProbe?.httpGet, { path: '/healthz', port: 'http' })
  assert.ok((server.spec as { replicas: number }).replicas >= 2)
  assert.ok((c as { resources?: { requests?: unknown } }).resources?.requests !== undefined)
  // The PodDisruptionBudget and the Service select the server's pods.
  const labels = podOf(server).metadata.labels
  const selects = (selector: Record<string, string>): boolean =>
    Object.entries(selector).every(([k, v]) => labels[k] === v)
  const pdb = find(all, 'PodDisruptionBudget', 'benchstream-server').spec as {
    selector: { matchLabels: Record<string, string> }
  }
  assert.ok(selects(pdb.selector.matchLabels))
  assert.ok(selects((find(all, 'Service', 'benchstream-server').spec as { selector: Record<string, string> }).selector))
  // Kafka and ClickHouse are the ones the chart creates: Strimzi's bootstrap service, the operator's service, the
  // cluster name of the ClickHouseInstallation.
  const kafka = find(all, 'Kafka')
  assert.deepEqual(infra.kafka.brokers, [`${kafka.metadata.name}-kafka-bootstrap:9092`])
  const chi = find(all, 'ClickHouseInstallation')
  const chiSpec = chi.spec as {
    configuration: {
      clusters: Array<{ name: string; layout: { shardsCount: number; replicasCount: number } }>
      zookeeper: { nodes: Array<{ host: string; port: number }> }
      users: Record<string, unknown>
    }
  }
  assert.equal(infra.clickhouse.url, `http://clickhouse-${chi.metadata.name}:8123`)
  assert.equal(infra.clickhouse.cluster, chiSpec.configuration.clusters[0]!.name)
  assert.equal(chiSpec.configuration.clusters[0]!.layout.shardsCount, 1, 'one shard: exactly-once needs it')
  assert.deepEqual(chiSpec.configuration.zookeeper.nodes, [
    { host: `keeper-${find(all, 'ClickHouseKeeperInstallation').metadata.name}`, port: 2181 },
  ])
  assert.equal(
    chiSpec.configuration.users[`${infra.clickhouse.user}/k8s_secret_password`],
    'benchstream/clickhouse-password',
  )
})

test('agents: a StatefulSet of `benchstream agent --name $(POD_NAME)` on the control topic', () => {
  const agents = find(all, 'StatefulSet', 'benchstream-agent')
  const c = containerOf(agents)
  assert.deepEqual(c.args?.slice(0, 3), ['agent', '--name', '$(POD_NAME)'])
  const env = envOf(all, c)
  assert.equal(env.POD_NAME, 'field:metadata.name')
  readInfraConfig(env)
  assert.equal(find(all, 'Service', (agents.spec as { serviceName: string }).serviceName).kind, 'Service')
})

test('Kafka: KRaft node pool of 3, a KafkaTopic for every Benchstream topic, the control topic on broker time', () => {
  const env = envOf(all, containerOf(find(all, 'Deployment', 'benchstream-server')))
  const infra = readInfraConfig(env)
  const pool = find(all, 'KafkaNodePool').spec as { replicas: number; roles: string[] }
  assert.equal(pool.replicas, 3)
  assert.deepEqual([...pool.roles].sort(), ['broker', 'controller'])
  const kafka = find(all, 'Kafka').spec as { kafka: { config: Record<string, unknown> } }
  assert.equal(kafka.kafka.config['offsets.retention.minutes'], 7 * 24 * 60)
  const topics = new Map(
    all
      .filter((o) => o.kind === 'KafkaTopic')
      .map((o) => {
        const spec = o.spec as {
          topicName: string
          partitions: number
          replicas: number
          config: Record<string, unknown>
        }
        assert.equal(o.metadata.labels?.['strimzi.io/cluster'], find(all, 'Kafka').metadata.name)
        return [spec.topicName, spec]
      }),
  )
  const t = infra.topics
  assert.deepEqual([...topics.keys()].sort(), [t.events, t.deadLetter, t.alerts, t.control].sort())
  assert.equal(topics.get(t.events)?.partitions, t.partitions)
  assert.equal(topics.get(t.control)?.config['message.timestamp.type'], 'LogAppendTime')
  assert.equal(topics.get(t.control)?.partitions, 1)
  for (const [name, spec] of topics) {
    assert.equal(spec.replicas, 3, name)
    assert.equal(spec.config['min.insync.replicas'], 2, name)
  }
})

test('Grafana: the generated dashboards as they are, the ClickHouse datasources provisioned (apiVersion 1)', () => {
  const dashboards = find(all, 'ConfigMap', 'benchstream-grafana-dashboards').data as Record<string, string>
  const dir = path.join(root, 'dashboards/generated')
  const generated = readdirSync(dir).filter((f) => f.endsWith('.json'))
  assert.deepEqual(Object.keys(dashboards).sort(), generated.sort())
  for (const f of generated)
    assert.equal(dashboards[f], readFileSync(path.join(dir, f), 'utf8'), `${f}: run npm run k8s:render`)
  const provisioning = find(all, 'ConfigMap', 'benchstream-grafana-provisioning').data as Record<string, string>
  const ds = YAML.parse(provisioning['datasources.yaml']!) as {
    apiVersion: number
    datasources: Array<{
      uid: string
      type: string
      jsonData: Record<string, unknown>
      secureJsonData: Record<string, string>
    }>
  }
  assert.equal(ds.apiVersion, 1)
  const byUid = new Map(ds.datasources.map((d) => [d.uid, d]))
  const ch = byUid.get('benchstream-clickhouse')
  assert.equal(ch?.type, 'grafana-clickhouse-datasource')
  assert.deepEqual(
    [ch.jsonData.host, ch.jsonData.port],
    [`clickhouse-${find(all, 'ClickHouseInstallation').metadata.name}`, 8123],
  )
  assert.equal(ch.secureJsonData.password, '$CLICKHOUSE_PASSWORD')
  assert.deepEqual(
    [byUid.get('benchstream-api')?.jsonData.host, byUid.get('benchstream-api')?.jsonData.path],
    ['benchstream-server', '/clickhouse'],
  )
  // The same datasource uids the dashboards and the Docker Compose provisioning use.
  const compose = YAML.parse(
    readFileSync(path.join(root, 'deploy/grafana/provisioning/datasources/clickhouse.yaml'), 'utf8'),
  ) as {
    datasources: Array<{ uid: string }>
  }
  assert.deepEqual([...byUid.keys()].sort(), compose.datasources.map((d) => d.uid).sort())
  const providers = YAML.parse(provisioning['dashboards.yaml']!) as {
    apiVersion: number
    providers: Array<{ options: { path: string } }>
  }
  assert.equal(providers.apiVersion, 1)
  const grafana = find(all, 'Deployment', 'benchstream-grafana')
  const c = containerOf(grafana)
  const env = envOf(all, c)
  assert.equal(env.GF_PLUGINS_PREINSTALL_SYNC, 'grafana-clickhouse-datasource@4.20.0')
  for (const name of ['CLICKHOUSE_PASSWORD', 'API_TOKEN', 'GF_SECURITY_ADMIN_PASSWORD'])
    assert.match(env[name] ?? '', /^secret:/, name)
  const mounts = new Map((c.volumeMounts ?? []).map((m) => [m.mountPath, m]))
  assert.equal(mounts.get(providers.providers[0]!.options.path)?.name, 'dashboards')
  assert.equal(mounts.get('/etc/grafana/provisioning/datasources/benchstream.yaml')?.subPath, 'datasources.yaml')
})

test('without Strimzi and the Altinity operator: the server against a Kafka and a ClickHouse of one’s own', () => {
  const objects = renderings.get('server-only.yaml') ?? assert.fail('no server-only rendering')
  assert.ok(!objects.some((o) => /strimzi|altinity/.test(o.apiVersion)))
  const infra = readInfraConfig(envOf(objects, containerOf(find(objects, 'Deployment', 'benchstream-server'))))
  assert.equal(infra.clickhouse.cluster, undefined)
  assert.equal(infra.clickhouse.url, 'http://clickhouse.databases:8123')
  const ds = YAML.parse(
    (find(objects, 'ConfigMap', 'benchstream-grafana-provisioning').data as Record<string, string>)[
      'datasources.yaml'
    ]!,
  ) as { datasources: Array<{ uid: string; jsonData: { host: string; port: number } }> }
  assert.deepEqual(
    ds.datasources.find((d) => d.uid === 'benchstream-clickhouse')?.jsonData.host,
    'clickhouse.databases',
  )
})

test('Helm renders the chart as committed, and kubeconform agrees (when the tools are cached)', (t) => {
  const [helm, kubeconform, kubeVersion] = execFileSync('bash', [path.join(root, 'deploy/helm/check.sh'), 'paths'], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n') as [string, string, string]
  if (!existsSync(helm) || !existsSync(kubeconform)) {
    t.diagnostic(
      `helm or kubeconform not cached (${helm}, ${kubeconform}): npm run test:k8s builds them; the ` +
        'committed renderings were validated above',
    )
    return
  }
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'benchstream-helm-'))
  t.after(() => rmSync(tmp, { recursive: true, force: true }))
  const render = (values: string[]): string =>
    execFileSync(
      helm,
      ['template', 'benchstream', CHART, '--namespace', 'benchstream', '--kube-version', kubeVersion, ...values],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    )
  assert.equal(render([]), readFileSync(path.join(RENDERED, 'default.yaml'), 'utf8'), 'run npm run k8s:render')
  for (const f of readdirSync(path.join(CHART, 'ci'))) {
    const name = f.replace(/-values\.yaml$/, '.yaml')
    assert.equal(render(['-f', path.join(CHART, 'ci', f)]), readFileSync(path.join(RENDERED, name), 'utf8'), name)
  }
  writeSchemaFiles(path.join(tmp, 'schemas'), schemas)
  execFileSync(
    kubeconform,
    [
      '-strict',
      '-summary',
      '-schema-location',
      path.join(tmp, 'schemas', '{{ .ResourceKind }}{{ .KindSuffix }}.json'),
      ...[...renderings.keys()].map((f) => path.join(RENDERED, f)),
    ],
    { encoding: 'utf8' },
  )
})
