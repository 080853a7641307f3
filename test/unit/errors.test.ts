/**
 * The table of coded errors (services/core/errors.ts): every code has the
 * BS_ERR_ shape, a summary, and is raised somewhere (no dead codes).
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { BenchstreamError, ERROR_CODES, isBenchstreamError } from '../../services/core/errors.js'

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  )
}

test('every error code is BS_ERR_*, has a summary, and is raised by some code', () => {
  const code = [...sources(path.join(repoRoot(), 'services')), ...sources(path.join(repoRoot(), 'bench'))]
    .filter((f) => !f.endsWith(path.join('core', 'errors.ts')))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n')
  for (const [name, spec] of Object.entries(ERROR_CODES)) {
    assert.match(name, /^BS_ERR_[A-Z_]+$/)
    assert.ok(spec.summary.length > 0)
    assert.ok(code.includes(`'${name}'`), `${name} is never raised: remove it from the table`)
  }
})

test('an error carries its code, its retryability and its cause', () => {
  const cause = new Error('socket hang up')
  const e = new BenchstreamError('BS_ERR_CLICKHOUSE', 'writing failed', { cause })
  assert.equal(e.code, 'BS_ERR_CLICKHOUSE')
  assert.equal(e.retryable, true)
  assert.equal(e.cause, cause)
  assert.ok(isBenchstreamError(e, 'BS_ERR_CLICKHOUSE') && !isBenchstreamError(e, 'BS_ERR_CONFIG'))
  assert.equal(new BenchstreamError('BS_ERR_CONFIG', 'x').retryable, false)
})
