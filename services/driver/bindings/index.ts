/**
 * The binding registry: names accepted by -db and how each is built from the
 * merged properties. Adding a datastore means one file in this folder and one
 * entry here; the runner and the workload do not change.
 */
import type { Binding } from '../binding.js'
import { MemoryBinding, memoryStore } from './memory.js'

export const BINDING_NAMES = ['memory'] as const
export type BindingName = (typeof BINDING_NAMES)[number]

export function createBinding(name: BindingName, props: Readonly<Record<string, string>>): Binding {
  switch (name) {
    case 'memory': {
      const records = Number(props.recordcount ?? '1000')
      const cacheSize = props['memory.cachesize'] !== undefined ? Number(props['memory.cachesize']) : Math.max(1, Math.floor(records / 10))
      return new MemoryBinding(memoryStore(cacheSize))
    }
  }
}
