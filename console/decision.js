// One decision: what it is, what its policy said, who approved it, what it holds back, its
// history, audit entries and trace, and the actions the signed-in key may take on it.
import { html, Component } from './html.js';
import { api, ApiError } from './api.js';
import { actions, hasScope, label, policyVersion, when } from './decision-rules.js';
import { AuditEntries, TraceSteps } from './trace-view.js';

const DONE = { approve: 'Approved', reject: 'Rejected', execute: 'Executed', cancel: 'Cancelled' };

function Context({ context }) {
  if (typeof context === 'string') return context ? html`<pre class="text" tabindex="0" aria-label="Context">${context}</pre>` : html`<p>None.</p>`;
  if (!context.length) return html`<p>None.</p>`;
  return html`
    <dl class="pairs">
      ${context.map((entry, i) => html`<div key=${i}><dt>${entry.source}</dt><dd>${String(entry.value)}</dd></div>`)}
    </dl>
  `;
}

function Held({ held }) {
  const via = held.via.route ? `proxy route ${held.via.route}` : `tool ${held.via.tool} (agent ${held.via.agentId}, run ${held.via.runId})`;
  return html`
    <section aria-labelledby="held-h">
      <h2 id="held-h">What executing it sends</h2>
      <dl class="pairs">
        <div><dt>Request</dt><dd><code>${held.request.method} ${held.request.target}</code></dd></div>
        ${held.request.upstream && html`<div><dt>Upstream</dt><dd><code>${held.request.upstream}</code></dd></div>`}
        <div><dt>Requested by</dt><dd>${held.requestedBy ?? 'an unauthenticated caller'} via ${via}, ${when(held.requestedAt)}</dd></div>
        <div><dt>State</dt><dd>${held.state}</dd></div>
      </dl>
      <h3>Body${held.request.truncated ? ` (first part of ${held.request.bodyBytes} bytes)` : ''}</h3>
      ${held.request.bodyBytes ? html`<pre class="text" tabindex="0" aria-label="Request body">${held.request.body}</pre>` : html`<p>Empty.</p>`}
    </section>
  `;
}

export class DecisionPage extends Component {
  constructor() {
    super();
    this.state = { decision: null, held: null, trace: null, traceError: null, error: null, busy: false, outcome: null };
    this.act = this.act.bind(this);
  }

  componentDidMount() {
    this.load();
    this.stop = this.props.live?.on((event) => {
      if (event.topic === `decisions/${this.props.id}`) this.load();
    });
  }

  componentWillUnmount() {
    this.stop?.();
  }

  async load() {
    const id = encodeURIComponent(this.props.id);
    try {
      const decision = await api('GET', `/v1/decisions/${id}`);
      this.setState({ decision, error: null });
      if (decision.subject && decision.subject.type !== 'key') {
        this.setState({ held: await api('GET', `/v1/decisions/${id}/held`).catch(() => null) });
      }
      await this.loadTrace(id);
    } catch (error) {
      this.setState({ error: error instanceof ApiError && error.status === 404 ? 'No such decision in your environment.' : error.message });
    }
  }

  async loadTrace(id) {
    if (!hasScope(this.props.me, 'impact:read')) return this.setState({ traceError: 'Your key lacks impact:read: the audit entries and trace are not shown.' });
    try {
      this.setState({ trace: await api('GET', `/v1/impact/trace?decision=${id}&limit=500`), traceError: null });
    } catch (error) {
      this.setState({ traceError: error.message });
    }
  }

  async act(action, form) {
    const comment = form.elements.comment.value.trim();
    this.setState({ busy: true, outcome: null });
    try {
      const decision = await api('POST', `/v1/decisions/${encodeURIComponent(this.props.id)}/${action}`, { body: comment ? { comment } : {} });
      form.elements.comment.value = '';
      this.setState({ decision, busy: false, outcome: { ok: true, message: `${DONE[action]}. Status: ${decision.status}.` } });
      await this.loadTrace(encodeURIComponent(this.props.id));
    } catch (error) {
      const problem = error instanceof ApiError ? error.problem : {};
      this.setState({ busy: false, outcome: { ok: false, message: error.message, title: problem.title, reasons: problem.reasons ?? [] } });
      this.load();
    }
  }

