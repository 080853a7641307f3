// Which tests of a run never reported a verdict, from the results reporter's lines (test/results-reporter.mjs).
//
// Node's runner can count a test file short and still pass: with --test-force-exit and process isolation a child can
// exit before its last reports reach the runner (nodejs/node#64833; a CI run here counted 725 of 729 tests, the last
// four of one file missing, exit 0), and a file whose process exits 0 part-way (process.exit in the code under test)
// is reported as one passing test, the file, with none of its tests. Both are silent wrong answers, so the runner
// accounts for every test itself:
// - every top-level test that was queued must report a verdict (pass, fail, skip, todo); tests are keyed by file,
//   name, line and column, the same for a test's queueing and its verdict (a test declared by a helper carries the
//   helper's file in both);
// - the runner reports a file itself (a top-level "test" named by the file's path) only when the file's process
//   reported no test at all: that file passing is a file that ran nothing we saw.

/**
 * @typedef {{outcome: string, name: string, file: string, line?: number, column?: number, nesting: number}} Result
 * @param {Result[]} records
 * @returns {Array<{file: string, name: string | undefined, line: number | undefined, why: string}>}
 */
export function unreported(records) {
  const open = new Map()
  const problems = []
  for (const r of records) {
    if (r.nesting !== 0) continue
    if (r.name === r.file) {
      if (r.outcome === 'passed')
        problems.push({
          file: r.file,
          name: undefined,
          line: undefined,
          why: 'its process ended without reporting any test (did something call process.exit?)',
        })
      continue
    }
    const key = JSON.stringify([r.file, r.name, r.line ?? null, r.column ?? null])
    const entry = open.get(key) ?? { record: r, count: 0 }
    entry.count += r.outcome === 'queued' ? 1 : -1
    open.set(key, entry)
  }
  for (const { record, count } of open.values())
    for (let i = 0; i < count; i++)
      problems.push({
        file: record.file,
        name: record.name,
        line: record.line,
        why: 'started or queued, and never reported a verdict (its process ended before the report reached the runner)',
      })
  return problems
}
