/**
 * ProcessLauncher and ReadinessProbes over node:child_process, node:net and
 * fetch. A child gets its stdin as a pipe that only this process holds: when
 * the agent dies (even by SIGKILL) the pipe closes, and a driver started with
 * --barrier stdin ends itself (services/driver/main.ts): a client never
 * outlives the agent that was to report on it.
 */
import { spawn } from 'node:child_process'
import net from 'node:net'
import type { Exit, Launched, LaunchSpec, ProcessLauncher, ReadinessProbes } from '../../core/ports/process-launcher.js'

/** Longest line kept whole; longer ones are cut (a line is for a person or a status word). */
const MAX_LINE = 16 * 1024

export class ChildProcessLauncher implements ProcessLauncher {
  launch(spec: LaunchSpec): Launched {
    const child = spawn(spec.command, [...spec.args], {
      env: { ...spec.env },
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    const listeners: Array<(stream: 'stdout' | 'stderr', line: string) => void> = []
    for (const stream of ['stdout', 'stderr'] as const) {
      let buffered = ''
      child[stream].on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8')
        for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
          const line = buffered.slice(0, nl).slice(0, MAX_LINE)
          buffered = buffered.slice(nl + 1)
          for (const fn of listeners) fn(stream, line)
        }
        if (buffered.length > MAX_LINE) buffered = buffered.slice(-MAX_LINE)
      })
    }
    // A child that exits before reading its stdin must not take the agent down with EPIPE.
    child.stdin.on('error', () => undefined)
    const exited = new Promise<Exit>((resolve) => {
      child.on('error', () => resolve({ code: 127, signal: null }))
      child.on('close', (code, signal) => resolve({ code, signal }))
    })
    let done = false
    void exited.then(() => (done = true))
    return {
      pid: child.pid ?? 0,
      onLine: (fn) => void listeners.push(fn),
      write: (text) => {
        if (!done && child.stdin.writable) child.stdin.write(text)
      },
      kill: (signal) => {
        if (!done) child.kill(signal)
      },
      exited,
    }
  }
}

export const netProbes: ReadinessProbes = {
  tcp: (hostPort, timeoutMs) =>
    new Promise((resolve) => {
      const colon = hostPort.lastIndexOf(':')
      const host = hostPort.slice(0, colon).replace(/^\[|\]$/g, '')
      const socket = net.connect({ host, port: Number(hostPort.slice(colon + 1)) })
      const done = (ok: boolean): void => {
        socket.destroy()
        resolve(ok)
      }
      socket.setTimeout(timeoutMs, () => done(false))
      socket.once('connect', () => done(true))
      socket.once('error', () => done(false))
    }),
  http: async (url, timeoutMs) => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
      await res.body?.cancel()
      return res.ok
    } catch {
      return false
    }
  },
}
