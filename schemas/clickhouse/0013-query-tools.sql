-- Benchstream's ClickHouse schema, version 13: what query tools read about the
-- server (issue 24). {db} is replaced by CLICKHOUSE_DATABASE. Every statement
-- is safe to re-run.
--
-- Through the API (/clickhouse/), a query that names one of these system
-- tables reads the view of the same name here instead (the guard's
-- MIRRORED_SYSTEM_TABLES): JDBC's DatabaseMetaData, DBeaver's and DataGrip's
-- navigators and clickhouse-connect's set-up see Benchstream's database only,
-- without paths on the server's disk, and a curated, read-only
-- system.settings. Nothing else of system.* is readable through the guard.
CREATE DATABASE IF NOT EXISTS {db}_meta;

CREATE OR REPLACE VIEW {db}_meta.tables AS
SELECT * REPLACE ([] AS data_paths, '' AS metadata_path)
FROM system.tables
WHERE database = '{db}' AND NOT is_temporary;

CREATE OR REPLACE VIEW {db}_meta.columns AS
SELECT * FROM system.columns WHERE database = '{db}';

CREATE OR REPLACE VIEW {db}_meta.databases AS
SELECT * REPLACE ('' AS data_path, '' AS metadata_path)
FROM system.databases
WHERE name = '{db}';

-- The settings clients read before their first query, and the limits that
-- apply, with their values on the reading connection. readonly = 1 (cannot
-- be changed) for all but the transport settings the endpoint accepts, so
-- clients do not try to change the others; the engine refuses that anyway.
CREATE OR REPLACE VIEW {db}_meta.settings AS
SELECT * REPLACE (toUInt8(name NOT IN (
    'enable_http_compression', 'send_progress_in_http_headers', 'http_headers_progress_interval_ms',
    'cancel_http_readonly_queries_on_client_close', 'wait_end_of_query', 'max_result_rows',
    'result_overflow_mode', 'max_execution_time')) AS readonly)
FROM system.settings
WHERE name IN (
    'readonly', 'max_execution_time', 'timeout_overflow_mode', 'max_memory_usage', 'max_rows_to_read',
    'read_overflow_mode', 'max_result_rows', 'max_result_bytes', 'result_overflow_mode', 'max_block_size',
    'max_threads', 'max_query_size', 'max_ast_elements', 'enable_http_compression', 'http_zlib_compression_level',
    'send_progress_in_http_headers', 'http_headers_progress_interval_ms',
    'cancel_http_readonly_queries_on_client_close', 'wait_end_of_query', 'network_compression_method',
    'output_format_json_quote_64bit_integers', 'output_format_arrow_string_as_string',
    'output_format_arrow_low_cardinality_as_dictionary', 'date_time_input_format', 'date_time_output_format',
    'session_timezone', 'cast_string_to_dynamic_use_inference', 'enable_analyzer', 'use_query_cache',
    'join_use_nulls', 'extremes', 'totals_mode');

-- The engine's own lists: names of functions, types, table engines, formats.
CREATE OR REPLACE VIEW {db}_meta.functions AS SELECT * FROM system.functions;
CREATE OR REPLACE VIEW {db}_meta.data_type_families AS SELECT * FROM system.data_type_families;
CREATE OR REPLACE VIEW {db}_meta.table_engines AS SELECT * FROM system.table_engines;
CREATE OR REPLACE VIEW {db}_meta.formats AS SELECT * FROM system.formats;
