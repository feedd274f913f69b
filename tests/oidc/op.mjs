// op.mjs — the Caddie sign-in tests' OpenID Provider: the certified
// oidc-provider (v9) with a test-only login (any username, no password) and
// consent granted at once. In-memory; for tests only.
//
// An account id `sub~name` signs in with subject `sub~name` but
// preferred_username `name` (a provider that lets users pick their name).
//
//   npm i oidc-provider@9.13.3          (ESM only; deps: koa, jose, debug)
//   OP_PORT=9000 OP_CLIENT_ID=rp OP_CLIENT_SECRET=s3cret \
//   OP_REDIRECT_URIS=http://127.0.0.1:8080/callback node oidc-op.mjs
//
// Environment (all optional):
//   OP_HOST            listen address            (default 127.0.0.1)
//   OP_PORT            listen port, 0 = pick one (default 0); issuer = http://OP_HOST:port
//   OP_CLIENT_ID       (default test-client)
//   OP_CLIENT_SECRET   (default test-secret)     keep it URL-safe (see report, client_secret_basic)
//   OP_REDIRECT_URIS   comma/space separated     (default http://127.0.0.1:8080/callback)
//   OP_POST_LOGOUT_REDIRECT_URIS comma/space separated (default none)
//   OP_TOKEN_AUTH      client_secret_basic (default) | client_secret_post
//   OP_ID_TOKEN_ALG    RS256 (default) | ES256   -> client id_token_signed_response_alg
//   OP_AUTO_LOGIN      if set, every login prompt is completed as this account, no form (fully headless)
//   OP_TRUST_LOGIN_HINT=1  a login_hint in the authorization request logs that account in, no form
//   OP_JWKS_FILE       private JWKS to load; if the file does not exist, generated keys are written to it
//   OP_ENABLE_TEST_API=1 (default 1) exposes POST /__test/rotate, POST /__test/redirect_uris?uri=…
//                      (replaces the client's; with &add=1 adds to them) and GET /__test/state
//   OP_AUTO_GRANT=1    never ask for consent: a logged-in session is enough for any client/scope
//                      (prompt=none then only fails with login_required, never consent_required)
//   OP_CLAIMS_IN_ID_TOKEN=1  preferred_username in the ID token too (default: at userinfo only,
//                      as the OpenID Connect spec has it for scope-requested claims)
// On start it prints one line to stdout:  OIDC_OP_READY {"issuer":"http://127.0.0.1:PORT",...}
// (oidc-provider itself prints NOTICE lines on stdout and WARNING lines on stderr.)

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

import Provider from 'oidc-provider';

const env = process.env;
const HOST = env.OP_HOST || '127.0.0.1';
const PORT = Number(env.OP_PORT ?? 0);
const list = (v) => (v || '').split(/[\s,]+/).filter(Boolean);
const CLIENT = {
  client_id: env.OP_CLIENT_ID || 'test-client',
  client_secret: env.OP_CLIENT_SECRET || 'test-secret',
  redirect_uris: list(env.OP_REDIRECT_URIS || 'http://127.0.0.1:8080/callback'),
  post_logout_redirect_uris: list(env.OP_POST_LOGOUT_REDIRECT_URIS),
  grant_types: ['authorization_code'], // add 'refresh_token' (+ scope offline_access, prompt=consent) if needed
  response_types: ['code'],
  token_endpoint_auth_method: env.OP_TOKEN_AUTH || 'client_secret_basic',
  id_token_signed_response_alg: env.OP_ID_TOKEN_ALG || 'RS256',
};
const AUTO_LOGIN = env.OP_AUTO_LOGIN || '';
const TRUST_LOGIN_HINT = env.OP_TRUST_LOGIN_HINT === '1';
const TEST_API = (env.OP_ENABLE_TEST_API ?? '1') === '1';
const AUTO_GRANT = env.OP_AUTO_GRANT === '1';

