/**
 * Child processes as an agent runs them (a driver, YCSB, a lifecycle step):
 * argv without a shell, lines of output, a line to stdin (the start
 * barrier), signals, and the exit. services/adapters/process/launcher.ts
 * implements it over node:child_process; tests give a fake.
 */

export interface LaunchSpec {
  command: string
  args: readonly string[]
  /** The whole environment of the child. */
  env: Readonly<Record<string, string>>
  cwd?: string
}

export interface Exit {
  code: number | null
  signal: string | null
}

export interface Launched {
  readonly pid: number
  /** Each complete line the child writes, as it comes. */
  onLine(fn: (stream: 'stdout' | 'stderr', line: string) => void): void
  /** Writes to the child's stdin (ignored once it has exited). */
  write(text: string): void
  kill(signal: 'SIGTERM' | 'SIGKILL'): void
  readonly exited: Promise<Exit>
}

export interface ProcessLauncher {
  launch(spec: LaunchSpec): Launched
}

/** Whether a service answers: a TCP port that accepts, a URL that answers 2xx. */
export interface ReadinessProbes {
  tcp(hostPort: string, timeoutMs: number): Promise<boolean>
  http(url: string, timeoutMs: number): Promise<boolean>
}
