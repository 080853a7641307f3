/**
 * The guides tier (npm run test:guides): each guide's first block of commands, run as a newcomer runs it on a fresh
 * clone (test/helpers/guide-blocks.ts: a fresh copy of the checkout, a clean environment with KAFKA_PORT and API_PORT
 * on free ports, the guide's setup lines, Ctrl-C for commands that run until it), one guide after the other. A block
 * passes when every command exits 0 within its time, what it started in the background (`npx benchstream server &`)
 * still runs at its end and stops on SIGTERM, and no broker is left behind. Guides whose block cannot run here are
 * skipped with the reason their marker gives, listed as skipped tests, never left out silently.
 *
 * Also here, as it needs a broker of its own: `benchstream server` with KAFKA_BROKERS unset uses a broker already
 * answering on KAFKA_PORT and leaves it running.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { answers, freePortPair, readGuideBlocks, runGuideBlock, type GuideRun } from '../helpers/guide-blocks.js'

const root = repoRoot()
const blocks = readGuideBlocks(root)

const tail = (s: string, n = 6000): string => (s.length > n ? `…${s.slice(-n)}` : s)
const shown = (r: GuideRun): string =>
  `ports: Kafka ${r.kafkaPort}, API ${r.apiPort}\n--- stdout\n${tail(r.stdout)}\n--- stderr\n${tail(r.stderr)}`

for (const b of blocks) {
  const name = `${b.guide}: its first block of commands on a fresh clone`
  if (b.block === undefined) {
    test(name, { skip: 'the guide has no ```sh block' }, () => undefined)
    continue
  }
  if (b.marker.skip !== undefined) {
    test(name, { skip: b.marker.skip }, () => undefined)
    continue
  }
  test(name, { timeout: (b.marker.timeoutS + 180) * 1000 }, async (t) => {
    const r = await runGuideBlock(root, b)
    t.diagnostic(
      `block ${r.seconds.toFixed(0)} s, stopped in ${r.stopSeconds?.toFixed(1) ?? '(killed)'} s; load average ` +
        os.loadavg()[0]!.toFixed(1),
    )
    assert.equal(r.timedOut, false, `not done within ${b.marker.timeoutS} s\n${shown(r)}`)
    assert.equal(r.code, 0, `exit code ${r.code}\n${shown(r)}`)
    assert.deepEqual(r.deadJobs, [], `background commands that had exited before the block ended\n${shown(r)}`)
    assert.notEqual(r.stopSeconds, null, `still running 90 s after SIGTERM\n${shown(r)}`)
    assert.equal(r.brokerLeft, false, `a broker still answered on ${r.kafkaPort} after everything stopped\n${shown(r)}`)
    // Without KAFKA_BROKERS the server started the local broker itself, and said which, where and until when.
    if (/npx benchstream server &/.test([...b.marker.setup, b.block].join('\n'))) {
      const p = r.kafkaPort
      assert.match(
        r.stderr,
        new RegExp(
          `started the local Kafka broker: kafka \\S+ ready on 127\\.0\\.0\\.1:${p} \\(data: \\S+/\\.benchstream/` +
            `kafka-${p}\\); it stops when this server stops`,
        ),
        shown(r),
      )
      assert.match(r.stderr, /"msg":"the local Kafka broker this server started is stopped"/, shown(r))
    }
  })
}

test('server without KAFKA_BROKERS: a broker already answering on KAFKA_PORT is used and left running', async (t) => {
  const port = await freePortPair()
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-guide-adopt-'))
  const kafkaEnv: NodeJS.ProcessEnv = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_DATA_DIR: path.join(dir, `kafka-${port}`),
  }
  delete kafkaEnv.KAFKA_BROKERS
  delete kafkaEnv.KAFKA_VERSION
  const kafkaSh = path.join(root, 'deploy', 'local', 'kafka.sh')
  t.after(() => {
    spawnSync('bash', [kafkaSh, 'stop'], { env: kafkaEnv, stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
  })
  assert.equal(spawnSync('bash', [kafkaSh, 'start'], { env: kafkaEnv, stdio: 'ignore' }).status, 0)
  const env: NodeJS.ProcessEnv = { ...process.env, KAFKA_PORT: String(port), API_PORT: '0', BENCHSTREAM_DATA_DIR: dir }
  delete env.KAFKA_BROKERS
  const server = spawn(process.execPath, [path.join(root, 'bin', 'benchstream.js'), 'server'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  server.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => server.on('close', (c) => resolve(c)))
  const deadline = Date.now() + 120_000
  while (!/"msg":"server running"/.test(stderr) && Date.now() < deadline && server.exitCode === null)
    await new Promise((r) => setTimeout(r, 250))
  assert.match(stderr, /"msg":"server running"/, stderr)
  assert.match(
    stderr,
    new RegExp(
      `using the Kafka broker already answering on 127\\.0\\.0\\.1:${port} \\(kafka \\S+ running on ` +
        `127\\.0\\.0\\.1:${port} .*\\); it is left running when this server stops \\(to stop it: KAFKA_PORT=${port} `,
    ),
    stderr,
  )
  server.kill('SIGTERM')
  assert.equal(await exited, 0, stderr)
  assert.doesNotMatch(stderr, /this server started is stopped/)
  assert.equal(await answers(port), true, 'the broker that was there before the server must still run')
})
