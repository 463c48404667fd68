// The inbox: decisions newest first, filtered and counted by the server (GET /v1/decisions and
// GET /v1/decisions/counts), a page at a time, refreshed as the stream reports changes.
import { html, Component } from './html.js';
import { api, withQuery } from './api.js';
import { label, when } from './decision-rules.js';

const PAGE_SIZE = 20;
const STATUSES = ['created', 'approved', 'blocked', 'executed', 'rejected', 'cancelled'];
const FILTERS = ['status', 'gate', 'nextAction', 'policy', 'q'];
/** Stream events arriving together cause one reload. */
const RELOAD_DELAY_MS = 150;

function options(known, counts) {
  return [...new Set([...known, ...Object.keys(counts ?? {})])].sort();
}

export class Inbox extends Component {
  constructor() {
    super();
    this.state = { filters: { status: '', gate: '', nextAction: '', policy: '', q: '' }, cursors: [null], page: null, counts: null, error: null };
    this.changed = this.changed.bind(this);
    this.search = this.search.bind(this);
  }

  componentDidMount() {
    this.load();
    this.stop = this.props.live?.on(() => this.reloadSoon());
  }

  componentWillUnmount() {
    this.stop?.();
    clearTimeout(this.timer);
  }

  reloadSoon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.load(), RELOAD_DELAY_MS);
  }

  async load() {
    const { filters, cursors } = this.state;
    const cursor = cursors.at(-1);
    const requested = JSON.stringify([filters, cursor]);
    this.requested = requested;
    try {
      const [page, counts] = await Promise.all([
        api('GET', withQuery('/v1/decisions', { ...filters, order: 'desc', limit: PAGE_SIZE, cursor })),
        api('GET', withQuery('/v1/decisions/counts', filters)),
      ]);
      // An answer for filters or a page the reviewer has since left is dropped.
      if (this.requested === requested) this.setState({ page, counts, error: null });
    } catch (error) {
      if (this.requested === requested) this.setState({ error: error.message });
    }
  }

  changed(event) {
    const { name, value } = event.currentTarget;
    this.setState({ filters: { ...this.state.filters, [name]: value }, cursors: [null] }, () => this.load());
  }

  search(event) {
    event.preventDefault();
    this.setState({ filters: { ...this.state.filters, q: event.currentTarget.elements.q.value.trim() }, cursors: [null] }, () => this.load());
  }

  quick(nextAction) {
    this.setState({ filters: { ...this.state.filters, status: '', nextAction }, cursors: [null] }, () => this.load());
  }

  turn(forward) {
    const cursors = forward ? [...this.state.cursors, this.state.page.nextCursor] : this.state.cursors.slice(0, -1);
    this.setState({ cursors }, () => this.load());
  }

  select(name, title, values, counts) {
    const current = this.state.filters[name];
    return html`
      <div class="field">
        <label for=${`filter-${name}`}>${title}</label>
        <select id=${`filter-${name}`} name=${name} value=${current} onChange=${this.changed}>
          <option value="">Any</option>
          ${options(current ? [...values, current] : values, counts).map((value) => html`<option value=${value}>${value} (${counts?.[value] ?? 0})</option>`)}
        </select>
      </div>
    `;
  }

  render({ me }, { filters, cursors, page, counts, error }) {
    const pending = counts?.nextAction ?? {};
    return html`
      <main id="main" tabindex="-1">
        <h1>Inbox</h1>
        <p class="env">Environment: <strong>${me.env}</strong>, your key's: a key sees only its own environment's decisions.</p>
        <p class="summary">
          <button type="button" class="chip" onClick=${() => this.quick('approve')} aria-pressed=${filters.nextAction === 'approve'}>
            Awaiting approval: ${pending.approve ?? 0}
          </button>
          <button type="button" class="chip" onClick=${() => this.quick('execute')} aria-pressed=${filters.nextAction === 'execute'}>
            Awaiting execution: ${pending.execute ?? 0}
          </button>
          <button type="button" class="chip" onClick=${() => this.quick('')} aria-pressed=${!filters.nextAction}>All</button>
        </p>
        <section class="filters" aria-label="Filters">
          ${this.select('status', 'Status', STATUSES, counts?.status)}
          ${this.select('gate', 'Gate', [], counts?.gate)}
          ${this.select('nextAction', 'Next action', [], counts?.nextAction)}
          ${this.select('policy', 'Policy', [], counts?.policy)}
          <form class="field search" role="search" onSubmit=${this.search}>
            <label for="filter-q">Title contains</label>
            <div class="row">
              <input id="filter-q" name="q" type="search" value=${filters.q} />
              <button type="submit">Search</button>
            </div>
          </form>
        </section>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <p class="count" aria-live="polite">${counts ? `${counts.total} decision${counts.total === 1 ? '' : 's'}` : 'Loading…'}</p>
        ${page && page.data.length === 0 && html`<p>No decisions match.</p>`}
        ${page &&
        html`<ul class="decisions">
          ${page.data.map(
            (d) => html`
              <li key=${d.id} class="decision-item" data-id=${d.id}>
                <a href=${`#/decisions/${encodeURIComponent(d.id)}`} class="title">${d.title}</a>
                <span class="label">${label(d)}</span>
                <span class="status status-${d.status}">${d.status}</span>
                <span class="meta">${d.policy} · ${when(d.createdAt)}</span>
              </li>
            `,
          )}
        </ul>`}
        <nav class="paging" aria-label="Pages">
          <button type="button" disabled=${cursors.length === 1} onClick=${() => this.turn(false)}>Newer</button>
          <span>Page ${cursors.length}</span>
          <button type="button" disabled=${!page?.nextCursor} onClick=${() => this.turn(true)}>Older</button>
        </nav>
      </main>
    `;
  }
}
