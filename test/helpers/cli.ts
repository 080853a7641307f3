/**
 * The `benchstream` command in a child process, as a user runs it from a
 * shell (bin/benchstream.js, the compiled CLI), with the test's environment.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { repoRoot } from '../../services/common/repo-root.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')

export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

export function cli(env: Record<string, string>, args: readonly string[]): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: repoRoot(),
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}
