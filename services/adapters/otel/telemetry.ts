/**
 * OpenTelemetry set-up shared by the services: a MeterProvider whose reader
 * is a Prometheus exporter (scraped at /metrics on the API, or on its own
 * port when the API is off), and a TracerProvider that exports spans over
 * OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set.
 * Tests can pass their own span exporter.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Meter, Tracer } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'

export interface Telemetry {
  meter: Meter
  tracer: Tracer
  /** Serves the Prometheus text format (mount on GET /metrics). */
  metricsHandler(req: IncomingMessage, res: ServerResponse): void
  shutdown(): Promise<void>
}

export interface TelemetryOptions {
  serviceName: string
  env: Readonly<Record<string, string | undefined>>
  /** Extra span exporter, e.g. an in-memory one in tests (exported synchronously). */
  spanExporter?: SpanExporter
  /** Serve /metrics on this port with the exporter's own server (when no API runs in the process). */
  metricsServer?: { port: number; host: string }
}

export function initTelemetry(opts: TelemetryOptions): Telemetry {
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.serviceName })
  const prometheus = new PrometheusExporter(
    opts.metricsServer === undefined
      ? { preventServerStart: true }
      : { port: opts.metricsServer.port, host: opts.metricsServer.host },
  )
  const meterProvider = new MeterProvider({ resource, readers: [prometheus] })
  const processors: SpanProcessor[] = []
  const endpoint = opts.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? opts.env.OTEL_EXPORTER_OTLP_ENDPOINT
  if (endpoint !== undefined && endpoint !== '') processors.push(new BatchSpanProcessor(new OTLPTraceExporter()))
  if (opts.spanExporter !== undefined) processors.push(new SimpleSpanProcessor(opts.spanExporter))
  const tracerProvider = new BasicTracerProvider({ resource, spanProcessors: processors })
  return {
    meter: meterProvider.getMeter(opts.serviceName),
    tracer: tracerProvider.getTracer(opts.serviceName),
    metricsHandler: (req, res) => prometheus.getMetricsRequestHandler(req, res),
    async shutdown() {
      if (opts.metricsServer !== undefined) await prometheus.stopServer()
      await meterProvider.shutdown()
      await tracerProvider.shutdown()
    },
  }
}
