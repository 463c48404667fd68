// The console's shell: sign-in, the navigation, and which page the address (its #fragment)
// shows. Pages: the inbox (#/), a decision (#/decisions/<id>), audit and policies (#/audit).
import { html, render, Component } from './html.js';
import { ApiError, onUnauthenticated, signIn, signOut, whoAmI } from './api.js';
import { Live } from './live.js';
import { Inbox } from './inbox.js';
import { DecisionPage } from './decision.js';
import { AuditPage } from './audit.js';

function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const decision = /^\/decisions\/([^/?]+)$/.exec(hash);
  if (decision) return { page: 'decision', id: decodeURIComponent(decision[1]) };
  if (hash === '/audit') return { page: 'audit' };
  return { page: 'inbox' };
}

class SignIn extends Component {
  constructor() {
    super();
    this.state = { error: null, busy: false };
    this.submit = this.submit.bind(this);
  }

  async submit(event) {
    event.preventDefault();
    const input = event.currentTarget.elements.key;
    // The key goes to the server once, in this call, and is wiped from the form at once: after
    // sign-in only the HttpOnly session cookie authenticates, out of any script's reach.
    const key = input.value.trim();
    input.value = '';
    if (!key) return this.setState({ error: 'Enter an API key.' });
    this.setState({ busy: true, error: null });
    try {
      this.props.onSignedIn(await signIn(key));
    } catch (error) {
      const message = error instanceof ApiError ? error.message : 'The server could not be reached.';
      this.setState({ busy: false, error: message });
    }
  }

  render(_, { error, busy }) {
    return html`
      <main id="main" class="sign-in">
        <h1>Gatehouse console</h1>
        <p>Sign in with your API key. It is exchanged for a session that ends after 8 idle hours (12 at most) and is not stored in this browser.</p>
        <form onSubmit=${this.submit}>
          <label for="key">API key</label>
          <input id="key" name="key" type="password" autocomplete="off" spellcheck="false" required aria-describedby=${error ? 'sign-in-error' : undefined} />
          <button type="submit" disabled=${busy}>Sign in</button>
        </form>
        ${error && html`<p id="sign-in-error" class="error" role="alert">${error}</p>`}
      </main>
    `;
  }
}

class App extends Component {
  constructor() {
    super();
    this.state = { me: null, checked: false, route: route(), live: 'connecting' };
    this.signedIn = this.signedIn.bind(this);
    this.signOut = this.signOut.bind(this);
    this.navigated = () => this.setState({ route: route() });
  }

  async componentDidMount() {
    addEventListener('hashchange', this.navigated);
    onUnauthenticated(() => this.ended());
    try {
      this.signedIn(await whoAmI());
    } catch {
      this.setState({ checked: true });
    }
  }

  componentWillUnmount() {
    removeEventListener('hashchange', this.navigated);
    this.live?.close();
  }

  signedIn(me) {
    this.live?.close();
    this.live = new Live();
    this.live.onState((state) => this.setState({ live: state }));
    this.setState({ me, checked: true, live: 'connecting' });
  }

  ended() {
    this.live?.close();
    this.live = null;
    this.setState({ me: null, checked: true });
  }

  async signOut() {
    await signOut().catch(() => {});
    this.ended();
  }

  page() {
    const { me, route } = this.state;
    if (route.page === 'decision') return html`<${DecisionPage} key=${route.id} id=${route.id} me=${me} live=${this.live} />`;
    if (route.page === 'audit') return html`<${AuditPage} me=${me} />`;
    return html`<${Inbox} me=${me} live=${this.live} />`;
  }

  render(_, { me, checked, route, live }) {
    if (!checked) return html`<main id="main"><p>Loading…</p></main>`;
    if (!me) return html`<${SignIn} onSignedIn=${this.signedIn} />`;
    return html`
      <a class="skip" href="#main" onClick=${skipToMain}>Skip to content</a>
      <header class="top">
        <nav aria-label="Console">
          <a href="#/" aria-current=${route.page === 'inbox' ? 'page' : undefined}>Inbox</a>
          <a href="#/audit" aria-current=${route.page === 'audit' ? 'page' : undefined}>Audit & policies</a>
        </nav>
        <div class="who">
          <span class="live ${live}" role="status">${live === 'live' ? 'Live' : live === 'offline' ? 'Offline: reconnecting' : 'Connecting…'}</span>
          <span>${me.name ?? me.keyId} · ${me.env}</span>
          <button type="button" class="quiet" onClick=${this.signOut}>Sign out</button>
        </div>
      </header>
      ${this.page()}
    `;
  }
}

/** The skip link moves focus without changing the #fragment the pages are routed by. */
function skipToMain(event) {
  event.preventDefault();
  document.getElementById('main')?.focus();
}

render(html`<${App} />`, document.getElementById('app'));
