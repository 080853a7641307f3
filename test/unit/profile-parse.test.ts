/**
 * Profile files as the real tools wrote them: async-profiler 4.6 collapsed
 * stacks of a Kafka broker (test/fixtures/profiles/async-profiler-4.6), and
 * `perf script` text collapsed by our port of stackcollapse-perf.pl,
 * compared byte for byte with what the Perl script itself wrote
 * (test/fixtures/profiles/perf-script, FlameGraph 41fee1f, our recordings
 * and FlameGraph's own test input and expected results). Malformed input is
 * a BS_ERR_DECODE naming the file, the line and what was expected.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { formatFolded, normalizeHiddenClasses, parseFolded } from '../../services/core/profiles/folded.js'
import { collapsePerfScript, perfOptions, type PerfOption } from '../../services/core/profiles/perf-script.js'
import { parseProfileFile } from '../../services/core/profiles/profile.js'

const FIXTURES = path.join(repoRoot(), 'test', 'fixtures', 'profiles')
const read = (rel: string): string => readFileSync(path.join(FIXTURES, rel), 'utf8')

test('async-profiler 4.6 collapsed files: lines, distinct stacks and samples as the profiler wrote them', () => {
  // (file, lines, distinct stacks, samples): the fixture README's table.
  const expected: Array<[string, number, number, number]> = [
    ['kafka-broker-cpu-10ms.collapsed', 140, 131, 170],
    ['kafka-broker-itimer-10ms.collapsed', 97, 94, 247],
    ['kafka-broker-wall-50ms-threads.collapsed', 139, 139, 9872],
    ['kafka-broker-cpu-1ms-threads-ann.min2.collapsed', 173, 171, 715],
  ]
  for (const [file, lines, distinct, samples] of expected) {
    const text = read(`async-profiler-4.6/${file}`)
    const r = parseFolded(text, file)
    assert.deepEqual([r.lines, r.stacks.size, r.samples], [lines, distinct, samples], file)
    // The same through format detection.
    const p = parseProfileFile(text, file)
    assert.equal(p.format, 'collapsed', file)
    assert.equal(p.samples, samples, file)
  }
})

test(
  'frames with spaces, commas and <> keep them; the count is what follows the last space; equal ' + 'stacks are summed',
  () => {
    const r = parseFolded(read('async-profiler-4.6/kafka-broker-cpu-10ms.collapsed'), 'cpu-10ms')
    const gc = [
      'clone3',
      'start_thread',
      'thread_native_entry',
      'Thread::call_run',
      'GangWorker::run',
      'GangWorker::loop',
      'G1EvacuateRegionsBaseTask::work',
      'G1EvacuateRegionsTask::scan_roots',
      'G1RemSet::scan_heap_roots',
      'G1ScanHRForRegionClosure::scan_heap_roots',
      'void OopOopIterateDispatch<G1ScanCardClosure>::Table::oop_oop_iterate<InstanceKlass, narrowOop>',
    ].join(';')
    assert.equal(r.stacks.get(gc), 2)
    // A stack written on several lines (140 lines, 131 distinct): its lines' counts add up.
    const lines = read('async-profiler-4.6/kafka-broker-cpu-10ms.collapsed').trimEnd().split('\n')
    const byStack = new Map<string, number[]>()
    for (const l of lines) {
      const sp = l.lastIndexOf(' ')
      byStack.set(l.slice(0, sp), [...(byStack.get(l.slice(0, sp)) ?? []), Number(l.slice(sp + 1))])
    }
    const repeated = [...byStack].filter(([, counts]) => counts.length > 1)
    assert.ok(repeated.length > 0)
    for (const [stack, counts] of repeated)
      assert.equal(
        r.stacks.get(stack),
        counts.reduce((a, b) => a + b, 0),
      )
    // Kernel frames carry _[k] in cpu mode; Java frames use / as the package separator.
    assert.ok([...r.stacks.keys()].some((k) => k.includes('finish_task_switch.isra.0_[k]')))
    let kafka = 0
    for (const [k, n] of r.stacks) if (/(^|;)(kafka|org\/apache\/kafka)\//.test(k)) kafka += n
    // 163 of 170 samples are on a stack with a kafka/ or org/apache/kafka/ frame (counted from the file).
    assert.equal(kafka, 163)
  },
)

test('JVM hidden-class addresses are removed so runs compare; stacks that become equal merge', () => {
  const r = parseFolded(read('async-profiler-4.6/kafka-broker-cpu-10ms.collapsed'), 'cpu-10ms')
  const lambda = [...r.stacks.keys()].find((k) =>
    k.includes('kafka/network/Processor$$Lambda$716.0x00007f75cc3871a8.accept'),
  )
  assert.ok(lambda !== undefined)
  const n = normalizeHiddenClasses(r.stacks)
  assert.ok(n.changed > 0)
  assert.ok([...n.stacks.keys()].some((k) => k.includes('kafka/network/Processor$$Lambda.accept;')))
  assert.ok(![...n.stacks.keys()].some((k) => /\.0x[0-9a-f]{6,}/.test(k)))
  assert.equal(
    [...n.stacks.values()].reduce((a, b) => a + b, 0),
    170,
    'no sample lost',
  )
})

test('perf script collapses exactly as stackcollapse-perf.pl: every expected output, byte for byte', () => {
  const cases: Array<[input: string, expected: string, options: PerfOption[]]> = []
  for (const base of ['fpdemo', 'burn-java-fp']) {
    cases.push([`perf-script/${base}.perf-script.txt`, `perf-script/${base}.collapsed.txt`, []])
    for (const o of ['all', 'pid', 'tid'] as const)
      cases.push([`perf-script/${base}.perf-script.txt`, `perf-script/${base}.collapsed-${o}.txt`, [o]])
  }
  // FlameGraph's own test: test.sh runs stackcollapse-perf.pl --<opt> for each of these.
  for (const o of ['pid', 'tid', 'kernel', 'jit', 'all', 'addrs'] as const) {
    cases.push([
      'perf-script/flamegraph-test/perf-dd-stacks-01.txt',
      `perf-script/flamegraph-test/results/perf-dd-stacks-01-collapsed-${o}.txt`,
      [o],
    ])
  }
  for (const [input, expected, options] of cases) {
    const r = collapsePerfScript(read(input), input, perfOptions(options))
    assert.equal(formatFolded(r.stacks), read(expected), `${input} ${options.join(' ')} vs ${expected}`)
  }
  assert.equal(cases.length, 14)
})

test(
  'perf script: periods are summed, the first event is kept, the process name leads, offsets and ' +
    'signatures are cut',
  () => {
    const fp = collapsePerfScript(read('perf-script/fpdemo.perf-script.txt'), 'fpdemo')
    assert.equal(fp.samples, 110)
    assert.equal(fp.event, 'cpu-clock:ppp')
    // 48 samples at -F 99: each counts its period, 10101010 ns.
    assert.equal(fp.stacks.get('hasher;start_thread;hasher;compute_loop;mix'), 484848480)
    const burn = collapsePerfScript(read('perf-script/burn-java-fp.perf-script.txt'), 'burn', perfOptions(['all']))
    assert.equal(burn.samples, 21)
    assert.ok(
      [...burn.stacks.keys()].some((k) => k.includes('long Burn.work_[j]')),
      'signature cut at "(", JIT frame marked',
    )
    assert.ok(
      [...burn.stacks.keys()].some((k) => k.includes('StubRoutines _[j]')),
      '"StubRoutines (1)" keeps its space',
    )
    const detected = parseProfileFile(read('perf-script/fpdemo.perf-script.txt'), 'fpdemo')
    assert.equal(detected.format, 'perf-script')
    assert.equal(detected.event, 'cpu-clock:ppp')
  },
)

test('a last perf sample without a blank line after it is not counted, and the importer says so', () => {
  const text = read('perf-script/fpdemo.perf-script.txt').replace(/\n+$/, '\n')
  const r = collapsePerfScript(text, 'cut')
  assert.equal(r.samples, 109)
  assert.equal(r.droppedUnterminated, true)
  const p = parseProfileFile(text, 'cut')
  assert.match(p.notes.join(' '), /last sample had no blank line/)
})

function decodeFails(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isBenchstreamError(err, 'BS_ERR_DECODE'), `expected BS_ERR_DECODE, got ${String(err)}`)
    for (const p of patterns) assert.match(err.message, p)
    return true
  })
}

test('malformed files: BS_ERR_DECODE naming the file, the line and what was expected', () => {
  const good = read('async-profiler-4.6/kafka-broker-itimer-10ms.collapsed').split('\n')
  // A line cut before its count (line 5).
  const cut = [...good.slice(0, 4), good[4]!.slice(0, good[4]!.lastIndexOf(' ')), ...good.slice(5)].join('\n')
  decodeFails(
    () => parseProfileFile(cut, 'broker.collapsed'),
    /^broker\.collapsed:5: /,
    /is not a whole number of samples|has no count/,
    /expected a folded stack line "frame;frame;\.\.\.;frame COUNT"/,
  )
  decodeFails(
    () => parseProfileFile('main;work 12.5\n', 'f.txt'),
    /^f\.txt:1: the count "12\.5" is not a whole number of samples/,
  )
  decodeFails(() => parseProfileFile('just-a-word\n', 'w.txt'), /^w\.txt:1: "just-a-word" has no count/)
  decodeFails(
    () => parseProfileFile('', 'empty.txt'),
    /^empty\.txt:1: the file is empty; expected folded stacks or `perf script` output/,
  )
  decodeFails(() => parseProfileFile('a;b 1\n\0\0\0 2\n', 'bin'), /^bin:2: the line has a NUL byte/)
  decodeFails(
    () => parseProfileFile(`a;${'x'.repeat(5000)} 1\n`, 'long'),
    /^long:1: frame 2 is 5000 characters long; at most 4096/,
  )
  decodeFails(
    () => parseProfileFile(`${Array.from({ length: 5000 }, () => 'f').join(';')} 1\n`, 'deep'),
    /^deep:1: the stack has 5000 frames; at most 4096/,
  )
  // perf script with a line that is none of header, frame, comment or blank (line 3).
  const perf = read('perf-script/fpdemo.perf-script.txt').split('\n')
  perf.splice(2, 0, 'garbage!')
  decodeFails(
    () => parseProfileFile(perf.join('\n'), 'perf.txt'),
    /^perf\.txt:3: "garbage!" is not a perf script line; expected a sample header/,
  )
  decodeFails(() => parseProfileFile('# only a comment\n\tnothing else\n', 'p2'), /^p2:2: .*is not a perf script line/)
})
