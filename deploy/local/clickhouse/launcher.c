/*
 * Runs clickhouse-local's main from chDB's libchdb.so (the library npm `chdb` installs) with the command line given:
 *
 *   benchstream-clickhouse /path/to/libchdb.so [clickhouse-local options...]
 *
 * deploy/local/clickhouse.sh calls it with --path, --http_port, --tcp_port, --listen_host and a query that starts
 * ClickHouse's HTTP and native listeners and then lasts as long as the server should live: the local stand-in for a
 * ClickHouse server (docs/guides/deploy.md#a-local-clickhouse-server). libchdb exports chdb_query_cmdline(argc, argv),
 * which parses argv as clickhouse-local does; it is not in chdb's public header, hence dlopen and our own prototypes.
 *
 * Compiled on first use by clickhouse.sh (cc -O2, -ldl) into the cache, never committed as a binary.
 * The queries' output goes to stdout. Exit status: 0 when the queries ended without an error reported in the result,
 * 1 when they ended with one (printed on stderr), 2 when the library cannot be loaded. clickhouse-local prints a
 * failed query's exception on stderr itself, and chDB then reports no error in the result: the exit status is 0 for
 * those, so clickhouse.sh judges a start by /ping, never by this status.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* chdb_result is opaque to us: only these accessors touch it. */
typedef void *(*query_cmdline_fn)(int argc, char **argv);
typedef const char *(*result_error_fn)(void *result);
typedef void (*destroy_result_fn)(void *result);
typedef char *(*result_buffer_fn)(void *result);
typedef size_t (*result_length_fn)(void *result);

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBCHDB_SO [clickhouse-local options...]\n", argv[0]);
    return 2;
  }
  /* RTLD_NOW: a library whose symbols do not resolve fails here, with dlerror's words, not halfway through. */
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "benchstream-clickhouse: cannot load %s: %s\n", argv[1], dlerror());
    return 2;
  }
  query_cmdline_fn query_cmdline = (query_cmdline_fn)dlsym(lib, "chdb_query_cmdline");
  result_error_fn result_error = (result_error_fn)dlsym(lib, "chdb_result_error");
  destroy_result_fn destroy_result = (destroy_result_fn)dlsym(lib, "chdb_destroy_query_result");
  result_buffer_fn result_buffer = (result_buffer_fn)dlsym(lib, "chdb_result_buffer");
  result_length_fn result_length = (result_length_fn)dlsym(lib, "chdb_result_length");
  if (query_cmdline == NULL || result_error == NULL || destroy_result == NULL || result_buffer == NULL ||
      result_length == NULL) {
    fprintf(stderr, "benchstream-clickhouse: %s lacks one of chdb_query_cmdline, chdb_result_{error,buffer,length}, "
                    "chdb_destroy_query_result (a chdb release older than 3.x?)\n",
            argv[1]);
    return 2;
  }
  /* clickhouse-local reads argv[0] as the program name and the rest as its options. */
  argv[1] = "clickhouse-local";
  void *result = query_cmdline(argc - 1, argv + 1);
  if (result == NULL) {
    fprintf(stderr, "benchstream-clickhouse: chdb_query_cmdline returned no result\n");
    return 1;
  }
  /* chDB collects a query's output in the result instead of writing it (SELECT version() from clickhouse.sh). */
  const char *out = result_buffer(result);
  size_t out_len = result_length(result);
  if (out != NULL && out_len > 0) fwrite(out, 1, out_len, stdout);
  const char *error = result_error(result);
  int status = 0;
  if (error != NULL && error[0] != '\0') {
    fprintf(stderr, "%s\n", error);
    status = 1;
  }
  destroy_result(result);
  return status;
}
