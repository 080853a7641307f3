/**
 * One INSERT of a Native block, on a server or in the embedded engine (through a spool file the engine reads), under
 * a deduplication token. Apart from the window store because the embedded path owns a directory and chDB sessions.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { Session } from 'chdb'
import { writeTable, type ClickHouse } from './client.js'

export class NativeInserter {
  /** The embedded engine's spool directory, once created. */
  private spool: Promise<string> | undefined

  constructor(private readonly ch: ClickHouse) {}

  /**
   * One INSERT of a Native block. @clickhouse/client's insert() takes text
   * formats only, and its chDB connection turns every body into a JS string
   * (binary would not survive), so: on a server the block is the body of a
   * plain INSERT (exec); in the embedded engine it goes through a file that
   * the engine reads itself (FROM INFILE), written just before and removed
   * just after, on a chDB session of its own: one session runs one query at a
   * time (measured: 4 concurrent inserts on one session finish one after the
   * other; on 4 sessions of the same directory they overlap), so partitions'
   * raw-event inserts neither wait for each other nor hold up the small
   * inserts and lookups on the shared connection. A session on a directory
   * the process has open costs well under a millisecond. The token is part of
   * the statement: a SET on a shared session would outlive this insert.
   */
  async insert(table: string, columns: readonly string[], block: Uint8Array[], token: string): Promise<void> {
    const head = `INSERT INTO ${writeTable(this.ch, table)} (${columns.join(', ')})`
    const settings = `SETTINGS insert_deduplication_token = ${sqlString(token)}`
    if (this.ch.mode === 'server') {
      const r = await this.ch.client.exec({
        query: `${head} ${settings} FORMAT Native`,
        values: Readable.from(block, { objectMode: false }),
      })
      await finished(r.stream.resume())
      return
    }
    const file = await this.spoolFile()
    try {
      await writeFile(file, block)
      const session = new Session(this.ch.location)
      try {
        await session.queryAsync(`${head} FROM INFILE ${sqlString(file)} ${settings} FORMAT Native`)
      } finally {
        session.close()
      }
    } finally {
      await rm(file, { force: true })
    }
  }

  /**
   * A fresh file name in the embedded engine's directory, insert-spool/. Files
   * of other processes are left there only by a crash during an insert (one
   * process owns the directory at a time): removed on first use.
   */
  private async spoolFile(): Promise<string> {
    this.spool ??= (async () => {
      const dir = path.join(this.ch.location, 'insert-spool')
      await mkdir(dir, { recursive: true })
      const mine = `${process.pid}-`
      for (const f of await readdir(dir)) if (!f.startsWith(mine)) await rm(path.join(dir, f), { force: true })
      return dir
    })()
    return path.join(await this.spool, `${process.pid}-${randomUUID()}.native`)
  }
}

/** A ClickHouse string literal. */
function sqlString(s: string): string {
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
}