  render({ me }, { decision, held, trace, traceError, error, busy, outcome }) {
    if (error) return html`<main id="main" tabindex="-1"><h1>Decision</h1><p class="error" role="alert">${error}</p><p><a href="#/">Back to the inbox</a></p></main>`;
    if (!decision) return html`<main id="main" tabindex="-1"><p>Loading…</p></main>`;
    const d = decision;
    return html`
      <main id="main" tabindex="-1" class="decision">
        <p><a href="#/">← Inbox</a></p>
        <h1 class="decision-title">${d.title}</h1>
        <p class="facts">
          <span class="label">${label(d)}</span>
          <span class="status status-${d.status}">${d.status}</span>
          <span>${d.id}</span>
        </p>

        <section aria-labelledby="act-h" class="act">
          <h2 id="act-h">Act</h2>
          <form id="act-form" onSubmit=${(e) => e.preventDefault()}>
            <label for="comment">Comment</label>
            <textarea id="comment" name="comment" rows="2" maxlength="4096"></textarea>
            <div class="buttons">
              ${actions(d, me).map(
                (a) => html`<button type="button" class=${`action action-${a.action}`} disabled=${busy || !a.enabled} title=${a.why ?? undefined}
                  aria-describedby=${a.why ? `why-${a.action}` : undefined} onClick=${(event) => this.act(a.action, event.currentTarget.form)}>${a.name}</button>`,
              )}
            </div>
            <ul class="why">
              ${actions(d, me)
                .filter((a) => a.why)
                .map((a) => html`<li id=${`why-${a.action}`}>${a.name}: ${a.why}</li>`)}
            </ul>
          </form>
          <div aria-live="polite" class="outcome">
            ${outcome &&
            html`<div class=${outcome.ok ? 'ok' : 'error'} role=${outcome.ok ? 'status' : 'alert'}>
              <p>${outcome.ok ? outcome.message : `${outcome.title ?? 'Refused'}: ${outcome.message}`}</p>
              ${outcome.reasons?.length > 0 && html`<ul class="reasons refusal">${outcome.reasons.map((r, i) => html`<li key=${i}>${r}</li>`)}</ul>`}
            </div>`}
          </div>
        </section>

        <section aria-labelledby="policy-h">
          <h2 id="policy-h">Policy</h2>
          <dl class="pairs">
            <div><dt>Policy</dt><dd><a href=${`#/policies/${encodeURIComponent(d.policy)}`}>${d.policy}</a>${policyVersion(d.policy) !== null ? ` (version ${policyVersion(d.policy)})` : ''}</dd></div>
            <div><dt>Module</dt><dd class="hash">${d.moduleHash}</dd></div>
            <div><dt>Created</dt><dd>${when(d.createdAt)} by ${d.createdBy}</dd></div>
            <div><dt>Audit trail</dt><dd><code>${d.auditTrail}</code></dd></div>
          </dl>
          <h3>Reasons</h3>
          ${d.reasons.length ? html`<ul class="reasons">${d.reasons.map((r, i) => html`<li key=${i}>${r}</li>`)}</ul>` : html`<p>The policy gave none.</p>`}
        </section>

        <section aria-labelledby="approvals-h">
          <h2 id="approvals-h">Approvals</h2>
          <p>
            Required: ${d.requiredApprovals.count}${d.requiredApprovals.roles.length ? ` from ${d.requiredApprovals.roles.join(', ')}` : ''};
            recorded: ${d.approvals.length}.
          </p>
          ${d.approvals.length > 0 &&
          html`<ul class="approvals">
            ${d.approvals.map((a, i) => html`<li key=${i}>${a.keyId}${a.roles.length ? ` (${a.roles.join(', ')})` : ''}, ${when(a.at)}${a.comment ? html`: <q>${a.comment}</q>` : ''}</li>`)}
          </ul>`}
        </section>

        ${held && html`<${Held} held=${held} />`}

        <section aria-labelledby="context-h">
          <h2 id="context-h">Context and inputs</h2>
          <${Context} context=${d.context} />
          <h3>Inputs</h3>
          ${d.inputs.length ? html`<ul>${d.inputs.map((input) => html`<li key=${input}><code>${input}</code></li>`)}</ul>` : html`<p>None.</p>`}
          ${d.objectives.length > 0 && html`<h3>Objectives</h3><ul>${d.objectives.map((o, i) => html`<li key=${i}>${o}</li>`)}</ul>`}
        </section>

        <section aria-labelledby="history-h">
          <h2 id="history-h">History</h2>
          <ol class="history">
            ${d.history.map((step, i) => html`<li key=${i}>${step.action} by ${step.keyId}, ${when(step.at)} → ${step.status}${step.comment ? html`: <q>${step.comment}</q>` : ''}</li>`)}
          </ol>
        </section>

        <section aria-labelledby="audit-h">
          <h2 id="audit-h">Audit entries</h2>
          ${traceError ? html`<p>${traceError}</p>` : trace ? html`<${AuditEntries} entries=${trace.entries} />` : html`<p>Loading…</p>`}
        </section>

        ${trace &&
        html`<section aria-labelledby="trace-h">
          <h2 id="trace-h">Impact trace</h2>
          <${TraceSteps} steps=${trace.steps} />
        </section>`}
      </main>
    `;
  }
}
