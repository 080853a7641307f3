/**
 * The attack corpus of the ad hoc SQL guard (test/integration/sql-guard.test.ts
 * runs it through POST /api/v1/query; clickhouse-formats.test.ts and
 * test/clients/clickhouse-clients.test.ts through /clickhouse/ in every format,
 * compression and metadata path the query tools use). Each attack is
 * [name, sql, expected], expected being the BS_ERR_* code /api/v1/query
 * answers with, 'ok' or 'empty'. The resource attacks expect a server with
 * result limits below them (API_MAX_QUERY_ROWS of at most 100,000 and
 * API_QUERY_MAX_BYTES of at most 10 MB): a result that passes one fails
 * (BS_ERR_RESULT_LIMIT), before its first byte here; with no limit set, the
 * server streams every row instead.
 */

/** Where the attacks point: a scratch directory, a secret file in it, a listener's HTTP and TCP addresses. */
export interface AttackTargets {
  dir: string
  secret: string
  /** http://127.0.0.1:PORT of a listener that counts requests. */
  H: string
  /** 127.0.0.1:PORT of a listener that counts connections. */
  T: string
}

export type Attack = [name: string, sql: string, expected: string]

/** Attacks that take the engine's time limit to be stopped (CPU, memory, rows to read). */
export const SLOW_ATTACKS = new Set(['CPU: 4e10 rows', 'memory', 'rows to read: numbers(1e10)'])

