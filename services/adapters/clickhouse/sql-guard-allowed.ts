/**
 * What an ad hoc query may name (sql-guard.ts): the table functions, output formats and mirrored system tables the
 * guard allows, and the scalar functions it refuses. Lists, apart from the check that applies them
 * (sql-guard-check.ts), so that a review of what is allowed reads one short file.
 */
import { ARROW_FORMATS } from './arrow-ipc.js'
import { ROW_BINARY_FORMATS } from './row-binary.js'

/** Table functions a user query may call: they read nothing but what they generate. */
export const ALLOWED_TABLE_FUNCTIONS = new Set([
  'numbers',
  'numbers_mt',
  'generate_series',
  'generateseries',
  'values',
  'null',
  'one',
])
/** Scalar functions that reach outside the query's tables (readonly=1 does not stop them). */
export const DENIED_FUNCTIONS = /^(file|dict\w*|joinget\w*|hascolumnintable|getserversetting|getmacro|filesystem\w*)$/i
/** Output formats a query may name in a FORMAT clause (text formats only). */
export const ALLOWED_FORMATS = [
  'TabSeparated',
  'TSV',
  'TabSeparatedWithNames',
  'TSVWithNames',
  'TabSeparatedWithNamesAndTypes',
  'TSVWithNamesAndTypes',
  'TabSeparatedRaw',
  'TSVRaw',
  'CSV',
  'CSVWithNames',
  'JSON',
  'JSONCompact',
  'JSONEachRow',
  'JSONCompactEachRow',
  'JSONCompactEachRowWithNames',
  'JSONCompactEachRowWithNamesAndTypes',
  'JSONStringsEachRow',
  'JSONCompactStringsEachRow',
  'JSONCompactStringsEachRowWithNames',
  'JSONCompactStringsEachRowWithNamesAndTypes',
  'JSONLines',
  'NDJSON',
  'JSONStrings',
  'JSONCompactStrings',
  'Pretty',
  'PrettyCompact',
  'PrettyCompactMonoBlock',
  'PrettySpace',
  'PrettyNoEscapes',
  'PrettyCompactNoEscapes',
  'Markdown',
  'Vertical',
  'Values',
  'XML',
] as const
/**
 * The binary formats a caller may allow (AdHocOptions.nativeRevision): ClickHouse's Native, re-framed by
 * native-format.ts; RowBinary (row-binary.ts) and Arrow (arrow-ipc.ts), cut at whole rows or batches.
 */
export const NATIVE = 'Native'
export const BINARY_FORMATS = [NATIVE, ...ROW_BINARY_FORMATS, ...ARROW_FORMATS] as const
/**
 * System tables a query may name, answered from views of the same name in the `<database>_meta` database
 * (schemas/clickhouse/0013-query-tools.sql): system.tables, columns and databases of our database only, a curated
 * read-only system.settings, and the engine's lists of functions and types. What the JDBC driver's DatabaseMetaData,
 * clickhouse-connect's set-up and DBeaver's navigator read.
 */
export const MIRRORED_SYSTEM_TABLES = [
  'tables',
  'columns',
  'databases',
  'settings',
  'functions',
  'data_type_families',
  'table_engines',
  'formats',
] as const
/** The database of the mirrored system tables. */
export function metaDatabase(database: string): string {
  return `${database}_meta`
}
