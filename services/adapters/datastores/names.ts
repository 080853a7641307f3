/**
 * The names -db accepts, apart from the registry (index.ts) so that help
 * and argument checks need not load the datastore clients.
 */
export const BINDING_NAMES = ['memory', 'redis', 'postgres'] as const
export type BindingName = (typeof BINDING_NAMES)[number]
