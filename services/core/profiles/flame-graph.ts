/**
 * Flame graphs as nested sets (depth-first pre-order, root `all`, siblings in
 * byte order): the rows Grafana's flame graph panel reads, plus `x` for the
 * web view and the SVG. Differential ones as Brendan Gregg's, coloured by the
 * change of share in percentage points (docs/design/profiles.md).
 */
import { compareBytes, stackFrames, totalSamples, type Folded } from './folded.js'

export interface FlameRow {
  /** Depth: 0 for the root. */
  level: number
  label: string
  /** Samples of this node and everything it called (inclusive). */
  value: number
  /** Samples where this node was the leaf (exclusive). */
  self: number
  /** Left edge: samples of the tree before this node in pre-order at its level. */
  x: number
}

export interface FlameGraph {
  total: number
  rows: FlameRow[]
}

export interface DiffRow extends FlameRow {
  /** The baseline's inclusive and exclusive samples of this node (value and self are the candidate's). */
  baselineValue: number
  baselineSelf: number
  /** Change of the node's share of all samples from baseline to candidate, percentage points. */
  totalDelta: number
  selfDelta: number
}

export interface DiffFlameGraph {
  /** Candidate samples (the widths). */
  total: number
  baselineTotal: number
  rows: DiffRow[]
  /** Largest |selfDelta| and |totalDelta| over the rows (colour scales). */
  maxSelfDelta: number
  maxTotalDelta: number
}

/** The label of the root row. */
export const ROOT_LABEL = 'all'

interface Node {
  name: string
  /** [inclusive, exclusive] per side: 0 = baseline (or the only profile), 1 = candidate. */
  value: [number, number]
  self: [number, number]
  children: Map<string, Node>
}

const node = (name: string): Node => ({ name, value: [0, 0], self: [0, 0], children: new Map() })

function add(root: Node, stacks: Folded, side: 0 | 1): void {
  for (const [key, count] of stacks) {
    root.value[side] += count
    let n = root
    for (const f of stackFrames(key)) {
      let c = n.children.get(f)
      if (c === undefined) {
        c = node(f)
        n.children.set(f, c)
      }
      c.value[side] += count
      n = c
    }
    n.self[side] += count
  }
}

/** Pre-order walk with siblings in byte order; `width` picks the side whose values place x. */
function walk(root: Node, width: 0 | 1, visit: (n: Node, level: number, x: number) => void): void {
  const stack: Array<[Node, number, number]> = [[root, 0, 0]]
  while (stack.length > 0) {
    const [n, level, x] = stack.pop()!
    visit(n, level, x)
    const kids = [...n.children.values()].sort((a, b) => compareBytes(a.name, b.name))
    let cx = x
    const placed: Array<[Node, number, number]> = []
    for (const k of kids) {
      placed.push([k, level + 1, cx])
      cx += k.value[width]
    }
    for (let i = placed.length - 1; i >= 0; i--) stack.push(placed[i]!)
  }
}

export function flameGraph(stacks: Folded): FlameGraph {
  const root = node(ROOT_LABEL)
  add(root, stacks, 0)
  const rows: FlameRow[] = []
  walk(root, 0, (n, level, x) => rows.push({ level, label: n.name, value: n.value[0], self: n.self[0], x }))
  return { total: root.value[0], rows }
}

export function diffFlameGraph(baseline: Folded, candidate: Folded): DiffFlameGraph {
  const root = node(ROOT_LABEL)
  add(root, baseline, 0)
  add(root, candidate, 1)
  const [ta, tb] = root.value
  const share = (v: number, t: number): number => (t === 0 ? 0 : (v / t) * 100)
  const rows: DiffRow[] = []
  let maxSelfDelta = 0
  let maxTotalDelta = 0
  walk(root, 1, (n, level, x) => {
    const totalDelta = share(n.value[1], tb) - share(n.value[0], ta)
    const selfDelta = share(n.self[1], tb) - share(n.self[0], ta)
    maxSelfDelta = Math.max(maxSelfDelta, Math.abs(selfDelta))
    maxTotalDelta = Math.max(maxTotalDelta, Math.abs(totalDelta))
    rows.push({
      level,
      label: n.name,
      value: n.value[1],
      self: n.self[1],
      x,
      baselineValue: n.value[0],
      baselineSelf: n.self[0],
      totalDelta,
      selfDelta,
    })
  })
  return { total: tb, baselineTotal: ta, rows, maxSelfDelta, maxTotalDelta }
}

export interface FrameChange {
  frame: string
  /** Share of all samples in the baseline and the candidate, percent. */
  baseline: number
  candidate: number
  /** candidate - baseline, percentage points. */
  change: number
  baselineSamples: number
  candidateSamples: number
}

export interface ShareChanges {
  baselineSamples: number
  candidateSamples: number
  /** Frames by the change of their self share (samples where the frame was the leaf), largest |change| first. */
  self: FrameChange[]
  /**
   * Frames by the change of their total share (samples with the frame anywhere on the stack, counted once per stack).
   */
  total: FrameChange[]
}

/**
 * The frames (functions, wherever they are called from) whose share of
 * samples changed most between a baseline and a candidate profile, self and
 * total, in percentage points; at most `limit` of each, unchanged frames
 * left out. Shares, not counts: profiles of different lengths compare.
 */
export function frameShareChanges(baseline: Folded, candidate: Folded, limit = 20): ShareChanges {
  const count = (stacks: Folded): { self: Map<string, number>; total: Map<string, number> } => {
    const self = new Map<string, number>()
    const total = new Map<string, number>()
    for (const [key, n] of stacks) {
      const frames = stackFrames(key)
      const leaf = frames[frames.length - 1]!
      self.set(leaf, (self.get(leaf) ?? 0) + n)
      // Recursion puts a frame on a stack more than once; it counts once.
      for (const f of new Set(frames)) total.set(f, (total.get(f) ?? 0) + n)
    }
    return { self, total }
  }
  const ta = totalSamples(baseline)
  const tb = totalSamples(candidate)
  const a = count(baseline)
  const b = count(candidate)
  const changes = (ma: Map<string, number>, mb: Map<string, number>): FrameChange[] => {
    const out: FrameChange[] = []
    for (const frame of new Set([...ma.keys(), ...mb.keys()])) {
      const na = ma.get(frame) ?? 0
      const nb = mb.get(frame) ?? 0
      const sa = ta === 0 ? 0 : (na / ta) * 100
      const sb = tb === 0 ? 0 : (nb / tb) * 100
      if (sa === sb) continue
      out.push({ frame, baseline: sa, candidate: sb, change: sb - sa, baselineSamples: na, candidateSamples: nb })
    }
    return out.sort((x, y) => Math.abs(y.change) - Math.abs(x.change) || compareBytes(x.frame, y.frame)).slice(0, limit)
  }
  return { baselineSamples: ta, candidateSamples: tb, self: changes(a.self, b.self), total: changes(a.total, b.total) }
}