// ---------------------------------------------------------------- keys
let generation = 0;
function newSigningKeys() {
  generation += 1;
  const tag = `${generation}-${crypto.randomBytes(3).toString('hex')}`;
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  // An explicit alg pins each key to one algorithm (otherwise an RSA key would also advertise PS256...).
  return [
    { ...rsa, kid: `rsa-${tag}`, use: 'sig', alg: 'RS256' },
    { ...ec, kid: `ec-${tag}`, use: 'sig', alg: 'ES256' },
  ];
}

let privateKeys; // ordered: for each alg the FIRST matching key signs; all keys are published in /jwks
if (env.OP_JWKS_FILE && fs.existsSync(env.OP_JWKS_FILE)) {
  privateKeys = JSON.parse(fs.readFileSync(env.OP_JWKS_FILE, 'utf8')).keys;
} else {
  privateKeys = newSigningKeys();
  if (env.OP_JWKS_FILE) fs.writeFileSync(env.OP_JWKS_FILE, JSON.stringify({ keys: privateKeys }, null, 2));
}

// ---------------------------------------------------------------- accounts
// Any account id is accepted; sub = the id the user typed.
async function findAccount(ctx, id /* , token */) {
  const shown = id.includes('~') ? id.split('~').pop() : id;
  return {
    accountId: id,
    // use: 'id_token' | 'userinfo'; oidc-provider filters the result by granted scopes/claims
    async claims(use, scope, claims, rejected) {
      return {
        sub: id,
        preferred_username: shown,
        name: shown,
        email: `${shown}@example.test`,
        email_verified: true,
      };
    },
  };
}

// ---------------------------------------------------------------- storage
// Minimal in-memory adapter whose storage lives at module level, so it is shared by every
// Provider instance in this process (needed for in-process key rotation below; the built-in
// MemoryAdapter of v9.13 gives each Provider instance its own private store).
const store = new Map(); // "Model:id" -> { payload, expiresAt }
const grantMembers = new Map(); // grantId -> Set<"Model:id">
const live = (key) => {
  const e = store.get(key);
  if (!e) return undefined;
  if (e.expiresAt <= Date.now()) { store.delete(key); return undefined; }
  return e.payload;
};
class SharedMemoryAdapter {
  constructor(name) { this.name = name; }
  key(id) { return `${this.name}:${id}`; }
  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    const expiresAt = expiresIn ? Date.now() + (expiresIn + 15) * 1000 : Infinity;
    store.set(key, { payload, expiresAt });
    if (this.name === 'Session' && payload.uid) store.set(`SessionUid:${payload.uid}`, { payload: id, expiresAt });
    if (payload.userCode) store.set(`UserCode:${payload.userCode}`, { payload: id, expiresAt });
    if (payload.grantId) {
      if (!grantMembers.has(payload.grantId)) grantMembers.set(payload.grantId, new Set());
      grantMembers.get(payload.grantId).add(key);
    }
  }
  async find(id) { return live(this.key(id)); }
  async findByUid(uid) { const id = live(`SessionUid:${uid}`); return id ? this.find(id) : undefined; }
  async findByUserCode(userCode) { const id = live(`UserCode:${userCode}`); return id ? this.find(id) : undefined; }
  async consume(id) { const p = live(this.key(id)); if (p) p.consumed = Math.floor(Date.now() / 1000); }
  async destroy(id) { store.delete(this.key(id)); }
  async revokeByGrantId(grantId) {
    for (const key of grantMembers.get(grantId) ?? []) store.delete(key);
    grantMembers.delete(grantId);
  }
}

// ---------------------------------------------------------------- provider factory
const addedRedirectUris = new Set();