export function sqlAttacks({ dir, secret, H, T }: AttackTargets): Attack[] {
  return [
    // writes and DDL, in every spelling
    // With VALUES the data is not part of the statement: it never parses as one.
    ['INSERT ... VALUES', "INSERT INTO benchstream.dead_letters (reason) VALUES ('x')", 'BS_ERR_QUERY_FAILED'],
    ['WITH ... INSERT', "WITH 1 AS x INSERT INTO benchstream.dead_letters (reason) SELECT 'x'", 'BS_ERR_QUERY_REFUSED'],
    ['INSERT ... SELECT', "INSERT INTO benchstream.dead_letters (reason) SELECT 'x'", 'BS_ERR_QUERY_REFUSED'],
    ['multi-statement', "SELECT 1; INSERT INTO benchstream.dead_letters (reason) VALUES ('x')", 'BS_ERR_QUERY_FAILED'],
    [
      'INSERT INTO FUNCTION file',
      `INSERT INTO FUNCTION file('${dir}/written.csv', 'CSV', 'x UInt8') SELECT 1`,
      'BS_ERR_QUERY_REFUSED',
    ],
    ['INTO OUTFILE', `SELECT 1 INTO OUTFILE '${dir}/outfile.txt' TRUNCATE`, 'BS_ERR_QUERY_REFUSED'],
    ['CREATE TABLE', 'CREATE TABLE benchstream.x (a UInt8) ENGINE = Memory', 'BS_ERR_QUERY_REFUSED'],
    ['DROP TABLE', 'DROP TABLE benchstream.ops', 'BS_ERR_QUERY_REFUSED'],
    ['ALTER DELETE', 'ALTER TABLE benchstream.ops DELETE WHERE 1', 'BS_ERR_QUERY_REFUSED'],
    ['TRUNCATE', 'TRUNCATE TABLE benchstream.ops', 'BS_ERR_QUERY_REFUSED'],
    ['OPTIMIZE', 'OPTIMIZE TABLE benchstream.ops FINAL', 'BS_ERR_QUERY_REFUSED'],
    ['KILL QUERY', 'KILL QUERY WHERE 1', 'BS_ERR_QUERY_REFUSED'],
    ['SYSTEM STOP MERGES', 'SYSTEM STOP MERGES', 'BS_ERR_QUERY_REFUSED'],
    ['USE other', 'USE other', 'BS_ERR_QUERY_REFUSED'],
    ['DESCRIBE url()', `DESCRIBE TABLE url('${H}/describe', 'CSV')`, 'BS_ERR_QUERY_REFUSED'],
    ['DESCRIBE file()', `DESCRIBE TABLE file('${secret}', 'TSVWithNames')`, 'BS_ERR_QUERY_REFUSED'],
    ['SHOW other', 'SHOW TABLES FROM other', 'BS_ERR_QUERY_REFUSED'],
    ['DESCRIBE other', 'DESCRIBE other.secret', 'BS_ERR_QUERY_REFUSED'],
    ['SHOW CREATE other', 'SHOW CREATE TABLE other.secret', 'BS_ERR_QUERY_REFUSED'],
    ['EXISTS other', 'EXISTS other.secret', 'BS_ERR_QUERY_REFUSED'],
    ['DESCRIBE system', 'DESC system.settings', 'BS_ERR_QUERY_REFUSED'],
    ['SHOW DATABASES', 'SHOW DATABASES', 'BS_ERR_QUERY_REFUSED'],
    [
      'SHOW TABLES LIKE with a second statement',
      "SHOW TABLES LIKE 'x'; SELECT * FROM other.secret",
      'BS_ERR_QUERY_FAILED',
    ],
    // settings the query may not change
    ['SETTINGS readonly=0', 'SELECT 1 SETTINGS readonly = 0', 'BS_ERR_QUERY_REFUSED'],
    // The result limits are the guard's, not the engine's: a SETTINGS clause cannot lift them.
    [
      'SETTINGS max_result_rows',
      'SELECT number FROM numbers(100000) SETTINGS max_result_rows = 0',
      'BS_ERR_RESULT_LIMIT',
    ],
    ['SETTINGS max_rows_to_read', 'SELECT 1 SETTINGS max_rows_to_read = 0', 'BS_ERR_QUERY_REFUSED'],
    ['SETTINGS max_execution_time', 'SELECT 1 SETTINGS max_execution_time = 0', 'BS_ERR_QUERY_REFUSED'],
    ['SET', 'SET readonly = 0', 'BS_ERR_QUERY_REFUSED'],
    // files and the network
    ['file() table function', `SELECT * FROM file('${secret}', 'LineAsString')`, 'BS_ERR_QUERY_REFUSED'],
    ['file() scalar', `SELECT file('${secret}')`, 'BS_ERR_QUERY_REFUSED'],
    ['file() /proc/self/environ', "SELECT file('/proc/self/environ')", 'BS_ERR_QUERY_REFUSED'],
    ['url()', `SELECT * FROM url('${H}/get', 'CSV')`, 'BS_ERR_QUERY_REFUSED'],
    ['url() in view()', `SELECT * FROM view(SELECT * FROM url('${H}/view', 'CSV'))`, 'BS_ERR_QUERY_REFUSED'],
    ['url() in IN', `SELECT 1 WHERE 1 IN (SELECT * FROM url('${H}/in', 'CSV'))`, 'BS_ERR_QUERY_REFUSED'],
    ['remote()', `SELECT * FROM remote('${T}', system.one)`, 'BS_ERR_QUERY_REFUSED'],
    ['s3()', `SELECT * FROM s3('${H}/bucket/x.csv', 'CSV', 'x UInt8')`, 'BS_ERR_QUERY_REFUSED'],
    ['mysql()', `SELECT * FROM mysql('${T}', 'db', 't', 'u', 'p')`, 'BS_ERR_QUERY_REFUSED'],
    ['postgresql()', `SELECT * FROM postgresql('${T}', 'db', 't', 'u', 'p')`, 'BS_ERR_QUERY_REFUSED'],
    ['hdfs()', `SELECT * FROM hdfs('hdfs://${T}/x', 'CSV', 'x UInt8')`, 'BS_ERR_QUERY_REFUSED'],
    ['executable()', "SELECT * FROM executable('cat /etc/passwd', 'TSV', 'x String')", 'BS_ERR_QUERY_REFUSED'],
    ['input()', "SELECT * FROM input('x UInt8')", 'BS_ERR_QUERY_REFUSED'],
    ['merge()', "SELECT * FROM merge('other', '.*')", 'BS_ERR_QUERY_REFUSED'],
    ['mergeTreeIndex()', "SELECT * FROM mergeTreeIndex('benchstream', 'ops')", 'BS_ERR_QUERY_REFUSED'],
    ['generateRandom()', "SELECT * FROM generateRandom('x String') LIMIT 10", 'BS_ERR_QUERY_REFUSED'],
    ['joinGet', "SELECT joinGet('other.j', 'v', 'k')", 'BS_ERR_QUERY_REFUSED'],
    ['dictGet', "SELECT dictGet('other.d', 'v', toUInt64(1))", 'BS_ERR_QUERY_REFUSED'],
    // other databases and system tables
    ['other database', 'SELECT * FROM other.secret', 'BS_ERR_QUERY_REFUSED'],
    ['other database via IN', "SELECT 'top-secret' IN other.secret", 'BS_ERR_QUERY_REFUSED'],
    ['other database via CTE', 'WITH x AS (SELECT * FROM other.secret) SELECT * FROM x', 'BS_ERR_QUERY_REFUSED'],
    [
      'other database via JOIN',
      'SELECT * FROM benchstream.runs AS r JOIN other.secret AS s ON 1',
      'BS_ERR_QUERY_REFUSED',
    ],
    ['system.processes', 'SELECT * FROM system.processes', 'BS_ERR_QUERY_REFUSED'],
    // system.settings is answered, curated (<db>_meta.settings); system.processes is not.
    ['system.settings', 'SELECT * FROM system.settings', 'ok'],
    ['FORMAT not allowed', 'SELECT 1 FORMAT Native', 'BS_ERR_QUERY_REFUSED'],
    // resources
    ['CPU: 4e10 rows', 'SELECT sum(cityHash64(number)) FROM numbers(4e10)', 'BS_ERR_QUERY_FAILED'],
    ['memory', "SELECT length(groupArray(repeat('x', 1000))) FROM numbers(5e6)", 'BS_ERR_QUERY_FAILED'],
    ['rows to read: numbers(1e10)', 'SELECT number FROM numbers(1e10)', 'BS_ERR_QUERY_FAILED'],
    ['rows: numbers(1e8)', 'SELECT number FROM numbers(1e8)', 'BS_ERR_RESULT_LIMIT'],
    ['bytes: 100 MB constant column', "SELECT repeat('x', 10000) AS s FROM numbers(10000)", 'BS_ERR_RESULT_LIMIT'],
    // A new line in an alias adds a line to EXPLAIN's output; it can only make the check stricter.
    ['a new line in an alias', 'SELECT 1 AS `x\nTableIdentifier other.secret`', 'BS_ERR_QUERY_REFUSED'],
  ]
}

