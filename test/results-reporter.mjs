// A node:test reporter that writes one JSON line per finished test (name, file,
// nesting, duration, outcome): test/run.mjs counts the results and prints the
// slowest and the failed tests from it, whatever order the files ran in.
// It appends synchronously to BENCHSTREAM_TEST_RESULTS instead of yielding to a
// --test-reporter-destination stream: with --test-force-exit the runner exits
// before such a stream is flushed, and the last tests of a run went uncounted.
import { appendFileSync } from 'node:fs'

export default async function* resultsReporter(source) {
  const file = process.env.BENCHSTREAM_TEST_RESULTS
  if (file === undefined || file === '') throw new Error('results-reporter: set BENCHSTREAM_TEST_RESULTS to a file')
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const d = event.data
    appendFileSync(
      file,
      JSON.stringify({
        outcome:
          d.skip !== undefined || d.todo !== undefined ? 'skipped' : event.type === 'test:pass' ? 'passed' : 'failed',
        name: d.name,
        file: d.file ?? '',
        nesting: d.nesting,
        ms: d.details?.duration_ms ?? 0,
      }) + '\n',
    )
  }
  yield ''
}
