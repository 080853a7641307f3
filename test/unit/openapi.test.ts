/**
 * The API's OpenAPI document: built by @fastify/swagger from the routes' own
 * schemas, served at /api/v1/openapi.json under the same access rules as
 * every other route, and committed as docs/reference/openapi.json, which must
 * not drift from what the API serves.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { build, OPENAPI_PATH } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import { GENERATED, openApiDocument } from '../../services/cli/generate.js'
import { repoRoot } from '../../services/common/repo-root.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import type { ReadModel } from '../../services/core/ports/read-model.js'

const TOKEN = 'a-token-of-16-characters'

function app(env: Record<string, string> = {}) {
  return build(readApiConfig({ API_PORT: '0', ...env }), {
    readModel: {} as ReadModel,
    adHoc: {} as AdHocQueries,
    database: 'benchstream',
  })
}

test('docs/reference/openapi.json is the document the API serves (npm run generate)', async () => {
  const committed = readFileSync(path.join(repoRoot(), GENERATED.openapi), 'utf8')
  assert.equal(
    await openApiDocument(),
    committed,
    `${GENERATED.openapi} differs from GET ${OPENAPI_PATH}: run \`npm run generate\` and commit it`,
  )
})

test('every route is listed, with the schemas it validates against, and those without one too', async () => {
  const doc = JSON.parse(await openApiDocument()) as {
    openapi: string
    paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; requestBody?: unknown }>>
  }
  assert.match(doc.openapi, /^3\./)
  const params = (p: string, m: string): string[] =>
    (doc.paths[p]?.[m]?.parameters ?? []).map((x) => `${x.in}:${x.name}`).sort()
  assert.deepEqual(params('/api/v1/runs', 'get'), ['query:group', 'query:label', 'query:limit'])
  assert.deepEqual(params('/api/v1/runs/{runId}/report', 'get'), ['path:runId', 'query:format'])
  assert.ok(doc.paths['/api/v1/query']?.post?.requestBody !== undefined, 'POST /api/v1/query has its body schema')
  // Routes without a schema are listed all the same.
  for (const [p, m] of [
    ['/healthz', 'get'],
    ['/api/v1/dead-letters', 'get'],
    ['/metrics', 'get'],
    ['/clickhouse/', 'post'],
    ['/api/v1/profiles', 'post'],
    ['/', 'get'],
    [OPENAPI_PATH, 'get'],
  ] as const)
    assert.ok(doc.paths[p]?.[m] !== undefined, `${m.toUpperCase()} ${p} is in the document`)
})

test('the document obeys the access rules of every route: bearer token, Host check', async () => {
  const open = app()
  assert.equal(
    (await open.inject({ method: 'GET', url: OPENAPI_PATH, headers: { host: '127.0.0.1:8080' } })).statusCode,
    200,
  )
  const rebinding = await open.inject({ method: 'GET', url: OPENAPI_PATH, headers: { host: 'evil.example' } })
  assert.equal(rebinding.statusCode, 403)
  assert.equal(rebinding.json<{ code: string }>().code, 'BS_ERR_FORBIDDEN')

  const guarded = app({ API_HOST: '0.0.0.0', API_TOKEN: TOKEN })
  const none = await guarded.inject({ method: 'GET', url: OPENAPI_PATH })
  assert.equal(none.statusCode, 401)
  assert.equal(none.json<{ code: string }>().code, 'BS_ERR_UNAUTHORIZED')
  const ok = await guarded.inject({ method: 'GET', url: OPENAPI_PATH, headers: { authorization: `Bearer ${TOKEN}` } })
  assert.equal(ok.statusCode, 200)
  assert.ok(ok.json<{ paths: Record<string, unknown> }>().paths['/api/v1/runs'] !== undefined)
  await Promise.all([open.close(), guarded.close()])
})
