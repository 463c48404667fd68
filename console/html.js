// Preact with htm's tagged templates: markup without a build step. Values interpolated into a
// template are set as text or as properties, never parsed as HTML, so what a decision says
// (titles, context, comments) is shown as written and cannot run script.
import { h, render, Component, Fragment } from './preact.mjs';
import htm from './htm.mjs';

export const html = htm.bind(h);
export { render, Component, Fragment };