function makeProvider(issuer, keys) {
  const provider = new Provider(issuer, {
    adapter: SharedMemoryAdapter,
    clients: [CLIENT],
    jwks: { keys },
    findAccount,
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name'],
      email: ['email', 'email_verified'],
    },
    scopes: ['openid', 'profile', 'email'], // no offline_access -> no refresh tokens
    responseTypes: ['code'], // discovery then advertises only code / authorization_code
    conformIdTokenClaims: env.OP_CLAIMS_IN_ID_TOKEN !== '1', // true: scope-requested claims at userinfo only
    // HS256 (signed with the client secret) only when a test asks for it.
    enabledJWA: {
      idTokenSigningAlgValues: CLIENT.id_token_signed_response_alg === 'HS256'
        ? ['HS256', 'RS256', 'ES256'] : ['RS256', 'ES256'],
    },
    pkce: { required: () => true }, // PKCE (S256 is the only method v9 supports) for every client
    features: {
      devInteractions: { enabled: false }, // we mount our own /interaction/:uid below
      rpInitiatedLogout: { enabled: true }, // default; gives end_session_endpoint
      userinfo: { enabled: true }, // default
    },
    interactions: {
      url: (ctx, interaction) => `/interaction/${interaction.uid}`, // this is also the default
    },
    // JSON instead of the default HTML error page (only used when the OP cannot redirect back)
    renderError(ctx, out /* , error */) {
      ctx.type = 'json';
      ctx.body = out;
    },
    ...(AUTO_GRANT && {
      // documented way to skip consent: return (and save) a grant for the current client+account
      async loadExistingGrant(ctx) {
        const grantId = ctx.oidc.result?.consent?.grantId
          || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
        const existing = grantId && await ctx.oidc.provider.Grant.find(grantId);
        const grant = existing || new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client.clientId,
          accountId: ctx.oidc.session.accountId,
        });
        grant.addOIDCScope('openid profile email');
        await grant.save();
        return grant;
      },
    }),
    // cookies: defaults are fine for http://127.0.0.1: httpOnly, SameSite=Lax, Secure only when ctx.secure
    // ttl: defaults (AuthorizationCode 60s, IdToken/AccessToken 3600s, Session 14d, Interaction 1h)
  });
  provider.on('server_error', (ctx, err) => console.error('oidc-op server_error', err));
  // Redirect URIs added by the test API (?add=1) besides the client's own
  // (oidc-provider's recipe for redirect URIs beyond the registered list).
  const registered = provider.Client.prototype.redirectUriAllowed;
  provider.Client.prototype.redirectUriAllowed = function redirectUriAllowed(value) {
    return addedRedirectUris.has(value) || registered.call(this, value);
  };
  return provider;
}

