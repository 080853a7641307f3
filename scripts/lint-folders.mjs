#!/usr/bin/env node
// Second pass of the import map check (npm run lint): the import map with files collapsed into
// their folders (services/<service>/, services/core/<domain>/,
// services/adapters/<infra>/, schemas/, web/src/<page>/). Any cycle between folders, such as
// a two-way pair A -> B -> A, fails. dependency-cruiser validates its rules
// on files, before collapsing, so the folder graph is checked here.
import { execFileSync } from 'node:child_process'

const COLLAPSE = '^services/(core|adapters)/[^/]+/|^services/[^/]+/|^schemas/|^web/src/[^/]+/'
const text = execFileSync(
  'npx',
  [
    'depcruise',
    'services',
    'schemas',
    'web',
    '--config',
    '.dependency-cruiser.cjs',
    '--collapse',
    COLLAPSE,
    '-T',
    'text',
  ],
  { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
)
const edges = new Map()
for (const line of text.split('\n')) {
  const m = /^(\S+) → (\S+)$/.exec(line.trim())
  if (m === null) continue
  const [, from, to] = m
  const ours = (p) => p.startsWith('services/') || p.startsWith('schemas/') || p.startsWith('web/')
  if (!ours(from) || !ours(to) || from === to) continue
  if (!edges.has(from)) edges.set(from, new Set())
  edges.get(from).add(to)
}
// Tarjan's strongly connected components: a component of two or more folders is a cycle.
let index = 0
const idx = new Map(),
  low = new Map(),
  onStack = new Set(),
  stack = [],
  cycles = []
const visit = (v) => {
  idx.set(v, index)
  low.set(v, index)
  index++
  stack.push(v)
  onStack.add(v)
  for (const w of edges.get(v) ?? []) {
    if (!idx.has(w)) {
      visit(w)
      low.set(v, Math.min(low.get(v), low.get(w)))
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)))
  }
  if (low.get(v) === idx.get(v)) {
    const comp = []
    let w
    do {
      w = stack.pop()
      onStack.delete(w)
      comp.push(w)
    } while (w !== v)
    if (comp.length > 1) cycles.push(comp.sort((a, b) => a.localeCompare(b)))
  }
}
for (const v of edges.keys()) if (!idx.has(v)) visit(v)
const folders = new Set([...edges.keys(), ...[...edges.values()].flatMap((s) => [...s])])
if (cycles.length === 0) {
  console.log(
    `✔ no folder imports another that imports it back (${folders.size} ` +
      `folders, ${[...edges.values()].reduce((a, s) => a + s.size, 0)} ` +
      `folder arrows)`,
  )
} else {
  for (const c of cycles) {
    console.error(`✖ these folders import each other: ${c.join(' ⇄ ')}`)
    for (const a of c) for (const b of edges.get(a) ?? []) if (c.includes(b)) console.error(`    ${a} → ${b}`)
  }
  process.exit(1)
}
