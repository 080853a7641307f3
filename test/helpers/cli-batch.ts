/**
 * Runs many command lines through the CLI's main() in one process (a process
 * start each would cost a minute for the help matrix), with each call's
 * stdout and stderr captured, and prints the results as one JSON array. Run
 * as its own process by test/unit/cli.test.ts: the test runner's own process
 * talks to its parent over stdout, so the capture cannot happen there.
 *   node dist/test/helpers/cli-batch.js '<JSON [{ args, env }]>'
 */
import os from 'node:os'
import path from 'node:path'
import { main } from '../../services/cli/main.js'

interface Call {
  args: string[]
  env?: Record<string, string>
}

const calls = JSON.parse(process.argv[2] ?? '[]') as Call[]
const results: Array<{ code: number; stdout: string; stderr: string }> = []
const writes = { stdout: process.stdout.write.bind(process.stdout), stderr: process.stderr.write.bind(process.stderr) }
process.env.BENCHSTREAM_DATA_DIR = path.join(os.tmpdir(), 'benchstream-cli-unit-none')
for (const call of calls) {
  const out = { stdout: '', stderr: '' }
  const saved = Object.fromEntries(Object.keys(call.env ?? {}).map((k) => [k, process.env[k]]))
  Object.assign(process.env, call.env ?? {})
  for (const s of ['stdout', 'stderr'] as const)
    process[s].write = (chunk: string | Uint8Array): boolean => {
      out[s] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()
      return true
    }
  let code: number
  try {
    code = await main(call.args)
  } finally {
    process.stdout.write = writes.stdout
    process.stderr.write = writes.stderr
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
  results.push({ code, ...out })
}
process.stdout.write(JSON.stringify(results))
process.exit(0)
