/**
 * Experiment plans (services/core/experiments/plan.ts checkPlan): the example
 * plan as the CLI reads it is accepted; each kind of mistake is refused with
 * BS_ERR_PLAN, a line naming the field and what is allowed, and every problem
 * of a plan at once. The defaults a plan leaves out.
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { test } from 'node:test'
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import { experimentMain, readPlanFile } from '../../services/cli/experiment.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { checkPlan, comparePairs, loadMode, workloadName } from '../../services/core/experiments/plan.js'
import { PE_COMMANDS } from '../../services/core/pe/pe-tests.js'

const EXAMPLE = path.join(repoRoot(), 'experiments', 'memory-ab.yaml')

/** The example plan as the CLI reads it, as a plain object to spoil. */
const example = (): Record<string, unknown> & Plan => structuredClone(readPlanFile(EXAMPLE))

/** The problem lines of a refused plan (after the "is not a valid plan" line). */
function problems(value: unknown): string[] {
  try {
    checkPlan(value, 'plan.yaml')
  } catch (err) {
    assert.ok(isBenchstreamError(err, 'BS_ERR_PLAN'), String(err))
    const [head, ...lines] = err.message.split('\n')
    assert.equal(head, 'plan.yaml is not a valid plan:')
    return lines.map((l) => l.trim())
  }
  assert.fail('the plan was accepted')
}

/** A plan changed by `f`, refused with exactly one problem, which matches every pattern. */
function refusedWith(f: (p: Record<string, unknown> & Plan) => void, ...patterns: RegExp[]): string {
  const p = example()
  f(p)
  const lines = problems(p)
  assert.equal(lines.length, 1, lines.join('\n'))
  for (const re of patterns) assert.match(lines[0]!, re)
  return lines[0]!
}

test('the example plan (experiments/memory-ab.yaml) is accepted as the CLI reads it', () => {
  const plan = readPlanFile(EXAMPLE)
  assert.equal(plan.name, 'memory-ab')
  assert.equal(plan.binding, 'memory')
  assert.equal(plan.clients, 3)
  assert.deepEqual(
    plan.setups.map((s) => s.name),
    ['A', 'B'],
  )
  assert.equal(plan.setups[1]!.properties!['memory.delay.scan'], 10_000)
  // Checking is idempotent: what came out goes in again.
  assert.deepEqual(checkPlan(structuredClone(plan), 'again'), plan)
})

test('an unknown field is refused, naming it and listing the allowed fields', () => {
  const line = refusedWith((p) => (p.repetiton = 3), /^repetiton: is not a field of an experiment plan/)
  const allowed = /allowed fields: (.*)$/.exec(line)?.[1]?.split(', ')
  for (const f of ['version', 'name', 'binding', 'clients', 'repetitions', 'seconds', 'setups', 'compare'])
    assert.ok(allowed?.includes(f), `${f} in ${line}`)
  // Nested: the setup's own fields are listed, not the plan's.
  const nested = refusedWith((p) => Object.assign(p.setups[0]!, { colour: 'red' }), /^setups\[0\]\.colour: /)
  assert.match(nested, /allowed fields: name, labels, properties, profile, serverMetrics, steps$/)
})

test('a wrong type names the field, what it got and what is allowed', () => {
  refusedWith((p) => Object.assign(p, { threads: 'two' }), /^threads: got "two"; allowed: .*1 to 1024/)
  refusedWith((p) => Object.assign(p, { order: 'random' }), /^order: got "random"; allowed: interleaved .* grouped/)
  refusedWith((p) => Object.assign(p, { repetitions: 0 }), /^repetitions: got 0; allowed: .*1 to 100/)
})

test('a missing required field is named with what it allows', () => {
  refusedWith((p) => delete (p as Partial<Plan>).binding, /^binding: is missing; allowed: the binding/)
  refusedWith((p) => delete (p as Partial<Plan>).setups, /^setups: is missing; allowed: one to 16 setups/)
})

test('setup names are unique', () => {
  const p = example()
  p.setups[1]!.name = 'A'
  p.compare = []
  assert.deepEqual(problems(p), ['setups[1].name: setup "A" is given twice (also setups[0].name)'])
})

test('a compare pair naming no setup is refused, with "did you mean" and the setups', () => {
  refusedWith(
    (p) => (p.compare = [{ baseline: 'A', candidate: 'b' }]),
    /^compare\[0\]\.candidate: no setup is named "b"; did you mean B\?; setups: A, B$/,
  )
  // Nothing close: no guess, still the list.
  refusedWith(
    (p) => (p.compare = [{ baseline: 'release-2.6', candidate: 'B' }]),
    /^compare\[0\]\.baseline: no setup is named "release-2\.6"; setups: A, B$/,
  )
  refusedWith((p) => (p.compare = [{ baseline: 'B', candidate: 'B' }]), /^compare\[0\]: a setup compared with itself/)
})

test('a run has a length in seconds or operations: both or neither is refused', () => {
  const both = refusedWith((p) => (p.operations = 10_000), /^seconds, operations: give exactly one/)
  const neither = refusedWith((p) => delete p.seconds, /^seconds, operations: give exactly one/)
  assert.equal(both, neither)
  refusedWith((p) => {
    delete p.seconds
    p.operations = 2
  }, /^operations: 2 operations cannot be split over 3 clients$/)
})

