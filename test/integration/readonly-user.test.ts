/**
 * The read-only user of server mode (deploy/clickhouse/readonly-user.sql),
 * checked with ClickHouse's own parser (chDB's formatQuery; no ClickHouse
 * server runs here): every statement parses, the profile holds the API's
 * limits as constants with readonly = 1, and the grants name Benchstream's
 * database and nothing else.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { Session } from 'chdb'
import { repoRoot } from '../../services/common/repo-root.js'

const SQL = readFileSync(path.join(repoRoot(), 'deploy/clickhouse/readonly-user.sql'), 'utf8')

function statements(db: string): string[] {
  return SQL.split('\n')
    .filter((l) => !l.trimStart().startsWith('--'))
    .join('\n')
    .replaceAll('{db}', db)
    .replaceAll('{password}', 'p4ss')
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

test('the read-only user: ClickHouse parses it; readonly, limits and grants as the API has them', async () => {
  const s = new Session()
  try {
    const parsed: string[] = []
    for (const st of statements('benchstream'))
      parsed.push(
        (await s.queryBindAsync('SELECT formatQuerySingleLine({q:String})', { q: st }, { format: 'TSVRaw' }))
          .text()
          .trim(),
      )
    assert.equal(parsed.length, 5)
    const [profile, user, revoke, ...grants] = parsed
    assert.match(profile!, /^CREATE SETTINGS PROFILE OR REPLACE `benchstream_readonly` SETTINGS readonly = 1 CONST/)
    // No cap on a result's size (the API has none by default): a cut would be a silent wrong answer.
    assert.doesNotMatch(profile!, /max_result_rows|max_result_bytes|'break'/)
    for (const limit of [
      'max_execution_time = 60 CONST',
      'max_memory_usage = 536870912 CONST',
      'max_rows_to_read = 2000000000 CONST',
      'max_bytes_to_read = 274877906944 CONST',
      "result_overflow_mode = 'throw' CONST",
      'max_threads = 1 CONST',
    ])
      assert.ok(profile!.includes(limit), `${limit} in ${profile}`)
    assert.match(
      user!,
      new RegExp(
        "^CREATE USER OR REPLACE benchstream_reader IDENTIFIED WITH sha256_password BY 'p4ss' " +
          'DEFAULT DATABASE benchstream SETTINGS PROFILE `benchstream_readonly`$',
      ),
    )
    assert.equal(revoke, 'REVOKE ALL ON *.* FROM benchstream_reader')
    assert.deepEqual(grants, [
      'GRANT SELECT, SHOW TABLES, SHOW COLUMNS, SHOW DATABASES ON benchstream.* TO benchstream_reader',
      'GRANT SELECT ON benchstream_meta.* TO benchstream_reader',
    ])
    // Nothing but the database is granted, whatever it is called.
    for (const g of statements('bench_2')) if (g.startsWith('GRANT')) assert.match(g, / ON bench_2(_meta)?\.\* TO /)
    // A typo in a setting name would not parse as a constraint: the engine knows each one.
    const names = [...profile!.matchAll(/(\w+) = /g)].map((m) => m[1]!)
    const known = (
      await s.queryAsync(`SELECT name FROM system.settings WHERE name IN (${names.map((n) => `'${n}'`).join(', ')})`, {
        format: 'TSVRaw',
      })
    )
      .text()
      .trim()
      .split('\n')
    assert.deepEqual(known.sort(), [...new Set(names)].sort())
  } finally {
    s.close()
  }
})
