/**
 * The docs check, run by `npm run lint` (compiled: node dist/services/cli/lint-docs.js):
 *  - every relative link in README.md and docs/ (docFiles()) resolves to a file or folder of the repository, and a
 *    `#anchor` into a Markdown file (or the same file) to one of its headings, slugged as GitHub does;
 *  - every `benchstream ...` / `npx benchstream ...` command line in them, in code blocks and in inline code, names a
 *    command the CLI has (services/cli/main.ts) and only flags that command's parser defines (commandLineSpec());
 *  - every path into docs/ named in services/ and schemas/ (comments point there) exists, anchor included;
 *  - every source path a doc names in code (`services/processor/partition-worker.ts`, `deploy/local/*.sh`,
 *    `web/live-view/experiments.{html,ts}`) matches a file or folder of the repository, and every symbol it names in
 *    a file (`partition-worker.ts`'s `PartitionWorker`) is declared there.
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
  /** The text of a file of the repository (a Markdown file's headings, a source file's symbols). */
  read: (file: string) => string
  /** Every file of the repository, relative, `/`-separated (globs and bare file names are matched against it). */
  files: () => readonly string[]
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

/** Top-level folders whose paths a doc names in code; each such path must exist (bin/ is left out: YCSB has one). */
const SOURCE_ROOTS = [
  'services',
  'schemas',
  'test',
  'bench',
  'deploy',
  'web',
  'dashboards',
  'scripts',
  'experiments',
  'workloads',
  '.ci',
] as const
const SOURCE_PATH = new RegExp(`^(?:\\./)?(?:${SOURCE_ROOTS.map((r) => r.replace('.', '\\.')).join('|')})/[^\\s]*$`)
/** Extensions tried for a path named without one (`bench/accuracy`: the benchmark bench/accuracy.ts). */
const IMPLIED_EXTENSIONS = ['.ts', '.mjs', '.js', '.sh', '.md']

/** `a/{b,c}/d.{ts,js}` as every path it stands for. */
function expandBraces(p: string): string[] {
  const m = /\{([^{}]*)\}/.exec(p)
  if (m === null) return [p]
  return m[1]!.split(',').flatMap((alt) => expandBraces(p.slice(0, m.index) + alt + p.slice(m.index + m[0].length)))
}

/** A doc's path pattern as a regular expression: `*` and `<name>` within a segment, `...` and `**` across segments. */
function pathPattern(p: string): RegExp | undefined {
  if (!/[*<]|\.\.\.|NNNN/.test(p)) return undefined
  const parts = p.split(/(\*\*|\.\.\.|\*|<[^>]*>|NNNN)/)
  const body = parts
    .map((x, i) => {
      if (i % 2 === 0) return x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      if (x === '**' || x === '...') return '.*'
      if (x === 'NNNN') return '\\d{4}'
      return '[^/]*'
    })
    .join('')
  return new RegExp(`^${body}/?$`)
}

