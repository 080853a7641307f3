/**
 * `benchstream server --help`, apart from the composition root so that help
 * loads nothing.
 */
export const SERVER_USAGE = `usage: benchstream server [--no-api]   (alias: benchstream processor)

Runs the backend: the stream processor (Kafka -> ClickHouse windows), the
alert evaluator (ALERTS_ENABLED) and, unless --no-api, the HTTP API with the
live view. Configuration comes from the environment (see docs/reference/configuration.md).
  --no-api   do not serve the API; /metrics is served on METRICS_PORT instead
  -h, --help this text`
