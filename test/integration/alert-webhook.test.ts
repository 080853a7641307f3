/**
 * The Alertmanager-format webhook against a real HTTP server on 127.0.0.1:
 * bounded retries on 5xx, no retry on 4xx, a timeout per attempt.
 */
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { WebhookNotifier } from '../../services/adapters/http/alert-webhook.js'
import type { AlertTransition } from '../../services/core/alerting/alert-window.js'
import type { AlertmanagerPayload } from '../../services/core/alerting/notices.js'

const t: AlertTransition = {
  state: 'firing',
  rule: 'Drop',
  ruleType: 'drop_vs_baseline',
  severity: 'warning',
  runId: 'run-x',
  op: 'READ',
  fingerprint: '0123456789abcdef',
  startsAtMs: Date.UTC(2026, 0, 1),
  endsAtMs: undefined,
  atWindowMs: Date.UTC(2026, 0, 1, 0, 0, 3),
  value: 500,
  threshold: 700,
  summary: 'READ dropped',
  description: 'details',
}

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString('utf8')))
    req.on('end', () => handler(req, res, body))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` }
}

const opts = {
  timeoutMs: 2000,
  attempts: 3,
  backoffMs: 20,
  receiver: 'benchstream',
  externalUrl: 'http://127.0.0.1:8080',
}

test('5xx is retried within the bound, then the payload arrives in Alertmanager format', async (t2) => {
  const bodies: AlertmanagerPayload[] = []
  let calls = 0
  const { server, url } = await serve((req, res, body) => {
    calls++
    assert.equal(req.headers['content-type'], 'application/json')
    if (calls < 3) return void res.writeHead(503).end('busy')
    bodies.push(JSON.parse(body) as AlertmanagerPayload)
    res.writeHead(200).end()
  })
  t2.after(() => server.close())
  const n = new WebhookNotifier({ url, ...opts })
  assert.deepEqual(await n.notify(t), { ok: true })
  assert.equal(calls, 3)
  assert.equal(n.retries, 2)
  const p = bodies[0]!
  assert.equal(p.version, '4')
  assert.equal(p.status, 'firing')
  assert.deepEqual(p.alerts[0]!.labels, { alertname: 'Drop', run_id: 'run-x', op: 'READ', severity: 'warning' })
  assert.equal(p.alerts[0]!.startsAt, '2026-01-01T00:00:00.000Z')
  assert.equal(p.alerts[0]!.endsAt, '0001-01-01T00:00:00Z')

  // Still failing after every attempt: a failure value naming the status.
  calls = -100
  const r = await new WebhookNotifier({ url, ...opts, attempts: 2 }).notify(t)
  assert.deepEqual(r, { ok: false, error: `POST ${url}: HTTP 503 busy` })
})

test('4xx is final; a server that does not answer times out per attempt; a closed port fails', async (t2) => {
  let calls = 0
  const { server, url } = await serve((_req, res) => {
    calls++
    res.writeHead(400).end('bad payload')
  })
  t2.after(() => server.close())
  assert.deepEqual(await new WebhookNotifier({ url, ...opts }).notify(t), {
    ok: false,
    error: `POST ${url}: HTTP 400 bad payload`,
  })
  assert.equal(calls, 1, 'no retry on a client error')

  const silent = await serve(() => undefined)
  t2.after(() => {
    silent.server.closeAllConnections()
    silent.server.close()
  })
  const r = await new WebhookNotifier({ url: silent.url, ...opts, timeoutMs: 200, attempts: 2 }).notify(t)
  assert.deepEqual(r, { ok: false, error: `POST ${silent.url}: no answer within 200 ms` })

  const closed = await serve(() => undefined)
  await new Promise((r2) => closed.server.close(r2))
  const c = await new WebhookNotifier({ url: closed.url, ...opts, attempts: 2 }).notify(t)
  assert.equal(c.ok, false)
  assert.match(c.ok ? '' : c.error, /ECONNREFUSED/)
})
