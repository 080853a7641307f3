/**
 * The docs check, run by `npm run lint` (compiled: node dist/services/cli/lint-docs.js):
 *  - every relative link in README.md and docs/ (docFiles()) resolves to a file or folder of the repository, and a
 *    `#anchor` into a Markdown file (or the same file) to one of its headings, slugged as GitHub does;
 *  - every `benchstream ...` / `npx benchstream ...` command line in them, in code blocks and in inline code, names a
 *    command the CLI has (services/cli/main.ts) and only flags that command's parser defines (commandLineSpec());
 *  - every path into docs/ named in services/ and schemas/ (comments point there) exists, anchor included.
 * Each problem is one line: file:line, what is wrong, and the closest valid name. Exit code 1 when there is any.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { repoRoot } from '../common/repo-root.js'
import { editDistance } from '../core/suggest.js'
import { commandLineSpec, type CommandLineSpec } from './main.js'

/** The Markdown files checked: the README and everything under docs/. */
export function docFiles(root = repoRoot()): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(root, dir), { withFileTypes: true })
      .flatMap((e) =>
        e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.md') ? [path.join(dir, e.name)] : [],
      )
      .sort()
  return ['README.md', ...(existsSync(path.join(root, 'docs')) ? walk('docs') : [])]
}

export interface DocProblem {
  file: string
  line: number
  message: string
}

/** What a file's check found, and how much it checked. */
export interface DocReport {
  problems: DocProblem[]
  /** Relative links checked. */
  links: number
  /** `benchstream ...` command lines checked. */
  commands: number
}

/** What the check needs to know about the repository besides the file at hand. */
export interface DocContext {
  spec: CommandLineSpec
  /** Whether a path (relative to the repository root, `/`-separated) exists. */
  exists: (file: string) => boolean
  /** The text of a Markdown file of the repository (for its headings). */
  read: (file: string) => string
}

/** The valid name nearest to `input` (edit distance, dashes and case ignored). */
function nearest(input: string, candidates: Iterable<string>): string | undefined {
  const norm = (s: string): string => s.replace(/^-+/, '').toLowerCase()
  let best: string | undefined
  let bestD = Infinity
  for (const c of candidates) {
    const d = editDistance(norm(input), norm(c))
    if (d < bestD) [best, bestD] = [c, d]
  }
  return best
}

const suggest = (input: string, candidates: Iterable<string>): string => {
  const n = nearest(input, candidates)
  return n === undefined ? '' : `; the closest valid one is ${n}`
}

/**
 * The text with fenced code blocks and inline code spans blanked (same length and line breaks), and the code found:
 * each fenced block's lines and each inline span, with the offset where it starts.
 */
