/**
 * A `perRequest` module for bench/lib/load.ts: request `seq` acts on decision `ids[seq]`
 * (`POST /v1/decisions/{id}/{action}`), so every approve or execute the load sends meets a
 * decision in the state the action needs. Run with one generator process: each process counts
 * its own sequence.
 */
import type { PerRequestFactory } from './load.ts';

export interface DecisionActionsOptions {
  ids: string[];
  action: 'approve' | 'execute';
}

const decisionActions: PerRequestFactory = (raw) => {
  const { ids, action } = raw as DecisionActionsOptions;
  return (seq) => {
    const id = ids[seq];
    if (id === undefined) throw new Error(`the load outran the ${ids.length} decisions prepared for ${action}`);
    return { path: `/v1/decisions/${id}/${action}` };
  };
};

export default decisionActions;
