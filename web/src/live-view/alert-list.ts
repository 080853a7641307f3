/** The run's alerts above the charts, newest first: state, rule, operation, severity, when, why. */
import { byId } from '../common/dom.js'
import { fmtInt, fmtTime } from '../common/format.js'
import type { LiveState } from './stream-state.js'

export function renderAlerts(live: LiveState): void {
  const list = live.main.alerts
  const firing = list.filter((a) => a.state === 'firing').length
  const box = byId('alerts')
  box.dataset.count = String(list.length)
  box.dataset.firing = String(firing)
  byId('alerts-count').textContent = list.length
    ? '(' + firing + ' firing, ' + (list.length - firing) + ' resolved)'
    : ''
  byId('alerts-none').hidden = list.length > 0
  byId('alerts-list').replaceChildren(
    ...list.map((a) => {
      const li = document.createElement('li')
      li.dataset.fingerprint = a.fingerprint
      li.dataset.state = a.state
      li.dataset.rule = a.rule
      li.dataset.op = a.op
      li.dataset.startsAt = a.startsAt
      li.dataset.endsAt = a.endsAt || ''
      li.dataset.silenced = String(!!a.silencedBy)
      const part = (cls: string, text: string): void => {
        const span = document.createElement('span')
        span.className = cls
        span.textContent = text
        li.append(span)
      }
      const start = Date.parse(a.startsAt)
      part('state', a.state)
      part('rule', a.rule + (a.op === 'ALL' ? '' : ' (' + a.op + ')'))
      part('sev', a.severity)
      part(
        'when',
        a.endsAt
          ? fmtTime(start) +
              ' – ' +
              fmtTime(Date.parse(a.endsAt)) +
              ' (' +
              fmtInt((Date.parse(a.endsAt) - start) / 1000) +
              ' s)'
          : 'since ' + fmtTime(start),
      )
      part('summary', a.summary)
      if (a.silencedBy) part('silenced', 'silenced (webhook held back) by ' + a.silencedBy)
      return li
    }),
  )
}
