// One loaded policy (#/policies/<name>): its version, module hash and origin, and the Rego text its
// module was compiled from, so a reviewer reads the rules behind a decision where they approve it.
import { html, Component } from './html.js';
import { api } from './api.js';

export class PolicyPage extends Component {
  constructor() {
    super();
    this.state = { policy: null, error: null };
  }

  async componentDidMount() {
    try {
      this.setState({ policy: await api('GET', `/v1/policies/${encodeURIComponent(this.props.name)}`) });
    } catch (error) {
      this.setState({ error: error.status === 404 ? `No policy named ${this.props.name} is loaded.` : error.message });
    }
  }

  render({ name }, { policy, error }) {
    const hasOwnFile = policy?.modules.some((m) => isOwnFile(name, m.path));
    return html`
      <main id="main" tabindex="-1">
        <p><a href="#/audit">← Audit & policies</a></p>
        <h1>${name}</h1>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${policy &&
        html`<dl class="pairs">
            <div><dt>Version</dt><dd>${policy.version ?? '—'}</dd></div>
            <div><dt>Module hash</dt><dd class="hash">${policy.moduleHash}</dd></div>
            <div><dt>Origin</dt><dd>${policy.origin ?? '—'}${policy.revision ? ` (revision ${policy.revision})` : ''}</dd></div>
          </dl>
          <section aria-labelledby="sources-h">
            <h2 id="sources-h">Sources</h2>
            ${policy.modules.length === 0
              ? html`<p>The server kept no Rego text for this module (${policy.sources.join(', ') || 'no sources'}).</p>`
              : policy.modules.map(
                  (m) => html`<details key=${m.path} open=${!hasOwnFile || isOwnFile(name, m.path)}>
                    <summary><code>${m.path}</code></summary>
                    <pre class="text source" tabindex="0" aria-label=${`Rego source ${m.path}`}><code>${m.text}</code></pre>
                  </details>`,
                )}
          </section>`}
      </main>
    `;
  }
}

/** A policy's own file is `<name>.rego` wherever it sits; it starts open and the libraries folded. */
function isOwnFile(name, path) {
  return path === `${name}.rego` || path.endsWith(`/${name}.rego`);
}
