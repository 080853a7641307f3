/**
 * bench/dedup-crash: what a SIGKILL during a tokenized insert does to the
 * replay of that insert, on the embedded ClickHouse (chDB), without Kafka.
 *
 * The processor's exactly-once rests on insert_deduplication_token: a batch
 * written again after a crash carries the same token and ClickHouse drops it
 * if it had landed. A MergeTree table writes the token to its deduplication
 * log before it renames the new part into place (MergeTreeSink); a process
 * killed in between leaves the token without the part, and the replay is
 * dropped although its rows are not there. CI met this once: the
 * processor-kill test found 34,667 of 400,000 events missing.
 *
 * A child process inserts numbered batches of rows, each with its own token,
 * and is killed at a random moment; the next child first replays the batch
 * that was in flight (same rows, same token), then checks that every batch so
 * far is there, and goes on. Two modes, each on its own data directory:
 * `plain` replays as the processor did before; `verified` counts the batch's
 * rows after the replay and, when there are none, writes them again under a
 * recovery token, as ClickHouseWindowStore does for a replay (see
 * writeStep there). After each kill the parent also looks whether the
 * newest deduplication record has its part directory, which shows the
 * state directly.
 *
 * Prints, per mode: kills, kills that left a record without its part, and
 * batches lost. Expected: losses in `plain` (about 1 in 100 kills here),
 * none in `verified`.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { openClickHouse, queryRows } from '../services/adapters/clickhouse/client.js'
import { fmtInt, progress, runMain, sleep, tempDir } from './common.js'
import { parseFlags } from './flags.js'

const BENCH = 'dedup-crash'
const CHILD = '__child'
const MODES = ['plain', 'verified'] as const
type Mode = (typeof MODES)[number]

const FLAGS = {
  kills: { kind: 'int', default: 300, min: 1, max: 100_000, help: 'SIGKILLs per mode' },
  rows: { kind: 'int', default: 50, min: 1, max: 1_000_000, help: 'rows per batch (one insert)' },
  'max-delay-ms': {
    kind: 'int',
    default: 450,
    min: 10,
    max: 60_000,
    help: 'a kill comes 50 ms to this long after the child starts inserting',
  },
  modes: { kind: 'choices', default: [...MODES], allowed: MODES, help: 'which replays to try' },
} as const

/**
 * The child: replay the batch in flight, check every batch so far, then insert until killed. Prints `start N`, `ack N`,
 * `check ...`.
 */
async function child(dir: string, inflight: number, mode: Mode, rows: number): Promise<void> {
  const ch = openClickHouse({
    url: undefined,
    cluster: undefined,
    user: 'default',
    password: '',
    database: 'default',
    embeddedPath: dir,
    opsTtlDays: 0,
  })
  await ch.client.command({
    query:
      'CREATE TABLE IF NOT EXISTS t (b UInt32, k UInt32) ENGINE = MergeTree ORDER BY (b, k) SETTINGS ' +
      'non_replicated_deduplication_window = 10000',
  })
  const insert = (b: number, token: string): Promise<unknown> =>
    ch.client.insert({
      table: 't',
      values: Array.from({ length: rows }, (_, k) => ({ b, k })),
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplication_token: token },
    })
  const count = async (where: string): Promise<number> =>
    Number((await queryRows<{ n: string }>(ch, `SELECT count() AS n FROM t WHERE ${where}`))[0]!.n)
  if (inflight >= 0) {
    await insert(inflight, `b${inflight}`)
    let rewritten = 0
    if (mode === 'verified' && (await count(`b = ${inflight}`)) === 0) {
      await insert(inflight, `b${inflight}#r1`)
      rewritten = 1
    }
    const [s] = await queryRows<{ n: string; u: string }>(
      ch,
      `SELECT count() AS n, uniqExact(b) AS u FROM t WHERE b <= ${inflight}`,
    )
    process.stdout.write(`check ${inflight} batches ${s!.u} rows ${s!.n} rewritten ${rewritten}\n`)
  }
  for (let b = inflight + 1; ; b++) {
    process.stdout.write(`start ${b}\n`)
    await insert(b, `b${b}`)
    process.stdout.write(`ack ${b}\n`)
  }
}

