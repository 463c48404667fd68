// Audit and policies: the loaded policies and their module hashes (each linking to its Rego,
// policy.js), the audit chain checked on demand, and a search of the audit log by trace
// reference or decision id.
import { html, Component } from './html.js';
import { api } from './api.js';
import { hasScope, when } from './decision-rules.js';
import { AuditEntries, TraceSteps } from './trace-view.js';

export class AuditPage extends Component {
  constructor() {
    super();
    this.state = { policies: null, policiesError: null, chain: null, chainError: null, checking: false, found: null, searchError: null };
    this.verify = this.verify.bind(this);
    this.search = this.search.bind(this);
  }

  async componentDidMount() {
    try {
      this.setState({ policies: (await api('GET', '/v1/policies')).data });
    } catch (error) {
      this.setState({ policiesError: error.message });
    }
  }

  async verify() {
    this.setState({ checking: true, chainError: null });
    try {
      this.setState({ chain: await api('GET', '/v1/audit/status'), checking: false });
    } catch (error) {
      this.setState({ chainError: error.message, checking: false });
    }
  }

  async search(event) {
    event.preventDefault();
    const ref = event.currentTarget.elements.ref.value.trim();
    if (!ref) return;
    this.setState({ found: null, searchError: null });
    try {
      this.setState({ found: await api('GET', `/v1/impact/trace?ref=${encodeURIComponent(ref)}&limit=500`) });
    } catch (error) {
      this.setState({ searchError: error.status === 404 ? `Nothing is recorded under ${ref} in your environment.` : error.message });
    }
  }

  render({ me }, { policies, policiesError, chain, chainError, checking, found, searchError }) {
    return html`
      <main id="main" tabindex="-1">
        <h1>Audit & policies</h1>

        <section aria-labelledby="policies-h">
          <h2 id="policies-h">Loaded policies</h2>
          ${policiesError && html`<p class="error" role="alert">${policiesError}</p>`}
          ${policies &&
          html`<div class="table-wrap" tabindex="0" role="region" aria-label="Loaded policies">
            <table class="policies">
              <thead><tr><th scope="col">Policy</th><th scope="col">Version</th><th scope="col">Module hash</th><th scope="col">Sources</th></tr></thead>
              <tbody>
                ${policies.map(
                  (p) => html`<tr key=${p.name}>
                    <td><a href=${`#/policies/${encodeURIComponent(p.name)}`}>${p.name}</a></td>
                    <td>${p.version ?? '—'}</td>
                    <td class="hash">${p.moduleHash}</td>
                    <td>${p.origin ? `${p.origin}: ` : ''}${p.sources.join(', ') || '—'}${p.revision ? ` (revision ${p.revision})` : ''}</td>
                  </tr>`,
                )}
              </tbody>
            </table>
          </div>`}
        </section>

        <section aria-labelledby="chain-h">
          <h2 id="chain-h">Audit chain</h2>
          ${hasScope(me, 'admin')
            ? html`<button type="button" onClick=${this.verify} disabled=${checking}>${checking ? 'Verifying…' : 'Verify the chain'}</button>`
            : html`<p>Verifying the chain walks every entry: it needs the admin scope.</p>`}
          ${chainError && html`<p class="error" role="alert">${chainError}</p>`}
          ${chain &&
          html`<dl class="pairs chain" aria-live="polite">
            <div><dt>Status</dt><dd class=${chain.ok ? 'ok' : 'error'}>${chain.ok ? 'Intact' : 'Broken'}</dd></div>
            <div><dt>Last verified entry</dt><dd>#${chain.lastVerified.seq} <span class="hash">${chain.lastVerified.hash}</span></dd></div>
            <div><dt>Entries</dt><dd>${chain.entries}</dd></div>
            <div><dt>Checked</dt><dd>${when(chain.verifiedAt)}</dd></div>
            ${chain.broken && html`<div><dt>First broken entry</dt><dd>#${chain.broken.seq}: ${chain.broken.reason}</dd></div>`}
          </dl>`}
        </section>

        <section aria-labelledby="search-h">
          <h2 id="search-h">Search the audit log</h2>
          <form role="search" onSubmit=${this.search} class="field">
            <label for="ref">Trace reference or decision id</label>
            <div class="row">
              <input id="ref" name="ref" placeholder="trace_… or dec_…" spellcheck="false" />
              <button type="submit" disabled=${!hasScope(me, 'impact:read')}>Search</button>
            </div>
          </form>
          ${!hasScope(me, 'impact:read') && html`<p>Searching needs the impact:read scope.</p>`}
          ${searchError && html`<p class="error" role="alert">${searchError}</p>`}
          ${found &&
          html`<div class="found">
            ${found.decision
              ? html`<p>Decision <a href=${`#/decisions/${encodeURIComponent(found.decision.id)}`}>${found.decision.title}</a> (${found.decision.status})</p>`
              : html`<p>No stored decision: the calls under ${found.ref} were refused.</p>`}
            <${AuditEntries} entries=${found.entries} />
            <h3>Trace</h3>
            <${TraceSteps} steps=${found.steps} />
          </div>`}
        </section>
      </main>
    `;
  }
}
