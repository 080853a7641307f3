/**
 * The API's HTTP edge, without infrastructure (the ports are small fakes):
 * one error shape for everything, bodies validated without coercion,
 * out-of-range parameters refused, the bearer token, the Host check against
 * DNS rebinding, no CORS, and a clear refusal to start open to the network
 * without a token.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import { test } from 'node:test'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import { BenchstreamError, isBenchstreamError } from '../../services/core/errors.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import { fakeStream } from '../helpers/ad-hoc-fake.js'
import type { ReadModel } from '../../services/core/ports/read-model.js'

const readModel = {
  listRuns: async (limit: number) => Array.from({ length: Math.min(limit, 2) }, (_, i) => ({ run_id: `r${i}` })),
  runReport: async (runId: string) => {
    throw new BenchstreamError('BS_ERR_NOT_FOUND', `run ${runId} has no data`)
  },
  reportedRuns: async () => [],
  timeline: async () => [],
} as unknown as ReadModel
const adHoc: AdHocQueries = {
  stream: async (sql) => fakeStream({ format: 'JSONEachRow', pieces: [`${JSON.stringify({ sql })}\n`], rows: 1 }),
  close: async () => undefined,
}

function app(env: Record<string, string> = {}) {
  return build(readApiConfig({ API_PORT: '0', ...env }), { readModel, adHoc, database: 'benchstream' })
}

const shape = (body: string): { statusCode: number; code: string; message: string } => {
  const b = JSON.parse(body) as { statusCode: number; code: string; message: string; error: string }
  assert.equal(typeof b.statusCode, 'number')
  assert.match(b.code, /^BS_ERR_[A-Z_]+$/)
  assert.equal(typeof b.message, 'string')
  return b
}

test("every error has { statusCode, code: BS_ERR_*, message }, fastify's own included", async () => {
  const a = app()
  const notFound = await a.inject({ method: 'GET', url: '/nope' })
  assert.equal(notFound.statusCode, 404)
  assert.equal(shape(notFound.body).code, 'BS_ERR_NOT_FOUND')
  const run = await a.inject({ method: 'GET', url: '/api/v1/runs/no-such/report' })
  assert.equal(shape(run.body).code, 'BS_ERR_NOT_FOUND')
  const media = await a.inject({
    method: 'POST',
    url: '/api/v1/query',
    headers: { 'content-type': 'application/xml' },
    payload: '<sql/>',
  })
  assert.equal(media.statusCode, 415)
  assert.equal(shape(media.body).code, 'BS_ERR_BAD_REQUEST')
  const text = await a.inject({
    method: 'POST',
    url: '/api/v1/query',
    headers: { 'content-type': 'text/plain' },
    payload: 'SELECT 1',
  })
  assert.equal(text.statusCode, 400)
  assert.match(shape(text.body).message, /invalid body: .*got "SELECT 1"; allowed: a value of type object/)
  const large = await a.inject({ method: 'POST', url: '/api/v1/query', payload: { sql: 'x'.repeat(2 * 1024 * 1024) } })
  assert.equal(large.statusCode, 413)
  assert.equal(shape(large.body).code, 'BS_ERR_TOO_LARGE')
  const badJson = await a.inject({
    method: 'POST',
    url: '/api/v1/query',
    headers: { 'content-type': 'application/json' },
    payload: '{"sql":',
  })
  assert.equal(badJson.statusCode, 400)
  assert.equal(shape(badJson.body).code, 'BS_ERR_BAD_REQUEST')
})

test('bodies are not coerced; parameters out of range are 400s that name the field', async () => {
  const a = app()
  const arr = await a.inject({ method: 'POST', url: '/api/v1/query', payload: { sql: ['SELECT 1'] } })
  assert.equal(arr.statusCode, 400)
  assert.match(shape(arr.body).message, /sql: got \["SELECT 1"\]; allowed: one SELECT/)
  const num = await a.inject({ method: 'POST', url: '/api/v1/query', payload: { sql: 5 } })
  assert.equal(num.statusCode, 400)
  const extra = await a.inject({ method: 'POST', url: '/api/v1/query', payload: { sql: 'SELECT 1', drop: true } })
  assert.match(shape(extra.body).message, /drop: is not a field/)
  const ok = await a.inject({ method: 'POST', url: '/api/v1/query', payload: { sql: 'SELECT 1' } })
  assert.equal(ok.statusCode, 200)
  const since = await a.inject({ method: 'GET', url: '/api/v1/runs/r1/timeline?since=1e300' })
  assert.equal(since.statusCode, 400)
  assert.match(shape(since.body).message, /since: got 1e\+300; allowed: only windows starting at or after this time/)
  const limit = await a.inject({ method: 'GET', url: '/api/v1/runs?limit=abc' })
  assert.equal(limit.statusCode, 400)
  assert.match(shape(limit.body).message, /limit/)
  assert.equal(
    (await a.inject({ method: 'GET', url: '/api/v1/runs?limit=1' })).json<{ runs: unknown[] }>().runs.length,
    1,
  )
  assert.equal(
    (await a.inject({ method: 'GET', url: '/api/v1/runs' })).json<{ runs: unknown[] }>().runs.length,
    2,
    'the default limit applies',
  )
  const runId = await a.inject({ method: 'GET', url: '/api/v1/runs/a%20b/report' })
  assert.equal(runId.statusCode, 400)
})

test('on loopback the Host header must name this machine (DNS rebinding); no CORS', async () => {
  const a = app()
  const evil = await a.inject({ method: 'GET', url: '/api/v1/runs', headers: { host: 'attacker.example:8080' } })
  assert.equal(evil.statusCode, 403)
  assert.equal(shape(evil.body).code, 'BS_ERR_FORBIDDEN')
  for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080', 'LOCALHOST']) {
    assert.equal((await a.inject({ method: 'GET', url: '/api/v1/runs', headers: { host } })).statusCode, 200, host)
  }
  const extra = app({ API_ALLOWED_HOSTS: 'bench.lab.internal' })
  assert.equal(
    (await extra.inject({ method: 'GET', url: '/api/v1/runs', headers: { host: 'bench.lab.internal:8080' } }))
      .statusCode,
    200,
  )
  const r = await a.inject({ method: 'GET', url: '/api/v1/runs', headers: { origin: 'http://attacker.example' } })
  assert.equal(r.headers['access-control-allow-origin'], undefined)
  const pre = await a.inject({
    method: 'OPTIONS',
    url: '/api/v1/query',
    headers: { origin: 'http://attacker.example', 'access-control-request-method': 'POST' },
  })
  assert.equal(pre.statusCode, 404)
  assert.equal(pre.headers['access-control-allow-origin'], undefined)
})

test('with API_TOKEN every endpoint but /healthz needs the bearer token; beyond loopback it is required', async () => {
  const token = 'correct-horse-battery-staple'
  const a = app({ API_TOKEN: token })
  const none = await a.inject({ method: 'GET', url: '/api/v1/runs' })
  assert.equal(none.statusCode, 401)
  assert.equal(shape(none.body).code, 'BS_ERR_UNAUTHORIZED')
  assert.equal(none.headers['www-authenticate'], 'Bearer')
  assert.equal(
    (
      await a.inject({
        method: 'GET',
        url: '/api/v1/runs',
        headers: { authorization: 'Bearer wrong-token-of-some-length' },
      })
    ).statusCode,
    401,
  )
  assert.equal(
    (await a.inject({ method: 'GET', url: '/api/v1/runs', headers: { authorization: `Bearer ${token}` } })).statusCode,
    200,
  )
  assert.equal((await a.inject({ method: 'POST', url: '/api/v1/query', payload: { sql: 'SELECT 1' } })).statusCode, 401)
  assert.equal((await a.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
  assert.throws(
    () => readApiConfig({ API_HOST: '0.0.0.0' }),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_CONFIG') &&
      /API_HOST="0.0.0.0" opens the API beyond this machine: set API_TOKEN/.test(e.message),
  )
  const open = readApiConfig({ API_HOST: '0.0.0.0', API_TOKEN: token })
  assert.equal(open.allowedHosts, undefined, 'beyond loopback the token, not the Host, protects the API')
})

test('headers too large are answered 431 in the same JSON shape', async (t) => {
  const a = app()
  await a.listen({ host: '127.0.0.1', port: 0 })
  t.after(() => a.close())
  const port = (a.server.address() as net.AddressInfo).port
  const answer = await new Promise<string>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () =>
      s.write(`GET /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(32 * 1024)}\r\n\r\n`),
    )
    let got = ''
    s.on('data', (d: Buffer) => (got += d.toString()))
    s.on('end', () => resolve(got))
    s.on('error', reject)
  })
  assert.match(answer, /^HTTP\/1\.1 431 /)
  assert.equal(shape(answer.slice(answer.indexOf('\r\n\r\n') + 4)).statusCode, 431)
})