/** True when the newest deduplication record of table t names a part that is not on disk. */
function recordWithoutPart(dir: string): boolean {
  const store = path.join(dir, 'store')
  for (const a of readdirSync(store)) {
    for (const table of readdirSync(path.join(store, a))) {
      const logs = path.join(store, a, table, 'deduplication_logs')
      if (!existsSync(logs)) continue
      const files = readdirSync(logs).sort()
      const lines = readFileSync(path.join(logs, files[files.length - 1]!), 'utf8')
        .trim()
        .split('\n')
      const part = lines[lines.length - 1]?.split('\t')[1]
      // A part merged away since is gone too, but never the newest: a merge takes only committed parts, and outdated
      // ones stay a moment.
      if (part !== undefined && !existsSync(path.join(store, a, table, part))) return true
    }
  }
  return false
}

async function runMode(
  mode: Mode,
  f: { kills: number; rows: number; 'max-delay-ms': number },
): Promise<{ kills: number; orphanRecords: number; lost: number; rewritten: number }> {
  const dir = path.join(tempDir(`${BENCH}-${mode}`), 'clickhouse')
  const self = fileURLToPath(import.meta.url)
  let inflight = -1
  let orphanRecords = 0
  let rewritten = 0
  let lost = 0
  for (let i = 0; i < f.kills; i++) {
    const c = spawn(process.execPath, [self, CHILD, dir, String(inflight), mode, String(f.rows)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    c.stdout.on('data', (d: Buffer) => (out += d.toString()))
    const exited = new Promise<void>((r) => c.once('exit', () => r()))
    for (;;) {
      if (/^start \d+$/m.test(out)) break
      if (c.exitCode !== null) throw new Error(`the child ended before inserting:\n${out}`)
      await sleep(5)
    }
    await sleep(50 + Math.random() * (f['max-delay-ms'] - 50))
    c.kill('SIGKILL')
    await exited
    if (recordWithoutPart(dir)) orphanRecords++
    const check = /^check (\d+) batches (\d+) rows (\d+) rewritten (\d+)$/m.exec(out)
    if (check !== null) {
      const batches = Number(check[1]) + 1
      lost = batches - Number(check[2])
      rewritten += Number(check[4])
      if (Number(check[3]) !== Number(check[2]) * f.rows) throw new Error(`batch rows do not add up: ${check[0]}`)
    }
    const starts = [...out.matchAll(/^start (\d+)$/gm)]
    inflight = Number(starts[starts.length - 1]![1])
    if ((i + 1) % 50 === 0)
      progress(
        BENCH,
        `${mode}: ${i + 1} kills, ${orphanRecords} records without their part, ${lost} batches lost so far`,
      )
  }
  rmSync(path.dirname(dir), { recursive: true, force: true })
  return { kills: f.kills, orphanRecords, lost, rewritten }
}

async function main(): Promise<void> {
  const f = parseFlags(
    BENCH,
    'SIGKILL during tokenized inserts into chDB: do replays lose batches, and does verification bring them back?',
    process.argv.slice(2),
    process.env,
    FLAGS,
  )
  process.stdout.write(
    `# ${BENCH}: ${fmtInt(f.kills)} kills per mode, ${fmtInt(f.rows)} rows per batch, load average ${(
      await import('node:os')
    )
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}\n`,
  )
  for (const mode of f.modes as Mode[]) {
    const r = await runMode(mode, f)
    // The last check counts batches up to the last replay: losses are cumulative, so the last figure is the total.
    process.stdout.write(
      `${mode.padEnd(9)} kills ${fmtInt(r.kills)}  records without their part ${fmtInt(r.orphanRecords)} ` +
        ` batches lost ${fmtInt(r.lost)}  written again ${fmtInt(r.rewritten)}\n`,
    )
  }
}

if (process.argv[2] === CHILD) {
  const [dir, inflight, mode, rows] = process.argv.slice(3)
  child(dir!, Number(inflight), mode as Mode, Number(rows)).catch((err: unknown) => {
    process.stderr.write(`child: ${(err as Error).message}\n`)
    process.exit(1)
  })
} else {
  runMain(main)
}
