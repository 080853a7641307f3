/**
 * `benchstream server --help`, apart from the composition root so that help
 * loads nothing.
 */
export const SERVER_USAGE = `usage: benchstream server [--no-api]   (alias: benchstream processor)

Runs the backend: the stream processor (Kafka -> ClickHouse windows), the
alert evaluator (ALERTS_ENABLED) and, unless --no-api, the HTTP API with the
live view. Configuration comes from the environment (see docs/reference/configuration.md).
With KAFKA_BROKERS unset and the API on loopback, it starts the local Kafka broker
(deploy/local/kafka.sh on KAFKA_PORT, default 9092, data in
<BENCHSTREAM_DATA_DIR>/kafka-<port>) unless one answers there, and stops it when it
stops; one already answering is used and left running. Commands started beside it
(benchstream server & benchstream agent ...) wait for it.
  --no-api   do not serve the API; /metrics is served on METRICS_PORT instead
  -h, --help this text`
