/**
 * The `benchstream` command: one entry, one subcommand per job.
 */
import { isBenchstreamError } from '../core/errors.js'

const COMMANDS = {
  demo: 'start Kafka (unless KAFKA_BROKERS is set), the processor and the API, run a workload, print live status and the final report',
  run: 'run phase of a YCSB workload against a binding, emitting one event per operation (see `benchstream run --help`)',
  load: 'load phase of a YCSB workload',
  server: 'the backend: consume events into ClickHouse windows, evaluate alerts, serve the API (unless --no-api)',
  processor: 'alias of server',
  report: 'print a run\'s report from ClickHouse: benchstream report <run-id> [--json]',
  sql: 'run a read-only SQL query: benchstream sql "SELECT ..."',
  runs: 'list runs',
  'import-ycsb': 'send YCSB HdrHistogram interval logs into a run: benchstream import-ycsb --run-id R --client-id C READ=file.hdr ...',
  profile: 'CPU profiles of a run: benchstream profile attach --run-id R FILE... | capture --pid P --run-id R | list --run-id R',
} as const

export function help(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length))
  return `usage: benchstream <command> [options]\n\ncommands:\n${Object.entries(COMMANDS).map(([c, d]) => `  ${c.padEnd(width)}  ${d}`).join('\n')}\n\nSee README.md for the environment variables (KAFKA_BROKERS, CLICKHOUSE_URL, BENCHSTREAM_DATA_DIR, ...).\n`
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv
  try {
    switch (cmd) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(help())
        return cmd === undefined ? 2 : 0
      case 'run':
      case 'load': {
        if (rest.includes('--help') || rest.includes('-h')) {
          const { driverUsage } = await import('../driver/config.js')
          const { BINDING_NAMES } = await import('../adapters/datastores/index.js')
          process.stdout.write(driverUsage(BINDING_NAMES) + '\n')
          return 0
        }
        const { driverMain } = await import('../driver/main.js')
        return await driverMain(cmd, rest)
      }
      case 'server':
      case 'processor': {
        const { serverMain } = await import('../server/main.js')
        return await serverMain(rest)
      }
      case 'demo': {
        const { demoMain } = await import('./demo.js')
        return await demoMain(rest)
      }
      case 'report':
      case 'sql':
      case 'runs': {
        const { readMain } = await import('./read.js')
        return await readMain(cmd, rest)
      }
      case 'import-ycsb': {
        const { importYcsbMain } = await import('./import-ycsb.js')
        return await importYcsbMain(rest)
      }
      case 'profile': {
        const { profileMain } = await import('./profile.js')
        return await profileMain(rest)
      }
      default:
        process.stderr.write(`unknown command ${JSON.stringify(cmd)}; valid commands are ${Object.keys(COMMANDS).join(', ')}\n\n${help()}`)
        return 2
    }
  } catch (err) {
    if (isBenchstreamError(err)) {
      process.stderr.write(`benchstream: ${err.code}: ${err.message}\n`)
      return 2
    }
    process.stderr.write(`benchstream: ${(err as Error).stack ?? String(err)}\n`)
    return 1
  }
}
