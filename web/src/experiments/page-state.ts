/** What the experiment page knows: the list, the experiment watched, and counters for tests. */
import type { ExperimentReply, ExperimentSummary } from '../../../schemas/experiments-api.v1.js'

/** The page's state (on window.benchstreamExperiments for tests). */
export interface PageState {
  /** The experiment watched ('' for none yet). */
  id: string
  list: ExperimentSummary[]
  /** The list's answer as read: a list is drawn again only when its text changed. */
  listText: string
  state: ExperimentReply | null
  stateText: string
  /** The run the frame shows. */
  frameRun: string
  polls: number
  renders: number
  listDueAt: number
  problem: string
}

export const initialPage = (id: string): PageState => ({
  id,
  list: [],
  listText: '',
  state: null,
  stateText: '',
  frameRun: '',
  polls: 0,
  renders: 0,
  listDueAt: 0,
  problem: '',
})
