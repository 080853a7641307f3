/**
 * The baseline of bench/pull: the same rows read straight from chDB in a
 * process of its own, on the data directory the server left (chDB binds a
 * data directory to one process).
 *
 *   node dist/bench/pull-direct-child.js CLICKHOUSE_DIR stream SQL
 *     streams SQL in Native (blocks of 1,000 rows, as the ad hoc guard asks),
 *     counting the rows and bytes;
 *   node dist/bench/pull-direct-child.js CLICKHOUSE_DIR parquet SQL FILE
 *     writes SQL's result into FILE as Parquet with INSERT INTO FUNCTION
 *     file() (what `benchstream export` does with no server).
 *
 * Prints {"rows", "bytes", "ms", "peakMb"}: peakMb is this process's VmHWM.
 */
import { readFileSync, statSync } from 'node:fs'
import { Session } from 'chdb'

async function main(): Promise<void> {
  const [dir, mode, sql, file] = process.argv.slice(2)
  if (
    dir === undefined ||
    sql === undefined ||
    (mode !== 'stream' && mode !== 'parquet') ||
    (mode === 'parquet' && file === undefined)
  )
    throw new Error('usage: pull-direct-child.js CLICKHOUSE_DIR stream|parquet SQL [FILE]')
  const s = new Session(dir)
  try {
    const t0 = performance.now()
    let rows = 0
    let bytes = 0
    if (mode === 'stream') {
      for await (const c of s.queryStream(`${sql} SETTINGS max_block_size = 1000`, { format: 'Native' })) {
        rows += c.numRows
        bytes += c.numBytes
      }
    } else {
      await s.queryAsync(
        `INSERT INTO FUNCTION file('${file}', 'Parquet') ${sql} SETTINGS engine_file_truncate_on_insert = 1, ` +
          'output_format_parquet_row_group_size = 100000, output_format_parquet_row_group_size_bytes = 33554432',
        { format: 'TSV' },
      )
      rows = Number((await s.queryAsync(`SELECT count() FROM file('${file}', 'Parquet')`, { format: 'TSV' })).text())
      bytes = statSync(file!).size
    }
    const ms = performance.now() - t0
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]
    process.stdout.write(`${JSON.stringify({ rows, bytes, ms, peakMb: Number(hwm) / 1024 })}\n`)
  } finally {
    s.close()
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
