/**
 * The server's file in its data folder (services/common/server-file.ts) as commands started beside `benchstream
 * server &` read it: a starting server's marker (no API yet) is waited for until the server is up, a marker whose
 * process is gone is not, and with no server at all the wait ends after its grace. Real files and real pids; the
 * waits are short (tens of ms) and what they return does not depend on the machine's speed.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import {
  awaitServer,
  findServer,
  findStartingServer,
  markServerStarting,
  writeServerFile,
} from '../../services/common/server-file.js'

function tmp(t: { after: (f: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-server-file-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A pid no process has: one that just exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
  return Number(r.stdout)
}

test("a starting server is found as starting, not as up; once its API listens it is up and the marker's gone", (t) => {
  const dir = tmp(t)
  const unmark = markServerStarting(dir)
  assert.equal(findStartingServer(dir), process.pid)
  assert.equal(findServer(dir), undefined)
  const remove = writeServerFile(dir, 'http://127.0.0.1:1234')
  assert.equal(findStartingServer(dir), undefined)
  assert.equal(findServer(dir)?.apiUrl, 'http://127.0.0.1:1234')
  unmark() // the same process's file: removed, as a failed start would
  assert.equal(findServer(dir), undefined)
  remove()
})

test('awaitServer waits while a server starts, and returns it once its API listens', async (t) => {
  const dir = tmp(t)
  markServerStarting(dir)
  const told: Array<number | undefined> = []
  setTimeout(() => writeServerFile(dir, 'http://127.0.0.1:4321'), 60)
  const up = await awaitServer(dir, { appearMs: 0, startingMs: 60_000, pollMs: 10, onWait: (p) => told.push(p) })
  assert.equal(up?.apiUrl, 'http://127.0.0.1:4321')
  assert.deepEqual(told, [process.pid])
})

test("awaitServer: a starting server's marker whose process died is not waited for", async (t) => {
  const dir = tmp(t)
  writeFileSync(path.join(dir, 'server.json'), JSON.stringify({ pid: deadPid(), starting: true }))
  const t0 = Date.now()
  assert.equal(await awaitServer(dir, { appearMs: 50, startingMs: 60_000, pollMs: 10 }), undefined)
  assert.ok(Date.now() - t0 < 30_000)
})

test('awaitServer: no server at all ends after the grace, at once when alsoDone says so', async (t) => {
  const dir = tmp(t)
  const told: Array<number | undefined> = []
  assert.equal(
    await awaitServer(dir, { appearMs: 40, startingMs: 60_000, pollMs: 10, onWait: (p) => told.push(p) }),
    undefined,
  )
  assert.deepEqual(told, [undefined])
  let asked = 0
  const t0 = Date.now()
  const r = await awaitServer(dir, {
    appearMs: 60_000,
    startingMs: 60_000,
    pollMs: 10,
    alsoDone: async () => ++asked >= 3,
  })
  assert.equal(r, undefined)
  assert.equal(asked, 3)
  assert.ok(Date.now() - t0 < 30_000)
})

test('a server that appears within the grace, starting, is waited for until up', async (t) => {
  const dir = tmp(t)
  // Each step follows what the wait has said, so the order holds however slow the machine is.
  const told: Array<number | undefined> = []
  const onWait = (p: number | undefined): void => {
    told.push(p)
    if (p === undefined) setTimeout(() => markServerStarting(dir), 20)
    else setTimeout(() => writeServerFile(dir, 'http://127.0.0.1:5555'), 20)
  }
  const up = await awaitServer(dir, { appearMs: 60_000, startingMs: 60_000, pollMs: 10, onWait })
  assert.equal(up?.apiUrl, 'http://127.0.0.1:5555')
  assert.deepEqual(told, [undefined, process.pid])
})