/** What is wrong with a source path a doc names, if anything. */
function sourcePathProblem(named: string, ctx: DocContext): string | undefined {
  const clean = named
    .replace(/^\.\//, '')
    .replace(/[#:].*$/, '')
    .replace(/[),.;]+$/, '')
  for (const p of expandBraces(clean)) {
    const pattern = pathPattern(p)
    if (pattern !== undefined) {
      const all = ctx.files()
      const dir = p.endsWith('/')
      if (!all.some((f) => pattern.test(f) || (dir && pattern.test(f.slice(0, f.lastIndexOf('/') + 1)))))
        return `${named}: no file matches ${p}`
      continue
    }
    if (ctx.exists(p.replace(/\/$/, '')) || IMPLIED_EXTENSIONS.some((e) => ctx.exists(p + e))) continue
    const near = nearest(p, ctx.files())
    return `${named}: no file ${p}${near === undefined ? '' : `; the closest is ${near}`}`
  }
  return undefined
}

/** Words of a doc's code that are paths into the repository's source folders. */
function sourcePaths(code: string): string[] {
  return (
    code
      .split(/[\s"'=]+/)
      .map((w) => w.replace(/^[([]+/, '').replace(/[\]),.;:]+$/, ''))
      // A brace list broken across lines (a diagram in a fenced block) is not a path to check.
      .filter((w) => SOURCE_PATH.test(w) && !w.includes('$') && w.split('{').length === w.split('}').length)
  )
}

/** Declarations of `name` in a source file: a function, class, type, constant, field, method, or SQL object. */
function declares(text: string, name: string): boolean {
  const n = name.replace(/[$]/g, '\\$')
  const modifiers = 'export|public|private|protected|readonly|static|async|override|abstract|get|set|final|void'
  return new RegExp(
    `(?:\\b(?:function\\*?|class|interface|type|enum|const|let|var|def|func|TABLE|VIEW|FUNCTION|DICTIONARY)\\s+` +
      `(?:IF NOT EXISTS\\s+)?(?:\\{db\\}\\.)?${n}\\b)|` +
      `(?:^[ \\t]*(?:(?:${modifiers}|[\\w<>[\\],]+)\\s+)*${n}\\s*[(:=<?!])`,
    'm',
  ).test(text)
}

/**
 * Source paths named in a doc's code (inline spans and fenced blocks) and symbols named in files: a path must match
 * a file or folder (brace lists, `*`, `<name>`, `...` and `NNNN` as patterns), a symbol must be declared in the file.
 */
function checkSourceReferences(
  file: string,
  text: string,
  unfenced: string,
  code: Array<{ offset: number; code: string }>,
  ctx: DocContext,
): DocReport {
  const problems: DocProblem[] = []
  let links = 0
  for (const c of code) {
    for (const named of sourcePaths(c.code)) {
      links++
      const message = sourcePathProblem(named, ctx)
      if (message !== undefined) problems.push({ file, line: lineAt(text, c.offset), message })
    }
  }
  // `file.ts`'s `name`: the file (a path, or a name unique in the repository) must declare the symbol.
  for (const m of unfenced.matchAll(/`([\w./{}-]+\.[a-z]{1,5})`['’]s `([A-Za-z_$][\w$]*)(?:\(\))?`/g)) {
    links++
    const [named, symbol] = [m[1]!, m[2]!]
    const candidates = named.includes('/')
      ? [named.replace(/^\.\//, '')].filter((f) => ctx.exists(f))
      : ctx.files().filter((f) => f === named || f.endsWith(`/${named}`))
    const line = lineAt(text, m.index)
    if (candidates.length === 0) problems.push({ file, line, message: `${named}'s ${symbol}: no file ${named}` })
    else if (candidates.length > 1 && !named.includes('/'))
      problems.push({
        file,
        line,
        message: `${named}'s ${symbol}: ${candidates.length} files are named ${named}; give its path`,
      })
    else if (!declares(ctx.read(candidates[0]!), symbol))
      problems.push({ file, line, message: `${named}'s ${symbol}: ${candidates[0]} declares no ${symbol}` })
  }
  return { problems, links, commands: 0 }
}

/** Every problem of one Markdown file. */
export function checkDoc(file: string, text: string, ctx: DocContext): DocReport {
  const { unfenced, prose, fences, spans } = splitCode(text)
  const report = checkLinks(file, text, prose, ctx)
  const sources = checkSourceReferences(
    file,
    text,
    unfenced,
    [
      ...spans,
      ...fences.flatMap((f) => {
        let offset = f.offset
        return f.lines.map((code) => ({ offset: (offset += code.length + 1) - code.length - 1, code }))
      }),
    ],
    ctx,
  )
  report.problems.push(...sources.problems)
  report.links += sources.links
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

/** Folders that are not the repository's own sources: installed, built or VCS state. */
const NOT_SOURCES = new Set(['node_modules', 'dist', '.git', 'target'])

/** Every file of the repository (relative, `/`-separated), build outputs and installed packages left out. */
function repositoryFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = dir === '' ? e.name : `${dir}/${e.name}`
      if (e.isDirectory()) return NOT_SOURCES.has(e.name) ? [] : walk(rel)
      return [rel]
    })
  return walk('')
}

export async function lintDocs(root = repoRoot()): Promise<DocReport & { files: number }> {
  const spec = await commandLineSpec()
  let all: string[] | undefined
  const ctx: DocContext = {
    spec,
    exists: (f) => existsSync(path.join(root, f)),
    read: (f) => readFileSync(path.join(root, f), 'utf8'),
    files: () => (all ??= repositoryFiles(root)),
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
