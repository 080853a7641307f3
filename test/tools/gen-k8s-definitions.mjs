#!/usr/bin/env node
// Writes test/fixtures/k8s/kubernetes-1.36/definitions.json: the definitions of Kubernetes' own OpenAPI (v2)
// document that the chart's core objects need (the kinds below and everything they reference), without their
// descriptions, as the source has them otherwise. The source is Kubernetes' release-1.36 document as
// kubernetes-client/python v36.0.3 keeps it (kubernetes/swagger.json.unprocessed; test/fixtures/k8s/README.md):
//   git -C <clone of kubernetes-client/python> show v36.0.3:kubernetes/swagger.json.unprocessed > /tmp/swagger.json
//   node test/tools/gen-k8s-definitions.mjs /tmp/swagger.json
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const source = process.argv[2]
if (source === undefined) {
  console.error('usage: node test/tools/gen-k8s-definitions.mjs <swagger.json of Kubernetes 1.36>')
  process.exit(2)
}
// Kinds a chart may use; everything they reference comes along.
const KINDS = [
  'io.k8s.api.core.v1.ConfigMap',
  'io.k8s.api.core.v1.Secret',
  'io.k8s.api.core.v1.Service',
  'io.k8s.api.core.v1.ServiceAccount',
  'io.k8s.api.core.v1.PersistentVolumeClaim',
  'io.k8s.api.apps.v1.Deployment',
  'io.k8s.api.apps.v1.StatefulSet',
  'io.k8s.api.batch.v1.Job',
  'io.k8s.api.policy.v1.PodDisruptionBudget',
]
const text = readFileSync(source, 'utf8')
const swagger = JSON.parse(text)
const all = swagger.definitions
const keep = new Map()
const visit = (name) => {
  if (keep.has(name)) return
  const def = all[name]
  if (def === undefined) throw new Error(`${source} has no definition ${name}`)
  keep.set(name, def)
  JSON.stringify(def, (k, v) => {
    if (k === '$ref' && typeof v === 'string') visit(v.replace('#/definitions/', ''))
    return v
  })
}
KINDS.forEach(visit)
const strip = (v) => {
  if (Array.isArray(v)) return v.map(strip)
  if (v === null || typeof v !== 'object') return v
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => k !== 'description')
      .map(([k, x]) => [k, strip(x)]),
  )
}
const definitions = Object.fromEntries(
  [...keep.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((k) => [k, strip(keep.get(k))]),
)
const out = path.join(root, 'test/fixtures/k8s/kubernetes-1.36/definitions.json')
mkdirSync(path.dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify({ kinds: KINDS, definitions }, null, 1)}\n`)
const sha = createHash('sha256').update(text).digest('hex')
console.log(`${out}: ${keep.size} definitions of ${Object.keys(all).length}; source sha256 ${sha}`)
