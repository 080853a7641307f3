/**
 * Entry file of a driver worker thread (started by worker-pool.ts): runs its
 * share of a client's threads with bindings from the registry (worker.ts).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { createBinding } from '../adapters/datastores/index.js'
import { serveWorker, type WorkerData } from './worker.js'

if (parentPort !== null) await serveWorker(parentPort, workerData as WorkerData, createBinding)