function splitCode(text: string): {
  /** The text without its fenced code blocks. */
  unfenced: string
  /** The text without fenced code blocks and inline code spans. */
  prose: string
  fences: Array<{ offset: number; lines: string[] }>
  spans: Array<{ offset: number; code: string }>
} {
  const blank = (s: string): string => s.replace(/[^\n]/g, ' ')
  let prose = ''
  const fences: Array<{ offset: number; lines: string[] }> = []
  let fence: { marker: string; offset: number; lines: string[] } | undefined
  let offset = 0
  for (const line of text.split('\n')) {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line)
    if (fence === undefined && m !== null) {
      fence = { marker: m[1]!, offset: offset + line.length + 1, lines: [] }
      prose += blank(line) + '\n'
    } else if (fence !== undefined) {
      if (m !== null && m[1]!.startsWith(fence.marker) && line.trim() === m[1]) {
        fences.push({ offset: fence.offset, lines: fence.lines })
        fence = undefined
      } else fence.lines.push(line)
      prose += blank(line) + '\n'
    } else prose += line + '\n'
    offset += line.length + 1
  }
  const unfenced = prose.slice(0, text.length)
  const spans: Array<{ offset: number; code: string }> = []
  // An inline code span: a run of backticks, then anything up to the same run, within one paragraph.
  prose = unfenced.replace(
    /(`+)((?:(?!\n[ \t]*\n)[\s\S])*?[^`])\1(?!`)/g,
    (all: string, ticks: string, code: string, at: number) => {
      spans.push({ offset: at + ticks.length, code })
      return blank(all)
    },
  )
  return { unfenced, prose, fences, spans }
}

/** GitHub's anchor of a heading: rendered text, lower case, punctuation but `-` and `_` removed, spaces as `-`. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/\*+/g, '')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
}

/** The anchors of a Markdown file's headings (a repeated heading gets -1, -2, ... as on GitHub). */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const line of splitCode(markdown).unfenced.split('\n')) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (m === null) continue
    const slug = githubSlug(m[1]!)
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    anchors.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return anchors
}

const lineAt = (text: string, offset: number): number => text.slice(0, offset).split('\n').length

/** What is wrong with a link to `resolved` (relative to the repository root) and `#anchor`, if anything. */
function targetProblem(
  resolved: string,
  anchor: string | undefined,
  ctx: DocContext,
  text = resolved.endsWith('.md') && ctx.exists(resolved) ? ctx.read(resolved) : '',
): string | undefined {
  if (resolved.startsWith('../') || !ctx.exists(resolved)) return `no file ${resolved}`
  if (anchor === undefined) return undefined
  if (!resolved.endsWith('.md')) return `an anchor into ${resolved}, which is not Markdown`
  const anchors = headingAnchors(text)
  if (anchors.has(anchor)) return undefined
  return `${resolved} has no heading #${anchor}${suggest(
    anchor,
    [...anchors].map((a) => `#${a}`),
  )}`
}

/** Relative links: `[text](target)` and `[name]: target`, outside code. */
function checkLinks(file: string, text: string, prose: string, ctx: DocContext): DocReport {
  const problems: DocProblem[] = []
  const links: Array<{ target: string; at: number }> = []
  for (const m of prose.matchAll(/\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+"[^"]*")?\s*\)/g))
    links.push({ target: m[1]!, at: m.index })
  for (const m of prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm))
    links.push({ target: m[1]!, at: m.index })
  let checked = 0
  for (const { target, at } of links) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue
    checked++
    const line = lineAt(text, at)
    const hash = target.indexOf('#')
    const rel = decodeURIComponent(hash === -1 ? target : target.slice(0, hash))
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1))
    const resolved = rel === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), rel))
    const message = targetProblem(resolved, anchor, ctx, resolved === file ? text : undefined)
    if (message !== undefined) problems.push({ file, line, message: `link ${target}: ${message}` })
  }
  return { problems, links: checked, commands: 0 }
}

/**
 * One shell line (or an inline code span) as the command lines it holds: quoted strings and `$(...)` become one
 * opaque word, comments are dropped, and `;`, `&&`, `||`, `&` (and in code blocks `|`) separate commands. In inline
 * code `|` stays: there it separates alternatives (`--format terminal|json`).
 */
function commandLines(code: string, pipes: boolean): string[][] {
  let s = code.replace(/\\\|/g, '|').replace(/\$\([^()]*\)/g, 'X')
  s = s.replace(/'[^']*'|"(?:[^"\\]|\\.)*"/g, 'Q')
  if (pipes) s = s.replace(/(^|\s)#.*$/gm, '$1')
  return s
    .split(pipes ? /&&|\|\||;|\||&/ : /&&|\|\||;/)
    .map((c) =>
      c
        .trim()
        .split(/\s+/)
        .filter((t) => t !== ''),
    )
    .filter((words) => words.length > 0)
}

/** The problems of one command line, given as words; undefined when it does not run benchstream. */
function checkCommand(words: string[], spec: CommandLineSpec): string[] | undefined {
  const at = words.indexOf('benchstream')
  if (at === -1) return undefined
  // Usage notation around a word: [--json], (--a | --b), --threshold EXPR]...
  const clean = (w: string): string => w.replace(/^[[({]+/, '').replace(/[\])}]+(\.\.\.)?$|\.\.\.$/, '')
  const rest = words.slice(at + 1).map(clean)
  const problems: string[] = []
  let i = 0
  while (i < rest.length && spec.global.includes(rest[i]!)) i++
  const cmd = rest[i]
  // A bare `benchstream`, a placeholder (<command>) or notation (`...`): nothing to check.
  if (cmd === undefined || cmd === '' || cmd.startsWith('<') || cmd.startsWith('...') || cmd === '|') return []
  const commands = Object.keys(spec.commands)
  if (cmd === 'help') {
    const topic = rest[i + 1]
    if (topic !== undefined && !topic.startsWith('<') && !commands.includes(topic) && !spec.topics.includes(topic))
      problems.push(
        `benchstream help ${topic}: no such command or help topic${suggest(topic, [...commands, ...spec.topics])}`,
      )
    return problems
  }
  const flags = spec.commands[cmd]
  if (flags === undefined) return [`unknown command benchstream ${cmd}${suggest(cmd, [...commands, 'help'])}`]
  let allowed: readonly string[]
  let name = `benchstream ${cmd}`
  i++
  if (Array.isArray(flags)) allowed = flags as readonly string[]
  else {
    const subs = flags as Readonly<Record<string, readonly string[]>>
    const sub = rest[i]
    if (sub === undefined || sub.startsWith('-') || sub.startsWith('<')) return []
    if (!Object.hasOwn(subs, sub))
      return [`unknown command benchstream ${cmd} ${sub}${suggest(sub, Object.keys(subs))}`]
    allowed = subs[sub]!
    name += ` ${sub}`
    i++
  }
  const valid = [...allowed, ...spec.global]
  for (; i < rest.length; i++) {
    const w = rest[i]!
    // What follows `--` is not ours (YCSB's own command line after `benchstream ycsb --`).
    if (w === '--') break
    if (!w.startsWith('-') || w === '-' || /^-\d/.test(w)) continue
    const flag = w.includes('=') && w.startsWith('--') ? w.slice(0, w.indexOf('=')) : w
    if (!valid.includes(flag)) problems.push(`unknown flag ${flag} for ${name}${suggest(flag, allowed)}`)
  }
  return problems
}

/** Every problem of one Markdown file. */
export function checkDoc(file: string, text: string, ctx: DocContext): DocReport {
  const { prose, fences, spans } = splitCode(text)
  const report = checkLinks(file, text, prose, ctx)
  const command = (words: string[], line: number): void => {
    const messages = checkCommand(words, ctx.spec)
    if (messages === undefined) return
    report.commands++
    for (const message of messages) report.problems.push({ file, line, message })
  }
  for (const span of spans)
    for (const words of commandLines(span.code, false)) command(words, lineAt(text, span.offset))
  for (const fence of fences) {
    const first = lineAt(text, fence.offset)
    // A line ending in a backslash continues on the next one.
    for (let k = 0; k < fence.lines.length; k++) {
      let logical = fence.lines[k]!
      const start = k
      while (logical.endsWith('\\') && k + 1 < fence.lines.length)
        logical = logical.slice(0, -1) + ' ' + fence.lines[++k]
      for (const words of commandLines(logical, true)) command(words, first + start)
    }
  }
  report.problems.sort((a, b) => a.line - b.line)
  return report
}

/** Source folders whose comments and strings may point into docs/ by path (`docs/design/verdicts.md#the-table`). */
const CODE_DIRS = ['services', 'schemas'] as const

