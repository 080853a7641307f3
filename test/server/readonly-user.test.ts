/**
 * deploy/clickhouse/readonly-user.sql applied to the ClickHouse server stand-in (npm run test:server), as an
 * administrator would apply it with clickhouse-client. The stand-in (clickhouse-local's main) keeps users, roles and
 * settings profiles of users.xml only: it has no writable access storage (a local_directory in user_directories is
 * not read), so the script's first statement is refused, and the rest fail for want of it. This test pins that
 * refusal, quoted in docs/guides/deploy.md; a server that accepts the script (a real ClickHouse server) is where the
 * user's limits can be checked, and this test then fails, asking for that check.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { rawClient, rows, tierServer } from '../helpers/clickhouse-server.js'

const server = tierServer()

test(
  'the read-only user script on the stand-in: refused, no writable access storage (the engine quoted)',
  { skip: typeof server === 'string' ? server : false },
  async (t) => {
    const s = server as Exclude<typeof server, string>
    const c = rawClient(t, s)
    const statements = readFileSync(path.join(repoRoot(), 'deploy/clickhouse/readonly-user.sql'), 'utf8')
      .split('\n')
      .filter((l) => !l.trimStart().startsWith('--'))
      .join('\n')
      .replaceAll('{db}', 'benchstream')
      .replaceAll('{password}', 'p4ss')
      .split(/;\s*(?:\n|$)/)
      .map((x) => x.trim())
      .filter((x) => x !== '')
    assert.equal(statements.length, 5)
    const outcomes: string[] = []
    for (const query of statements) {
      const outcome = await c.command({ query }).then(
        () => 'accepted',
        (err: Error) => err.message.replace(/\s+/g, ' ').trim(),
      )
      outcomes.push(outcome)
      process.stdout.write(`# ${query.split('\n')[0]}\n#   -> ${outcome}\n`)
    }
    assert.equal(
      outcomes[0],
      'Could not insert settings profile `benchstream_readonly` because there is no writeable access storage in ' +
        'user directories.',
      'CREATE SETTINGS PROFILE is refused for want of a writable access storage (the administrator has ' +
        'access_management): if it is accepted, this server can hold the user, and its limits are to be tested here',
    )
    assert.ok(
      outcomes.every((o) => o !== 'accepted'),
      outcomes.join('\n'),
    )
    assert.deepEqual(
      await rows(c, "SELECT name FROM system.users WHERE name = 'benchstream_reader'"),
      [],
      'no user was created',
    )
  },
)
