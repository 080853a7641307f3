// A node:test reporter that writes one JSON line per finished test (name, file,
// nesting, duration, outcome) and one per top-level test as it is queued
// (outcome 'queued'): test/run.mjs counts the results, prints the slowest and the
// failed tests, and fails a run in which a queued test never reported a verdict.
// It appends synchronously to BENCHSTREAM_TEST_RESULTS instead of yielding to a
// --test-reporter-destination stream, which the runner could exit before flushing.
import { appendFileSync } from 'node:fs'

const VERDICTS = new Set(['test:pass', 'test:fail'])

export default async function* resultsReporter(source) {
  const file = process.env.BENCHSTREAM_TEST_RESULTS
  if (file === undefined || file === '') throw new Error('results-reporter: set BENCHSTREAM_TEST_RESULTS to a file')
  for await (const event of source) {
    const d = event.data
    const queued = event.type === 'test:enqueue' && d.nesting === 0
    if (!queued && !VERDICTS.has(event.type)) continue
    appendFileSync(
      file,
      JSON.stringify({
        outcome: queued
          ? 'queued'
          : d.skip !== undefined || d.todo !== undefined
            ? 'skipped'
            : event.type === 'test:pass'
              ? 'passed'
              : 'failed',
        name: d.name,
        file: d.file ?? '',
        line: d.line,
        column: d.column,
        nesting: d.nesting,
        ms: d.details?.duration_ms ?? 0,
      }) + '\n',
    )
  }
  yield ''
}