/** Paths into docs/ named in a source file: each must be a file, and its anchor a heading. */
export function checkCodeReferences(file: string, text: string, ctx: DocContext): DocReport {
  const problems: DocProblem[] = []
  let links = 0
  for (const m of text.matchAll(/\bdocs\/[A-Za-z0-9_./-]*?\.(?:md|json)\b(?:#[A-Za-z0-9_-]*[A-Za-z0-9_])?/g)) {
    links++
    const [target, anchor] = m[0].split('#') as [string, string | undefined]
    const message = targetProblem(target, anchor, ctx)
    if (message !== undefined) problems.push({ file, line: lineAt(text, m.index), message: `${m[0]}: ${message}` })
  }
  return { problems, links, commands: 0 }
}

function sourceFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    )
  return CODE_DIRS.flatMap((d) => walk(d)).sort()
}

export async function lintDocs(root = repoRoot()): Promise<DocReport & { files: number }> {
  const spec = await commandLineSpec()
  const ctx: DocContext = {
    spec,
    exists: (f) => existsSync(path.join(root, f)),
    read: (f) => readFileSync(path.join(root, f), 'utf8'),
  }
  const files = docFiles(root)
  const sources = sourceFiles(root)
  const reports = [
    ...files.map((f) => checkDoc(f, ctx.read(f), ctx)),
    ...sources.map((f) => checkCodeReferences(f, ctx.read(f), ctx)),
  ]
  return {
    files: files.length + sources.length,
    problems: reports.flatMap((r) => r.problems),
    links: reports.reduce((n, r) => n + r.links, 0),
    commands: reports.reduce((n, r) => n + r.commands, 0),
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await lintDocs()
  for (const p of r.problems) process.stderr.write(`${p.file}:${p.line}: ${p.message}\n`)
  const checked = `${r.links} links and paths into docs/, ${r.commands} benchstream command lines, ${r.files} files`
  if (r.problems.length > 0) {
    process.stderr.write(`✖ docs: ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'} (${checked})\n`)
    process.exitCode = 1
  } else process.stdout.write(`✔ docs: ${checked}\n`)
}
