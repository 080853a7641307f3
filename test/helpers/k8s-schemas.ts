/**
 * JSON schemas of the Kubernetes objects the Helm chart renders (test/fixtures/k8s/README.md): the core kinds from
 * Kubernetes 1.36's OpenAPI definitions, the operators' kinds from their published CRDs (Strimzi 1.2.0, Altinity
 * clickhouse-operator 0.25.6), converted the way kubeconform's openapi2jsonschema converts them, strict:
 *
 *  - an object with `properties` and no `additionalProperties` refuses unknown fields (the API server would drop
 *    them or, with kubectl's default field validation, refuse the object), unless the schema preserves unknown
 *    fields (x-kubernetes-preserve-unknown-fields);
 *  - int-or-string is an integer or a string; a resource Quantity a string or a number; `nullable` admits null;
 *  - an operator's object's `metadata` is checked as Kubernetes' ObjectMeta.
 *
 * The same schemas serve ajv (the unit test) and kubeconform (deploy/helm/check.sh), written as one file per kind,
 * named as kubeconform looks them up: `{{ .ResourceKind }}{{ .KindSuffix }}.json`.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Ajv, type ErrorObject } from 'ajv'
import YAML from 'yaml'
import { repoRoot } from '../../services/common/repo-root.js'

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
type Schema = { [k: string]: Json }

const FIXTURES = path.join(repoRoot(), 'test/fixtures/k8s')
const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'

/** A rendered object: apiVersion, kind, metadata and the rest. */
export interface K8sObject {
  apiVersion: string
  kind: string
  metadata: { name: string; labels?: Record<string, string>; [k: string]: unknown }
  [k: string]: unknown
}

/** `apps/v1` + `Deployment` -> `deployment-apps-v1` (kubeconform's ResourceKind + KindSuffix). */
export function schemaFileName(apiVersion: string, kind: string): string {
  const [groupOrVersion, version] = apiVersion.split('/') as [string, string | undefined]
  const suffix = version === undefined ? `-${groupOrVersion}` : `-${groupOrVersion.split('.')[0]!}-${version}`
  return `${kind.toLowerCase()}${suffix.toLowerCase()}.json`
}

/** Every kind's schema, self-contained (its definitions inside), keyed by `apiVersion kind`. */
export function loadSchemas(): Map<string, Schema> {
  const core = JSON.parse(readFileSync(path.join(FIXTURES, 'kubernetes-1.36/definitions.json'), 'utf8')) as {
    kinds: string[]
    definitions: Record<string, Schema>
  }
  const definitions = Object.fromEntries(
    Object.entries(core.definitions).map(([name, d]) => [name, convertDefinition(name, d)]),
  ) as Record<string, Json>
  const out = new Map<string, Schema>()
  for (const name of core.kinds) {
    const gvk = (core.definitions[name]!['x-kubernetes-group-version-kind'] as Array<Record<string, string>>)[0]!
    const apiVersion = gvk.group === '' ? gvk.version! : `${gvk.group!}/${gvk.version!}`
    out.set(`${apiVersion} ${gvk.kind!}`, { $ref: `#/definitions/${name}`, definitions })
  }
  for (const file of readdirSync(path.join(FIXTURES, 'crds')).sort()) {
    const crd = YAML.parse(readFileSync(path.join(FIXTURES, 'crds', file), 'utf8')) as {
      spec: {
        group: string
        names: { kind: string }
        versions: Array<{ name: string; served: boolean; schema: { openAPIV3Schema: Schema } }>
      }
    }
    for (const v of crd.spec.versions.filter((x) => x.served)) {
      const apiVersion = `${crd.spec.group}/${v.name}`
      const schema = strict(v.schema.openAPIV3Schema)
      const props = schema.properties as Record<string, Json>
      props.apiVersion = { type: 'string', enum: [apiVersion] }
      props.kind = { type: 'string', enum: [crd.spec.names.kind] }
      props.metadata = { $ref: `#/definitions/${OBJECT_META}` }
      out.set(`${apiVersion} ${crd.spec.names.kind}`, {
        ...schema,
        required: ['apiVersion', 'kind', 'metadata', ...((schema.required as string[] | undefined) ?? [])],
        definitions,
      })
    }
  }
  return out
}

