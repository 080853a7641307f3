#!/usr/bin/env node
// Last pass of `npm run lint`: no line of our source longer than the formatter's
// printWidth (.oxfmtrc.json, 120). oxfmt keeps the code it formats within it, but
// it cannot break a template literal (SQL, embedded HTML and script), a string, a
// regular expression or a comment, and it does not read shell or SQL at all.
//
// Checked: files git tracks, and new ones it does not ignore, of the kinds below.
// Not checked: test/fixtures/ (files real tools wrote, kept as written),
// services/ycsb/ (the Java module and its own scripts), and what is generated
// (dashboards/generated/, deploy/prometheus/; JSON such as package-lock.json is
// not among the kinds anyway).
//
// schemas/clickhouse/*.sql are checked: migrate() records a migration by its
// version only (no checksum, the text is never compared) and ClickHouse keeps
// views and tables in its own formatting, so rewrapping one changes nothing for a
// database already migrated. loadMigrations() drops lines starting with `--` and
// ends a statement at a `;` that ends a line: wrap between tokens, never so that
// a line starts with `--` or a `;` inside a statement ends a line.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const MAX = JSON.parse(readFileSync(path.join(ROOT, '.oxfmtrc.json'), 'utf8')).printWidth
if (!Number.isInteger(MAX)) throw new Error(`.oxfmtrc.json has no integer printWidth (got ${MAX})`)
const KINDS = /\.(?:ts|js|mjs|cjs|css|html|sh|sql)$/
const SKIP = ['test/fixtures/', 'services/ycsb/', 'dashboards/generated/', 'deploy/prometheus/']

const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
  cwd: ROOT,
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
})
  .split('\0')
  .filter((f) => KINDS.test(f) && !SKIP.some((s) => f.startsWith(s)))
  // A tracked file deleted in the work tree is listed but has nothing to check.
  .filter((f) => existsSync(path.join(ROOT, f)))
  .sort()

// Characters as a reader counts them (µ, → and ✔ are one each, though not one UTF-16
// unit); a line of at most MAX UTF-16 units cannot have more, so only longer ones are segmented.
const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' })
const width = (line) => (line.length <= MAX ? line.length : [...graphemes.segment(line)].length)

const long = []
let lines = 0
for (const file of files) {
  const text = readFileSync(path.join(ROOT, file), 'utf8')
  text.split(/\r?\n/).forEach((line, i) => {
    lines++
    const length = width(line)
    if (length > MAX) long.push({ file, line: i + 1, length })
  })
}
if (long.length === 0) {
  console.log(`✔ no line longer than ${MAX} characters (${files.length} files, ${lines} lines)`)
} else {
  for (const l of long) console.error(`✖ ${l.file}:${l.line}: ${l.length} characters, more than ${MAX}`)
  console.error(`${long.length} line(s) too long: wrap them (see the header of scripts/lint-lines.mjs)`)
  process.exit(1)
}
