// A node:test reporter that writes one JSON line per finished test (name, file,
// nesting, duration, outcome): test/run.mjs counts the results and prints the
// slowest and the failed tests from it, whatever order the files ran in.
export default async function* resultsReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const d = event.data
    yield (
      JSON.stringify({
        outcome:
          d.skip !== undefined || d.todo !== undefined ? 'skipped' : event.type === 'test:pass' ? 'passed' : 'failed',
        name: d.name,
        file: d.file ?? '',
        nesting: d.nesting,
        ms: d.details?.duration_ms ?? 0,
      }) + '\n'
    )
  }
}
