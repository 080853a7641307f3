// Preloaded into every test file's process (test/run.mjs, --import): a file whose tests are all done but whose
// process does not exit by itself (a client's socket or timer still open) exits GRACE_MS later, after its reports
// are written, and says what was still open. Not Node's --test-force-exit, which exits at once and can cut the last
// reports on their way to the runner (nodejs/node#64833); and not waiting forever, which cost every CI run about
// 90 s of files lingering on their clients' timers (527 s against 391-443 s with the flag).
import { after } from 'node:test'

const GRACE_MS = 2000

// Only in a test file's own process: the runner's process loads this too and must not be cut short.
if (process.env.NODE_TEST_CONTEXT !== undefined) {
  after(() => {
    setTimeout(() => {
      const open = process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap')
      process.stderr.write(
        `# ${process.argv.at(-1)}: still running ${GRACE_MS} ms after its tests (${open.join(', ')}); exiting\n`,
      )
      // The callback runs once everything written before it has reached the pipe.
      process.stdout.write('', () => process.exit())
    }, GRACE_MS).unref()
  })
}
