import type { RequestContext } from '../context.ts';

/**
 * Stage 8: publish what happened to stream subscribers and webhooks. Nothing subscribes yet;
 * the stage exists so the pipeline's order is fixed before they arrive.
 */
export function emit(_ctx: RequestContext): void {}