test('driver ycsb with the memory binding is refused: YCSB has no memory binding', () => {
  refusedWith((p) => (p.driver = 'ycsb'), /^binding: memory is Benchstream's own binding; YCSB .* has no memory/)
  const p = example()
  p.driver = 'ycsb'
  p.binding = 'hbase'
  assert.equal(checkPlan(p, 'plan.yaml').driver, 'ycsb')
})

test('a readiness check must name what to wait for', () => {
  refusedWith(
    (p) => (p.setups[1]!.steps = { start: { agent: 'a1', command: 'hbase', ready: { timeoutS: 30 } } }),
    /^setups\[1\]\.steps\.start\.ready: name what to wait for: tcp, http or command$/,
  )
  const p = example()
  p.setups[1]!.steps = { start: { agent: 'a1', command: 'hbase', ready: { tcp: '127.0.0.1:16000' } } }
  assert.equal(checkPlan(p, 'plan.yaml').setups[1]!.steps!.start!.ready!.tcp, '127.0.0.1:16000')
})

test('several problems are all listed, each on its line', () => {
  // The schema's problems together...
  const p = example()
  delete (p as Partial<Plan>).name
  p.colour = 'red'
  p.threads = 0
  const schema = problems(p)
  assert.equal(schema.length, 3, schema.join('\n'))
  assert.match(schema.find((l) => l.startsWith('name:')) ?? '', /is missing/)
  assert.match(schema.find((l) => l.startsWith('colour:')) ?? '', /is not a field/)
  assert.match(schema.find((l) => l.startsWith('threads:')) ?? '', /got 0/)
  // ... and, in a plan of the right shape, the rules a schema cannot say.
  const q = example()
  q.driver = 'ycsb'
  q.operations = 100
  q.setups[1]!.name = 'A'
  const rules = problems(q)
  assert.deepEqual(
    rules.map((l) => l.split(':')[0]),
    ['setups[1].name', 'compare[0].candidate', 'seconds, operations', 'binding'],
  )
})

test('defaults: compare pairs, load mode, workload names', () => {
  const p = example()
  delete p.compare
  p.setups.push({ name: 'C' })
  assert.deepEqual(comparePairs(p), [
    { baseline: 'A', candidate: 'B' },
    { baseline: 'A', candidate: 'C' },
  ])
  p.compare = [{ baseline: 'C', candidate: 'B' }]
  assert.deepEqual(comparePairs(p), [{ baseline: 'C', candidate: 'B' }])
  p.compare = []
  assert.deepEqual(comparePairs(p), [])

  assert.equal(loadMode(p), 'none', 'memory loads itself')
  assert.equal(loadMode({ ...p, binding: 'redis' }), 'setup')
  assert.equal(loadMode({ ...p, binding: 'redis', load: 'run' }), 'run')
  assert.equal(loadMode({ ...p, load: 'setup' }), 'setup')

  assert.equal(workloadName({ file: 'workloads/workloada' }), 'workloada')
  assert.equal(workloadName({ file: 'workloadc' }), 'workloadc')
  assert.equal(workloadName({ file: 'workloads/workloada', name: 'reads' }), 'reads')
})

test('one setup without compare has nothing to compare; compare: [] runs it alone', () => {
  const p = example()
  p.setups.pop()
  delete p.compare
  assert.match(problems(p)[0]!, /^setups: one setup has nothing to be compared with; .*compare: \[\]/)
  p.compare = []
  assert.equal(checkPlan(p, 'plan.yaml').setups.length, 1)
})

test('experiment run --id: of the id rule, checked before anything runs (it names runs and a folder)', async () => {
  for (const id of ['x'.repeat(65), '../../etc', 'a b', '.hidden'])
    await assert.rejects(
      experimentMain(['run', EXAMPLE, '--id', id]),
      (e: unknown) =>
        isBenchstreamError(e, 'BS_ERR_USAGE') &&
        e.message.startsWith(`--id ${JSON.stringify(id)} is not allowed: 1-64 characters`),
      id,
    )
})

test('driver pe (experiments/hbase-pe.yaml): accepted; its workloads are PE tests, its runs rows split evenly', () => {
  const file = path.join(repoRoot(), 'experiments', 'hbase-pe.yaml')
  const pe = (): Record<string, unknown> & Plan => structuredClone(readPlanFile(file))
  const plan = pe()
  assert.equal(plan.driver, 'pe')
  assert.deepEqual(checkPlan(structuredClone(plan), 'again'), plan)
  const lines = (f: (p: Record<string, unknown> & Plan) => void): string[] => {
    const p = pe()
    f(p)
    return problems(p)
  }
  assert.deepEqual(
    lines((p) => (p.workloads = [{ file: 'randomReed' }])),
    [
      'workloads[0].file: "randomReed" is not one of PE\'s tests; did you mean randomRead?; driver pe runs ' +
        PE_COMMANDS.join(', '),
    ],
  )
  assert.match(
    lines((p) => {
      delete p.operations
      p.seconds = 10
    })[0]!,
    /^seconds: PE runs a number of rows, not a time: give operations/,
  )
  assert.deepEqual(
    lines((p) => (p.operations = 2001)),
    [
      'operations: 2001 rows do not split evenly over 1 agents x 2 PE clients (threads); PE gives each client ' +
        'the same --rows: give a multiple of 2',
    ],
  )
  assert.match(lines((p) => (p.target = 100))[0]!, /^target: PE runs unthrottled/)
  const noLoad = lines((p) => delete p.setups[1]!.steps!.load)
  assert.equal(noLoad.length, 1)
  assert.match(noLoad[0]!, /^setups\[1\]\.steps\.load: driver pe has no load phase of its own/)
  // With the table there already: load: none and no load steps.
  const none = pe()
  none.load = 'none'
  for (const s of none.setups) delete s.steps!.load
  assert.equal(checkPlan(none, 'none').load, 'none')
})