// ---------------------------------------------------------------- tiny http helpers
function send(res, status, type, body) {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'no-store');
  res.end(body);
}
async function readForm(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// ---------------------------------------------------------------- interactions
// login + consent in one step: log the account in AND grant every requested OIDC scope.
async function finishLogin(provider, req, res, details, accountId) {
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(String(details.params.scope || 'openid'));
  const grantId = await grant.save();
  return provider.interactionFinished(
    req,
    res,
    { login: { accountId, remember: true }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}

// consent prompt only (session already exists but no/insufficient grant): auto-approve what is missing.
async function finishConsent(provider, req, res, details) {
  const { prompt, params, session, grantId } = details;
  const grant = (grantId && await provider.Grant.find(grantId))
    || new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const d = prompt.details;
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  if (d.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  const result = { consent: { grantId: await grant.save() } };
  return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

function loginForm(uid, details) {
  const hint = details.params.login_hint ? esc(details.params.login_hint) : '';
  return `<!doctype html><html><head><meta charset="utf-8"><title>Test OP sign-in</title></head><body>
<h1>Test OP sign-in</h1><p>client: ${esc(details.params.client_id)}</p>
<form method="post" action="/interaction/${esc(uid)}">
  <input type="text" name="username" value="${hint}" autofocus required>
  <button type="submit">Sign in</button>
</form>
<p><a href="/interaction/${esc(uid)}/abort">cancel</a></p></body></html>`;
}

async function handleInteraction(provider, req, res, url) {
  const m = /^\/interaction\/([^/]+)(\/abort)?\/?$/.exec(url.pathname);
  if (!m) return send(res, 404, 'text/plain', 'not found');
  let details;
  try {
    details = await provider.interactionDetails(req, res); // reads the _interaction cookie
  } catch (err) {
    return send(res, 400, 'text/plain', `interaction error: ${err.message} ${err.error_description ?? ''}`); // e.g. cookie missing/expired
  }
  if (details.uid !== m[1]) return send(res, 400, 'text/plain', 'interaction uid / cookie mismatch');

  if (m[2]) {
    return provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'End-User aborted interaction',
    }, { mergeWithLastSubmission: false });
  }

  const { prompt, params } = details;
  if (prompt.name === 'login') {
    let username;
    if (req.method === 'POST') {
      username = (await readForm(req)).get('username');
    } else {
      username = url.searchParams.get('username') || AUTO_LOGIN
        || (TRUST_LOGIN_HINT ? params.login_hint : undefined);
    }
    if (username) return finishLogin(provider, req, res, details, String(username).trim());
    return send(res, 200, 'text/html; charset=utf-8', loginForm(details.uid, details));
  }
  if (prompt.name === 'consent') return finishConsent(provider, req, res, details);
  return send(res, 501, 'text/plain', `prompt ${prompt.name} not implemented`);
}

// ---------------------------------------------------------------- server
let provider;
let providerCallback;
let issuer;

function publicState() {
  return {
    issuer,
    discovery: `${issuer}/.well-known/openid-configuration`,
    client_id: CLIENT.client_id,
    token_endpoint_auth_method: CLIENT.token_endpoint_auth_method,
    id_token_signed_response_alg: CLIENT.id_token_signed_response_alg,
    kids: privateKeys.map((k) => `${k.kid}:${k.alg}`),
    signing: {
      RS256: privateKeys.find((k) => k.alg === 'RS256')?.kid,
      ES256: privateKeys.find((k) => k.alg === 'ES256')?.kid,
    },
  };
}

// Key rotation in-process: build a new Provider with the new keys first and swap it in.
// SharedMemoryAdapter keeps its storage at module level, so sessions, grants, codes and
// tokens issued by the previous instance stay valid after the swap.
function rotate({ keepOld }) {
  const fresh = newSigningKeys();
  privateKeys = keepOld ? [...fresh, ...privateKeys] : fresh;
  provider = makeProvider(issuer, privateKeys);
  providerCallback = provider.callback();
  if (env.OP_JWKS_FILE) fs.writeFileSync(env.OP_JWKS_FILE, JSON.stringify({ keys: privateKeys }, null, 2));
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (url.pathname.startsWith('/interaction/')) {
      return await handleInteraction(provider, req, res, url);
    }
    if (TEST_API && url.pathname === '/__test/state' && req.method === 'GET') {
      return send(res, 200, 'application/json', JSON.stringify(publicState()));
    }
    if (TEST_API && url.pathname === '/__test/redirect_uris' && req.method === 'POST' && url.searchParams.get('add') === '1') {
      // One more relying party (a provider many tests share): allowed at
      // once, the provider and everything in flight left as they are.
      for (const uri of url.searchParams.getAll('uri')) addedRedirectUris.add(uri);
      return send(res, 200, 'application/json', JSON.stringify(publicState()));
    }
    if (TEST_API && url.pathname === '/__test/redirect_uris' && req.method === 'POST') {
      // The relying party's address is known only once it runs.
      CLIENT.redirect_uris = url.searchParams.getAll('uri');
      provider = makeProvider(issuer, privateKeys);
      providerCallback = provider.callback();
      return send(res, 200, 'application/json', JSON.stringify(publicState()));
    }
    if (TEST_API && url.pathname === '/__test/rotate' && req.method === 'POST') {
      rotate({ keepOld: url.searchParams.get('keep_old') !== '0' });
      return send(res, 200, 'application/json', JSON.stringify(publicState()));
    }
    return providerCallback(req, res);
  } catch (err) {
    console.error('oidc-op handler error', err);
    if (!res.headersSent) send(res, 500, 'text/plain', 'internal error');
    else res.end();
  }
});

server.listen(PORT, HOST, () => {
  const { port } = server.address();
  issuer = `http://${HOST}:${port}`; // no trailing slash; must equal what the RP expects byte-for-byte
  provider = makeProvider(issuer, privateKeys);
  providerCallback = provider.callback();
  console.log(`OIDC_OP_READY ${JSON.stringify(publicState())}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0)); // don't wait for keep-alive sockets

