/**
 * Posts alert transitions to a webhook in Alertmanager's webhook format
 * (services/core/alerting/notices.ts), with a timeout per attempt and a bounded
 * number of attempts. Network errors, timeouts, 408, 429 and 5xx are worth
 * another attempt; any other status is a final failure. Failures are
 * returned as values and counted by the engine.
 */
import type { AlertNotifier, DeliveryResult } from '../../core/ports/alerts.js'
import { alertmanagerPayload } from '../../core/alerting/notices.js'
import type { AlertTransition } from '../../core/alerting/alert-window.js'

export interface WebhookOptions {
  url: string
  timeoutMs: number
  /** Attempts per notification, the first included. */
  attempts: number
  /** Wait before the second attempt; doubled after each. */
  backoffMs: number
  receiver: string
  externalUrl: string
}

type Attempt = { result: 'success' } | { result: 'failure' | 'retryable'; error: string }

export class WebhookNotifier implements AlertNotifier {
  readonly channel = 'webhook'
  /** The webhook reaches people: a silenced incident is not posted (Alertmanager's model). */
  readonly mutedBySilences = true
  /** Attempts beyond the first, over the notifier's life (for metrics). */
  retries = 0

  constructor(private readonly o: WebhookOptions) {}

  async notify(t: AlertTransition): Promise<DeliveryResult> {
    const body = JSON.stringify(alertmanagerPayload(t, { receiver: this.o.receiver, externalUrl: this.o.externalUrl }))
    let wait = this.o.backoffMs
    let last = ''
    for (let i = 0; i < this.o.attempts; i++) {
      if (i > 0) {
        this.retries++
        await new Promise((r) => setTimeout(r, wait))
        wait *= 2
      }
      const a = await this.post(body)
      if (a.result === 'success') return { ok: true }
      last = a.error
      if (a.result === 'failure') break
    }
    return { ok: false, error: `POST ${this.o.url}: ${last}` }
  }

  private async post(body: string): Promise<Attempt> {
    try {
      const res = await fetch(this.o.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      })
      // Read the body so the connection is released (and a reason can be shown).
      const text = (await res.text().catch(() => '')).slice(0, 200)
      if (res.ok) return { result: 'success' }
      const error = `HTTP ${res.status}${text === '' ? '' : ` ${text}`}`
      return { result: res.status === 408 || res.status === 429 || res.status >= 500 ? 'retryable' : 'failure', error }
    } catch (err) {
      const e = err as Error
      return {
        result: 'retryable',
        error:
          e.name === 'TimeoutError'
            ? `no answer within ${this.o.timeoutMs} ms`
            : `${e.message}${e.cause instanceof Error ? ` (${e.cause.message})` : ''}`,
      }
    }
  }
}