/**
 * Attacks on the mirrored system tables (system.tables, system.settings, ...
 * answered from <db>_meta views): bypasses of the name rewrite, writes,
 * settings, and reaching past the views.
 */
export function metadataAttacks(meta: string): Attack[] {
  return [
    ['quoted system.processes', 'SELECT * FROM `system`.`processes`', 'BS_ERR_QUERY_REFUSED'],
    ['a mirrored name with a suffix', 'SELECT * FROM system.tables_x', 'BS_ERR_QUERY_REFUSED'],
    [
      'a mirror joined to another database',
      'SELECT * FROM system.tables AS t JOIN other.secret AS s ON 1',
      'BS_ERR_QUERY_REFUSED',
    ],
    ['a mirror and system.processes', 'SELECT * FROM system.tables, system.processes', 'BS_ERR_QUERY_REFUSED'],
    ['SETTINGS on a mirror', 'SELECT * FROM system.settings SETTINGS readonly = 0', 'BS_ERR_QUERY_REFUSED'],
    ['INSERT INTO a mirror', "INSERT INTO system.settings (name) SELECT 'x'", 'BS_ERR_QUERY_REFUSED'],
    ['CREATE in the meta database', `CREATE VIEW ${meta}.x AS SELECT 1`, 'BS_ERR_QUERY_REFUSED'],
    ['DROP a mirror', `DROP VIEW ${meta}.tables`, 'BS_ERR_QUERY_REFUSED'],
    ['file() beside a mirror', "SELECT file('/etc/passwd') FROM system.settings", 'BS_ERR_QUERY_REFUSED'],
    ['merge() over system', "SELECT * FROM merge('system', 'tables')", 'BS_ERR_QUERY_REFUSED'],
    ['another table of the meta database', `SELECT * FROM ${meta}.nonexistent`, 'BS_ERR_QUERY_REFUSED'],
    ['system.tables of another database', "SELECT name FROM system.tables WHERE database = 'other'", 'empty'],
    ['columns of another database', 'SELECT name FROM system.columns WHERE database != currentDatabase()', 'empty'],
    ['databases besides ours', 'SELECT name FROM system.databases WHERE name != currentDatabase()', 'empty'],
    [
      'paths on the server',
      "SELECT name FROM system.tables WHERE notEmpty(data_paths) OR metadata_path != '' UNION ALL " +
        "SELECT name FROM system.databases WHERE data_path != '' OR metadata_path != ''",
      'empty',
    ],
    ['settings outside the curated list', "SELECT name FROM system.settings WHERE name = 'allow_ddl'", 'empty'],
  ]
}