/** Writes one schema file per kind into `dir`, for kubeconform's `-schema-location dir/{{ .ResourceKind }}...`. */
export function writeSchemaFiles(dir: string, schemas = loadSchemas()): void {
  mkdirSync(dir, { recursive: true })
  for (const [key, schema] of schemas) {
    const [apiVersion, kind] = key.split(' ') as [string, string]
    writeFileSync(path.join(dir, schemaFileName(apiVersion, kind)), JSON.stringify(schema))
  }
}

/**
 * Validates objects against their kind's schema; an object of a kind without one is an error too. The definitions
 * every kind shares are compiled once, and a kind's schema when an object of it comes first.
 */
export function objectValidator(schemas = loadSchemas()): (o: K8sObject) => string[] {
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, unicodeRegExp: false })
  const first = schemas.values().next().value
  ajv.addSchema({ $id: SHARED, definitions: first?.definitions ?? {} })
  const compiled = new Map<string, ReturnType<Ajv['compile']>>()
  return (o) => {
    const key = `${o.apiVersion} ${o.kind}`
    const schema = schemas.get(key)
    if (schema === undefined) return [`no schema for ${key}`]
    let validate = compiled.get(key)
    if (validate === undefined) {
      const { definitions: _, ...own } = schema
      validate = ajv.compile(JSON.parse(JSON.stringify(own).replaceAll('"#/definitions/', `"${SHARED}#/definitions/`)))
      compiled.set(key, validate)
    }
    if (validate(o)) return []
    return (validate.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message ?? ''} ${detail(e)}`)
  }
}

/** The $id under which ajv holds the definitions every kind shares. */
const SHARED = 'k8s-definitions.json'

function detail(e: ErrorObject): string {
  const p = e.params as { additionalProperty?: string; allowedValues?: unknown[] }
  if (p.additionalProperty !== undefined) return `(${p.additionalProperty})`
  if (p.allowedValues !== undefined) return `(${JSON.stringify(p.allowedValues)})`
  return ''
}

function convertDefinition(name: string, d: Schema): Schema {
  if (name === 'io.k8s.apimachinery.pkg.util.intstr.IntOrString')
    return { anyOf: [{ type: 'string' }, { type: 'integer' }] }
  if (name === 'io.k8s.apimachinery.pkg.api.resource.Quantity')
    return { anyOf: [{ type: 'string' }, { type: 'number' }] }
  return strict(d)
}

/** The conversion of a schema node and the schemas under it (see the file comment). */
function strict(node: Schema): Schema {
  const out: Schema = {}
  for (const [k, v] of Object.entries(node)) {
    if (k === 'description') continue
    if (MAPS_OF_SCHEMAS.has(k) && isObject(v))
      out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, isObject(s) ? strict(s) : s]))
    else if (LISTS_OF_SCHEMAS.has(k) && Array.isArray(v)) out[k] = v.map((s) => (isObject(s) ? strict(s) : s))
    else if (SCHEMAS.has(k) && isObject(v)) out[k] = strict(v)
    // Anything else (enum, default, example, x-kubernetes-*) is data, kept as it is.
    else out[k] = v
  }
  if (out['x-kubernetes-int-or-string'] === true) {
    delete out.type
    out.anyOf = [{ type: 'integer' }, { type: 'string' }]
  }
  if (out.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null']
  if (
    out.properties !== undefined &&
    out.additionalProperties === undefined &&
    out['x-kubernetes-preserve-unknown-fields'] !== true
  )
    out.additionalProperties = false
  return out
}

const MAPS_OF_SCHEMAS = new Set(['properties', 'patternProperties', 'definitions'])
const LISTS_OF_SCHEMAS = new Set(['allOf', 'anyOf', 'oneOf'])
const SCHEMAS = new Set(['items', 'additionalProperties', 'not'])

function isObject(v: Json | undefined): v is { [k: string]: Json } {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}
