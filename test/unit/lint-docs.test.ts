/**
 * The docs check (services/cli/lint-docs.ts, run by npm run lint): broken
 * links, anchors, commands and flags are found and named with their line and
 * the closest valid name; the commands and flags come from the CLI's own
 * definitions.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  checkCodeReferences,
  checkDoc,
  githubSlug,
  headingAnchors,
  type DocContext,
} from '../../services/cli/lint-docs.js'
import { commandLineSpec } from '../../services/cli/main.js'

const files: Record<string, string> = {
  'docs/guide.md': "# Guide\n\n## YCSB's properties in `benchstream run`/`load`\n\n## Same\n\n## Same\n",
  'docs/other.txt': 'x',
  'workloads/workloada': 'recordcount=1000\n',
  'services/processor/partition-worker.ts':
    'export class PartitionWorker {\n  private async flush(): Promise<void> {}\n  readonly stats = 1\n}\n',
  'services/processor/app.ts': 'export function build(): void {}\n',
  'services/core/stats/windows.ts': 'export const WINDOW_MS = 1000\n',
  'schemas/clickhouse/0001-tables.sql': 'CREATE TABLE IF NOT EXISTS {db}.op_windows (x UInt8)\n',
  'bench/accuracy.ts': '',
  'deploy/local/kafka.sh': '',
  'deploy/local/lib.sh': '',
  'web/live-view/live-view.ts': '',
}

async function ctx(): Promise<DocContext> {
  return {
    spec: await commandLineSpec(),
    exists: (f) => Object.hasOwn(files, f) || Object.keys(files).some((k) => k.startsWith(`${f.replace(/\/$/, '')}/`)),
    read: (f) => files[f] ?? '',
    files: () => Object.keys(files),
  }
}

const messages = async (text: string): Promise<string[]> =>
  checkDoc('docs/page.md', text, await ctx()).problems.map((p) => `${p.line}: ${p.message}`)

test('anchors are slugged as GitHub does, repeated headings numbered', () => {
  assert.equal(githubSlug("YCSB's properties in `benchstream run`/`load`"), 'ycsbs-properties-in-benchstream-runload')
  assert.equal(githubSlug('CPU profiles: why it got slower'), 'cpu-profiles-why-it-got-slower')
  assert.equal(githubSlug('HBase: release A vs release B'), 'hbase-release-a-vs-release-b')
  assert.deepEqual(
    [...headingAnchors(files['docs/guide.md']!)],
    ['guide', 'ycsbs-properties-in-benchstream-runload', 'same', 'same-1'],
  )
  assert.deepEqual([...headingAnchors('```sh\n# not a heading\n```\n# Real\n')], ['real'])
})

test('links resolve to files and headings; absolute URLs and code are not links', async () => {
  assert.deepEqual(
    await messages(
      '[ok](guide.md) [ok](guide.md#same-1) [ok](../docs/) [web](https://example.com/x.md) `[code](nope.md)`\n' +
        '[bad](nope.md)\n' +
        '[bad anchor](guide.md#properties)\n' +
        '[not md](other.txt#x)\n' +
        '[outside](../../x.md)\n' +
        '[ref]: missing.md\n',
    ),
    [
      '2: link nope.md: no file docs/nope.md',
      '3: link guide.md#properties: docs/guide.md has no heading #properties; the closest valid one is #guide',
      '4: link other.txt#x: an anchor into docs/other.txt, which is not Markdown',
      '5: link ../../x.md: no file ../x.md',
      '6: link missing.md: no file docs/missing.md',
    ],
  )
})

test('benchstream command lines name known commands and flags, with the closest valid one', async () => {
  const text = [
    'Inline: `npx benchstream run -P workloads/workloada -threads 8 --seconds 60` is fine,',
    'and so are `benchstream help thresholds`, `benchstream ycsb --run-id r -- run -db redis -threads 4` and',
    '`npx benchstream profile capture --pid P [--event cpu\\|wall]`.',
    '',
    '```sh',
    'npx benchstream run -P workloads/workloada --threads 8',
    'for k in 1 2; do npx benchstream compare a b --fromat markdown; done',
    'npx benchstream sql "SELECT --not-a-flag" | less',
    'npx benchstream profile capture --pid "$(pgrep -f kafka)" \\',
    '  --evnt cpu',
    'npx benchstream rnu -P x',
    '```',
    '',
    'And `benchstream help tresholds` and `benchstream profile atach --run-id R`, ' +
      '`benchstream sweep -threads 1,2 --outdir r`.',
  ].join('\n')
  assert.deepEqual(await messages(text), [
    '6: unknown flag --threads for benchstream run; the closest valid one is -threads',
    '7: unknown flag --fromat for benchstream compare; the closest valid one is --format',
    '9: unknown flag --evnt for benchstream profile capture; the closest valid one is --event',
    '11: unknown command benchstream rnu; the closest valid one is run',
    '14: benchstream help tresholds: no such command or help topic; the closest valid one is thresholds',
    '14: unknown command benchstream profile atach; the closest valid one is attach',
    '14: unknown flag --outdir for benchstream sweep; the closest valid one is --out',
  ])
})

test('paths into docs/ named in code comments exist, anchors included', async () => {
  const code = '/**\n * Why: docs/guide.md#same-1, docs/guide.md.\n * See docs/gone.md and docs/guide.md#nope.\n */\n'
  const r = checkCodeReferences('services/x.ts', code, await ctx())
  assert.equal(r.links, 4)
  assert.deepEqual(
    r.problems.map((p) => `${p.file}:${p.line}: ${p.message}`),
    [
      'services/x.ts:3: docs/gone.md: no file docs/gone.md',
      'services/x.ts:3: docs/guide.md#nope: docs/guide.md has no heading #nope; the closest valid one is #same',
    ],
  )
})

