// The console's shell: sign-in, the navigation, and which page the address (its #fragment)
// shows. Pages: the inbox (#/), a decision (#/decisions/<id>), audit and policies (#/audit), a
// policy with its Rego (#/policies/<name>).
import { html, render, Component } from './html.js';
import { ApiError, onUnauthenticated, redeemCode, SIGN_IN_CODE, signIn, signOut, whoAmI } from './api.js';
import { Live } from './live.js';
import { Inbox } from './inbox.js';
import { DecisionPage } from './decision.js';
import { AuditPage } from './audit.js';
import { PolicyPage } from './policy.js';

function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const decision = /^\/decisions\/([^/?]+)$/.exec(hash);
  if (decision) return { page: 'decision', id: decodeURIComponent(decision[1]) };
  if (hash === '/audit') return { page: 'audit' };
  const policy = /^\/policies\/([^/?]+)$/.exec(hash);
  if (policy) return { page: 'policy', name: decodeURIComponent(policy[1]) };
  return { page: 'inbox' };
}

/** What a refused sign-in says, in the words of someone holding a key or a code. */
function signInError(error) {
  if (!(error instanceof ApiError)) return 'The server could not be reached.';
  if (error.problem.code === 'signature_required') {
    return 'This key must sign its requests, which this page cannot do with it: sign in with a one-time sign-in code instead (POST /v1/sessions/codes, signed with one of the key’s signing keys).';
  }
  return error.message;
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
    // sign-in only the HttpOnly session cookie authenticates, out of any script's reach. A
    // sign-in code is used up by this call.
    const secret = input.value.trim();
    input.value = '';
    if (!secret) return this.setState({ error: 'Enter an API key or a sign-in code.' });
    this.setState({ busy: true, error: null });
    try {
      this.props.onSignedIn(await (SIGN_IN_CODE.test(secret) ? redeemCode(secret) : signIn(secret)));
    } catch (error) {
      this.setState({ busy: false, error: signInError(error) });
    }
  }

  render({ note }, { error, busy }) {
    return html`
      <main id="main" class="sign-in">
        <h1>Gatehouse console</h1>
        <p>
          Sign in with your API key, or, for a key that must sign its requests (a production key), with a one-time sign-in code. Either is exchanged for a
          session that ends after 8 idle hours (12 at most) and is not stored in this browser.
        </p>
        ${note && html`<p class="note" role="status">${note}</p>`}
        <form onSubmit=${this.submit}>
          <label for="key">API key or sign-in code</label>
          <input id="key" name="key" type="password" autocomplete="off" spellcheck="false" required aria-describedby=${error ? 'sign-in-error' : undefined} />
          <button type="submit" disabled=${busy}>Sign in</button>
        </form>
        ${error && html`<p id="sign-in-error" class="error" role="alert">${error}</p>`}
      </main>
    `;
  }
}

/** A session opened with a code signs with a key that lived only in the page that opened it. */
const LOST_KEY =
  'This browser’s session was opened with a sign-in code in a page that has been reloaded or closed, and its signing key went with that page. Sign in again.';

class App extends Component {
  constructor() {
    super();
    this.state = { me: null, checked: false, route: route(), live: 'connecting', note: null };
    this.signedIn = this.signedIn.bind(this);
    this.signOut = this.signOut.bind(this);
    this.navigated = () => this.setState({ route: route() });
  }

  async componentDidMount() {
    addEventListener('hashchange', this.navigated);
    onUnauthenticated((reason) => this.ended(reason));
    try {
      this.signedIn(await whoAmI());
    } catch (error) {
      this.setState({ checked: true, note: error instanceof ApiError && error.problem.code === 'signature_required' ? LOST_KEY : null });
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
    this.setState({ me, checked: true, live: 'connecting', note: null });
  }

  ended(note = null) {
    this.live?.close();
    this.live = null;
    this.setState({ me: null, checked: true, note });
  }

  async signOut() {
    await signOut().catch(() => {});
    this.ended();
  }

  page() {
    const { me, route } = this.state;
    if (route.page === 'decision') return html`<${DecisionPage} key=${route.id} id=${route.id} me=${me} live=${this.live} />`;
    if (route.page === 'audit') return html`<${AuditPage} me=${me} />`;
    if (route.page === 'policy') return html`<${PolicyPage} key=${route.name} name=${route.name} />`;
    return html`<${Inbox} me=${me} live=${this.live} />`;
  }

  render(_, { me, checked, route, live, note }) {
    if (!checked) return html`<main id="main"><p>Loading…</p></main>`;
    if (!me) return html`<${SignIn} onSignedIn=${this.signedIn} note=${note} />`;
    return html`
      <a class="skip" href="#main" onClick=${skipToMain}>Skip to content</a>
      <header class="top">
        <nav aria-label="Console">
          <a href="#/" aria-current=${route.page === 'inbox' ? 'page' : undefined}>Inbox</a>
          <a href="#/audit" aria-current=${route.page === 'audit' || route.page === 'policy' ? 'page' : undefined}>Audit & policies</a>
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
