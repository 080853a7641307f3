/**
 * The Alertmanager-style webhook receiver of the alert tests: a server on a free loopback port that answers 200 to
 * everything and keeps every POSTed payload, with when it arrived; closed when the test ends.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import type { AlertmanagerPayload } from '../../services/core/alerting/notices.js'

export interface WebhookReceiver {
  /** http://127.0.0.1:port plus the path asked for. */
  url: string
  /** Every payload POSTed, in arrival order. */
  payloads: AlertmanagerPayload[]
  /** The same payloads with their arrival time (Date.now()). */
  received: Array<{ at: number; payload: AlertmanagerPayload }>
}

export async function startWebhookReceiver(t: TestContext, urlPath: string): Promise<WebhookReceiver> {
  const payloads: AlertmanagerPayload[] = []
  const received: WebhookReceiver['received'] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString('utf8')))
    req.on('end', () => {
      if (req.method === 'POST') {
        const payload = JSON.parse(body) as AlertmanagerPayload
        payloads.push(payload)
        received.push({ at: Date.now(), payload })
      }
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => server.close())
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${urlPath}`, payloads, received }
}