test('source paths and symbols a doc names exist: a pattern matches a file, a symbol is declared there', async () => {
  const text = [
    "Exactly once lives in `services/processor/partition-worker.ts`, its class `partition-worker.ts`'s",
    "`PartitionWorker` and method `services/processor/partition-worker.ts`'s `flush()`;",
    'the benchmark `bench/accuracy`,',
    'the tables `schemas/clickhouse/NNNN-*.sql`, the scripts `deploy/local/*.sh` and `deploy/local/{kafka,lib}.sh`,',
    "the page `web/live-view/live-view.{ts,css}` and `services/.../windows.ts`; YCSB's own `bin/bindings.properties`.",
    '',
    '```sh',
    'bash deploy/local/kafka.sh start && npx benchstream run -P workloads/workloada',
    'bash deploy/local/clickhouse.sh start',
    '```',
    '',
    "Gone: `services/processor/exactly-once.ts`, `services/processor/app.ts`'s `PartitionWorker`, `windows.ts`'s",
    "`WINDOW_MS`, `gone.ts`'s `x`, `schemas/clickhouse/NNNN-views.sql`, `deploy/local/{kafka,hbase}.sh`.",
  ].join('\n')
  assert.deepEqual(await messages(text), [
    '5: web/live-view/live-view.{ts,css}: no file web/live-view/live-view.css; ' +
      'the closest is web/live-view/live-view.ts',
    '9: deploy/local/clickhouse.sh: no file deploy/local/clickhouse.sh; the closest is deploy/local/lib.sh',
    '12: services/processor/exactly-once.ts: no file services/processor/exactly-once.ts; the closest is ' +
      'services/processor/app.ts',
    "12: services/processor/app.ts's PartitionWorker: services/processor/app.ts declares no PartitionWorker",
    '13: schemas/clickhouse/NNNN-views.sql: no file matches schemas/clickhouse/NNNN-views.sql',
    '13: deploy/local/{kafka,hbase}.sh: no file deploy/local/hbase.sh; the closest is deploy/local/kafka.sh',
    "13: gone.ts's x: no file gone.ts",
  ])
})

test("the allowed flags are the parsers' own definitions", async () => {
  const spec = await commandLineSpec()
  const flags = (c: string): readonly string[] => spec.commands[c] as readonly string[]
  assert.ok(flags('run').includes('-threads') && flags('run').includes('--max-schedule-lag'))
  assert.ok(
    flags('demo').includes('--system') && flags('server').includes('--no-api') && flags('server').includes('-h'),
  )
  assert.ok(flags('sweep').includes('--out') && !flags('sweep').includes('--run-id'))
  assert.ok(flags('ycsb').includes('--server-metrics') && flags('import-ycsb').includes('--follow'))
  const profile = spec.commands.profile as Readonly<Record<string, readonly string[]>>
  assert.deepEqual(Object.keys(profile).sort(), ['attach', 'capture', 'list'])
  assert.ok(profile.capture!.includes('--pid') && !profile.list!.includes('--pid'))
  assert.ok(spec.topics.includes('thresholds') && spec.global.includes('--debug'))
})
