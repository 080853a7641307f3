/**
 * Entry file of the driver's delivery thread (a worker_threads worker
 * started by RingEventSink): opens the sink the client threads' event rings
 * are drained into (delivery.ts): the Kafka sink, wrapped in the HDR log
 * writer when YCSB's hdrhistogram.fileoutput asks for it.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { parentPort, workerData } from 'node:worker_threads'
import { createKafka } from '../adapters/kafka/client.js'
import { KafkaEventSink, type KafkaSinkOptions } from '../adapters/kafka/event-sink.js'
import type { KafkaConfig } from '../common/infra-config.js'
import { createLogger } from '../common/logger.js'
import { outageLogLine } from '../core/health/outage.js'
import { NullSink, type EventSink } from '../core/ports/event-sink.js'
import { serveDelivery, type DeliveryWorkerData } from './delivery.js'
import { HdrLogSink, type HdrLogSinkOptions } from './hdr-log-sink.js'

/** What driver/main.ts passes for the Kafka sink. */
export interface KafkaDelivery {
  kafka: KafkaConfig
  /** Suffix of the Kafka client id (createKafka). */
  clientIdSuffix: string
  options: KafkaSinkOptions
}

/** The HDR log sink's options that cross to the delivery thread (the file access is this file's). */
export type HdrLogFiles = Omit<HdrLogSinkOptions, 'write' | 'now'>

/** Where the delivery thread sends every event. */
export interface DriverDelivery {
  /** Kafka; undefined = emission off (--no-emit), the events only feed the HDR logs. */
  kafka?: KafkaDelivery
  /** YCSB's hdrhistogram.fileoutput: interval logs of every event. */
  hdrLog?: HdrLogFiles
}

async function open(d: DriverDelivery): Promise<EventSink> {
  // Kafka not acknowledging (a broker down, a leader moving) is said in the driver's log when it starts and when it
  // ends, with how long it lasted; the benchmark goes on meanwhile (the sink buffers).
  const log = createLogger('benchstream-driver', process.env).child({ component: 'delivery' })
  const inner: EventSink =
    d.kafka === undefined
      ? new NullSink()
      : await KafkaEventSink.open(createKafka(d.kafka.kafka, d.kafka.clientIdSuffix), {
          ...d.kafka.options,
          onOutage: (e) => {
            const { msg, fields } = outageLogLine(e)
            log.warn(fields, msg)
          },
        })
  return d.hdrLog === undefined ? inner : new HdrLogSink(inner, { ...d.hdrLog, write: writeLog })
}

/**
 * The HDR log sink's file access: a new file replaces an old one (as YCSB's FileOutputStream), its folder made if
 * missing.
 */
function writeLog(file: string, text: string, create: boolean): void {
  if (create) {
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, text)
  } else appendFileSync(file, text)
}

if (parentPort !== null) {
  const data = workerData as DeliveryWorkerData<DriverDelivery>
  await serveDelivery(parentPort, data.rings, () => open(data.sink))
}
