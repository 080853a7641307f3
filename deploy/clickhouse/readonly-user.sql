-- A read-only ClickHouse user for people (issue 24), for server mode
-- (CLICKHOUSE_URL): DBeaver, DataGrip, Metabase, clickhouse-connect and
-- clickhouse-client can then connect to the server directly, with the same
-- safety as through Benchstream's API:
--
--   readonly = 1 (constraints say so too: no SET, no SETTINGS that change it),
--   the API's limits (API_QUERY_TIMEOUT_S, API_QUERY_MAX_MEMORY,
--   API_QUERY_MAX_ROWS_TO_READ, API_MAX_QUERY_ROWS with result_overflow_mode =
--   'break', one thread), and SELECT on Benchstream's database only. Without
--   grants elsewhere, the server shows this user's system.tables, columns and
--   databases for benchstream only.
--
-- Run it once as an administrator, with the password and, if they differ, the
-- database name and limits put in (docs/guides/query-from-tools.md):
--
--   sed -e "s/{password}/$PASSWORD/" -e 's/{db}/benchstream/g' deploy/clickhouse/readonly-user.sql \
--     | clickhouse-client --multiquery
--
-- Every statement is safe to re-run. Checked with ClickHouse's own parser
-- (test/unit/readonly-user.test.ts); applied to the chDB server stand-in by
-- test/server/readonly-user.test.ts, which refuses it (users.xml users only:
-- no writable access storage), so not run against a real server.

CREATE SETTINGS PROFILE OR REPLACE benchstream_readonly SETTINGS
    readonly = 1 CONST,
    max_execution_time = 10 CONST,
    timeout_overflow_mode = 'throw' CONST,
    max_memory_usage = 536870912 CONST,
    max_rows_to_read = 2000000000 CONST,
    read_overflow_mode = 'throw' CONST,
    max_result_rows = 10000 CONST,
    max_result_bytes = 16777216 CONST,
    result_overflow_mode = 'break' CONST,
    max_threads = 1 CONST,
    max_query_size = 262144 CONST,
    max_ast_elements = 50000 CONST,
    enable_http_compression = 1,
    send_progress_in_http_headers = 0;

CREATE USER OR REPLACE benchstream_reader IDENTIFIED WITH sha256_password BY '{password}'
    DEFAULT DATABASE {db}
    SETTINGS PROFILE benchstream_readonly;

-- Its own database only: the tables, the views people query (runs, run_summary,
-- op_percentiles) and what the query tools read about them.
REVOKE ALL ON *.* FROM benchstream_reader;
GRANT SELECT, SHOW TABLES, SHOW COLUMNS, SHOW DATABASES ON {db}.* TO benchstream_reader;
GRANT SELECT ON {db}_meta.* TO benchstream_reader;
