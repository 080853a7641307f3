/**
 * What a transition looks like on the wire: the JSON notice on the alerts
 * topic (schemas/alert-rules.v1.ts AlertNotice) and Alertmanager's webhook
 * payload (version 4), so any receiver written for Alertmanager's webhooks
 * can take Benchstream's alerts unchanged.
 */
import type { AlertNotice } from '../../../schemas/alert-rules.v1.js'
import type { AlertTransition } from './alert-window.js'

/** Alertmanager's endsAt for an alert that has not ended. */
export const ZERO_TIME = '0001-01-01T00:00:00Z'

export function alertNotice(t: AlertTransition): AlertNotice {
  return {
    v: 1,
    state: t.state,
    rule: t.rule,
    ruleType: t.ruleType,
    severity: t.severity,
    runId: t.runId,
    op: t.op,
    startsAt: new Date(t.startsAtMs).toISOString(),
    endsAt: t.endsAtMs === undefined ? null : new Date(t.endsAtMs).toISOString(),
    atWindow: new Date(t.atWindowMs).toISOString(),
    value: t.value,
    threshold: t.threshold,
    summary: t.summary,
    description: t.description,
    fingerprint: t.fingerprint,
    silencedBy: t.silencedBy ?? null,
  }
}

export interface AlertmanagerAlert {
  status: 'firing' | 'resolved'
  labels: { alertname: string; run_id: string; op: string; severity: string }
  annotations: { summary: string; description: string }
  startsAt: string
  endsAt: string
  generatorURL: string
  fingerprint: string
}

export interface AlertmanagerPayload {
  version: '4'
  groupKey: string
  truncatedAlerts: number
  status: 'firing' | 'resolved'
  receiver: string
  groupLabels: Record<string, string>
  commonLabels: Record<string, string>
  commonAnnotations: Record<string, string>
  externalURL: string
  alerts: AlertmanagerAlert[]
}

/** One transition as one Alertmanager webhook message (a group of one alert, grouped by alertname, run_id, op). */
export function alertmanagerPayload(
  t: AlertTransition,
  o: { receiver: string; externalUrl: string },
): AlertmanagerPayload {
  const labels = { alertname: t.rule, run_id: t.runId, op: t.op, severity: t.severity }
  const annotations = { summary: t.summary, description: t.description }
  const groupLabels = { alertname: t.rule, op: t.op, run_id: t.runId }
  return {
    version: '4',
    groupKey: `{}:{${Object.entries(groupLabels)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(', ')}}`,
    truncatedAlerts: 0,
    status: t.state,
    receiver: o.receiver,
    groupLabels,
    commonLabels: labels,
    commonAnnotations: annotations,
    externalURL: o.externalUrl,
    alerts: [
      {
        status: t.state,
        labels,
        annotations,
        startsAt: new Date(t.startsAtMs).toISOString(),
        endsAt: t.endsAtMs === undefined ? ZERO_TIME : new Date(t.endsAtMs).toISOString(),
        generatorURL: `${o.externalUrl}/?run=${encodeURIComponent(t.runId)}`,
        fingerprint: t.fingerprint,
      },
    ],
  }
}
