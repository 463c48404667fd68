// A decision's trace as GET /v1/impact/trace returns it: its audit entries and its ordered steps.
// Shared by the decision page and the audit search.
import { html } from './html.js';
import { when } from './decision-rules.js';

function stepText(step) {
  switch (step.type) {
    case 'request':
      return `${step.method} ${step.route} → ${step.status}${step.code ? ` ${step.code}` : ''} by ${step.keyId ?? 'anonymous'}${step.replayed ? ' (replayed)' : ''}`;
    case 'policy_evaluation':
      return `${step.policy}: ${step.result?.allow ? 'allowed' : 'denied'}${step.result?.gate ? `, gate ${step.result.gate}` : ''}${step.result?.nextAction ? `, next ${step.result.nextAction}` : ''}`;
    case 'transition':
    case 'approval':
    case 'execution':
      return `${step.action} by ${step.keyId} → ${step.status}${step.comment ? `: “${step.comment}”` : ''}`;
    case 'event':
      return `event ${step.kind} (cursor ${step.cursor})`;
    case 'webhook_delivery':
      return `webhook ${step.kind} to ${step.endpointId}: ${step.status} after ${step.attempts} attempt(s)`;
    default:
      return step.type;
  }
}

export function AuditEntries({ entries }) {
  if (!entries.length) return html`<p>No audit entries.</p>`;
  return html`
    <div class="table-wrap" tabindex="0" role="region" aria-label="Audit entries">
      <table class="entries">
        <caption class="visually-hidden">Audit entries</caption>
        <thead><tr><th scope="col">#</th><th scope="col">At</th><th scope="col">Call</th><th scope="col">Status</th><th scope="col">Key</th><th scope="col">Hash</th></tr></thead>
        <tbody>
          ${entries.map(
            (e) => html`<tr key=${e.seq}>
              <td>${e.seq}</td>
              <td>${when(e.at)}</td>
              <td>${e.method} ${e.path}</td>
              <td>${e.status}${e.code ? ` ${e.code}` : ''}</td>
              <td>${e.keyId ?? '—'}</td>
              <td class="hash">${e.hash.slice(0, 16)}…</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `;
}

export function TraceSteps({ steps }) {
  return html`
    <ol class="steps">
      ${steps.map((step, i) => html`<li key=${i}><span class="step-type">${step.type.replace('_', ' ')}</span> <time>${when(step.at)}</time> ${stepText(step)}</li>`)}
    </ol>
  `;
}
