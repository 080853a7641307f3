/**
 * A setup's lifecycle step on this machine: a command the agent allows by name (never a command string from the
 * topic), with the environment the plan may set, killed after its timeout; then its readiness check (a TCP port,
 * an HTTP URL, an allowed command) until it passes or its time is up.
 */
import type { Step } from '../../schemas/experiment-plan.v1.js'
import { TAIL_LINES, type Job, type JobHost } from './job.js'

/** Default seconds a step's command may take, and its readiness check. */
const STEP_TIMEOUT_S = 600
const READY_TIMEOUT_S = 120
const READY_POLL_MS = 500

/** Runs a step's command (killed after its timeout), then its readiness check; ended or failed, with the output. */
export async function runStep(host: JobHost, job: Job, s: Step): Promise<void> {
  const a = job.assign
  const path = host.cfg.commands[s.command]!
  const child = host.deps.launcher.launch({
    command: path,
    args: s.args ?? [],
    env: { ...host.deps.env, ...s.env },
  })
  job.child = child
  child.onLine((_stream, line) => {
    job.tail.push(line)
    if (job.tail.length > TAIL_LINES) job.tail.shift()
  })
  const timeoutS = s.timeoutS ?? STEP_TIMEOUT_S
  const timer = setTimeout(() => {
    job.tail.push(`benchstream agent: ${s.command} took longer than ${timeoutS} s: killed`)
    child.kill('SIGKILL')
  }, timeoutS * 1000)
  const exit = await child.exited
  clearTimeout(timer)
  let failure: string | undefined =
    exit.code === 0
      ? undefined
      : `${s.command} exited with ${exit.code === null ? `signal ${exit.signal}` : `code ${exit.code}`}`
  if (failure === undefined && s.ready !== undefined) failure = await waitReady(host, s, job)
  host.jobs.delete(a.assignment)
  await host.status(a, failure === undefined ? 'ended' : 'failed', {
    exitCode: exit.code,
    output: job.tail.join('\n'),
    ...(failure === undefined ? {} : { detail: failure }),
  })
}

/** undefined once ready; why not, after the readiness check's time is up. */
async function waitReady(host: JobHost, s: Step, job: Job): Promise<string | undefined> {
  const r = s.ready!
  const deadline = host.deps.now() + (r.timeoutS ?? READY_TIMEOUT_S) * 1000
  for (;;) {
    let ok = true
    if (r.tcp !== undefined) ok &&= await host.deps.probes.tcp(r.tcp, 2000)
    if (ok && r.http !== undefined) ok &&= await host.deps.probes.http(r.http, 2000)
    if (ok && r.command !== undefined) {
      const c = host.deps.launcher.launch({
        command: host.cfg.commands[r.command]!,
        args: [],
        env: { ...host.deps.env },
      })
      c.onLine((_s, line) => {
        job.tail.push(line)
        if (job.tail.length > TAIL_LINES) job.tail.shift()
      })
      ok = (await c.exited).code === 0
    }
    if (ok) return undefined
    if (host.deps.now() >= deadline || host.stopped()) {
      const what = [r.tcp && `tcp ${r.tcp}`, r.http && `http ${r.http}`, r.command && `command ${r.command}`]
      return `not ready after ${r.timeoutS ?? READY_TIMEOUT_S} s (${what.filter(Boolean).join(', ')})`
    }
    await new Promise((res) => setTimeout(res, READY_POLL_MS))
  }
}
