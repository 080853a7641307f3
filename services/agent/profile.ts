/**
 * A CPU profile during a run (`benchstream profile capture`, async-profiler) of a process the agent allows by
 * name: its pid read from the pid file the agent was started with, never taken from the topic.
 */
import type { Assign } from '../../schemas/experiment-control.v1.js'
import { TAIL_LINES, type Job, type JobHost } from './job.js'

/** A profile of the target the agent names, by the pid in its pid file, for the run; ended or failed. */
export async function runProfile(host: JobHost, job: Job, p: NonNullable<Assign['profile']>): Promise<void> {
  const a = job.assign
  let pid: string
  try {
    pid = host.deps.readFile(host.cfg.profileTargets[p.target]!).trim()
    if (!/^\d{1,10}$/.test(pid)) throw new Error(`the pid file holds ${JSON.stringify(pid.slice(0, 40))}`)
  } catch (err) {
    host.jobs.delete(a.assignment)
    await host.status(a, 'failed', { detail: `profile target ${p.target}: ${(err as Error).message}` })
    return
  }
  const child = host.deps.launcher.launch({
    command: host.deps.benchstream.command,
    args: [
      ...host.deps.benchstream.args,
      'profile',
      'capture',
      '--pid',
      pid,
      '--run-id',
      p.runId,
      '--seconds',
      String(p.seconds),
      '--event',
      p.event,
      '--label',
      `target=${p.target}`,
    ],
    env: { ...host.deps.env },
  })
  job.child = child
  child.onLine((_s, line) => {
    job.tail.push(line)
    if (job.tail.length > TAIL_LINES) job.tail.shift()
  })
  const exit = await child.exited
  host.jobs.delete(a.assignment)
  await host.status(a, exit.code === 0 ? 'ended' : 'failed', {
    exitCode: exit.code,
    output: job.tail.join('\n'),
    ...(exit.code === 0 ? {} : { detail: `profile capture exited with code ${exit.code}` }),
  })
}
