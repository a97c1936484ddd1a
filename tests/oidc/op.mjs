// A real, certified OpenID Provider for coe's sign-in tests: panva's oidc-provider on
// loopback, plain http. Started by tests/api/oidc.rs:
//   node op.mjs --port P --redirect URI --post-logout URI --keys DIR --kids k1
// Signing keys are RSA keys kept in DIR/<kid>.json (made when missing); the first kid
// signs. `POST /test/rotate?kids=k2,k1` makes the provider afresh with those keys (as
// a restart with a new configuration would: k2 signs, k1 is still published) behind
// the same listening socket, so the test need not win its port back.
// Prints "OP READY <issuer>" once listening.
//
// Accounts: the login typed on its login page is the account (any password). Some
// accounts get a doctored ID token (re-signed after the provider made it), for the
// negative tests: wrong-aud, expired, forged (signed with a key the provider never
// published, under its published kid), unknown-key (the same, under an unknown kid),
// bad-nonce, wrong-iss; and skewed (expired 30 s ago: within coe's allowance).
// noverify has no email_verified claim; other-sub's UserInfo answer names another sub.
//
// Claims: as shipped, the scopes' claims come from UserInfo (/me) only;
// --claims-in-id-token puts them in the ID token too; --userinfo-signed answers /me
// with a signed JWT; --no-kid signs ID tokens with no `kid` in their header.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Provider from 'oidc-provider';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT } from 'jose';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    redirect: { type: 'string', multiple: true, default: [] },
    'post-logout': { type: 'string', multiple: true, default: [] },
    keys: { type: 'string' },
    kids: { type: 'string', default: 'k1' },
    'client-id': { type: 'string', default: 'coe' },
    'client-secret': { type: 'string', default: 'coe-test-secret' },
    // Off: oidc-provider as shipped puts the scopes' claims (email, profile, groups)
    // at UserInfo only, not in the ID token (OpenID Connect Core 5.4). On: in the ID
    // token too, as Okta, Entra ID, Google and Keycloak do.
    'claims-in-id-token': { type: 'boolean', default: false },
    // The UserInfo answer as a signed JWT (oidc-provider's jwtUserinfo feature).
    'userinfo-signed': { type: 'boolean', default: false },
    // ID tokens signed with no `kid` in their header (allowed with one published key).
    'no-kid': { type: 'boolean', default: false },
    // coe's back-channel logout URI: the provider posts a logout token there when a
    // person signs out at the provider (its backchannelLogout feature).
    backchannel: { type: 'string' },
  },
});

const issuer = `http://127.0.0.1:${args.port}`;
// Each step of the start on stderr (the test's op.log), timed: a start that never
// says it is ready shows where it stopped.
const began = Date.now();
const step = (what) => console.error(`op: ${what} after ${Date.now() - began} ms`);
step('modules loaded');

function rsaKey(kid) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
}

function keptKey(kid) {
  const path = join(args.keys, `${kid}.json`);
  if (!existsSync(path)) writeFileSync(path, JSON.stringify(rsaKey(kid)));
  return JSON.parse(readFileSync(path, 'utf8'));
}

// The keys published now (the first signs), and what coe asked by path since the
// provider was last made.
let jwks;
let counts;
// Never published: what a forger would sign with.
const forgersKey = rsaKey('forger');
step('keys ready');

const ACCOUNTS = {
  alice: { email: 'alice@example.com', email_verified: true, name: 'Alice Admin', groups: ['coe-admins', 'eng'] },
  carol: { email: 'carol@example.com', email_verified: true, name: 'Carol Member', groups: ['eng'] },
  bob: { email: 'bob@example.com', email_verified: false, name: 'Bob Unverified', groups: [] },
  outsider: { email: 'eve@elsewhere.org', email_verified: true, name: 'Eve Outsider', groups: [] },
  'wrong-aud': { email: 'wa@example.com', email_verified: true, name: 'Wrong Audience', groups: [], tamper: { aud: 'someone-else' } },
  expired: { email: 'ex@example.com', email_verified: true, name: 'Expired', groups: [], tamper: { expOffset: -600 } },
  forged: { email: 'fo@example.com', email_verified: true, name: 'Forged', groups: [], tamper: { forge: 'same-kid' } },
  'unknown-key': { email: 'uk@example.com', email_verified: true, name: 'Unknown Key', groups: [], tamper: { forge: 'new-kid' } },
  'bad-nonce': { email: 'bn@example.com', email_verified: true, name: 'Bad Nonce', groups: [], tamper: { nonce: 'not-yours' } },
  'wrong-iss': { email: 'wi@example.com', email_verified: true, name: 'Wrong Issuer', groups: [], tamper: { iss: 'http://evil.invalid' } },
  // Expired 30 s ago: within the clock difference coe allows.
  skewed: { email: 'sk@example.com', email_verified: true, name: 'Skewed Clock', groups: [], tamper: { expOffset: -30 } },
  // A provider that never says whether it verified the address (Entra ID).
  noverify: { email: 'nv@example.com', name: 'No Verified Claim', groups: [] },
  'other-sub': { email: 'os@example.com', email_verified: true, name: 'Other Sub', groups: [] },
};

const configuration = () => ({
  clients: [{
    client_id: args['client-id'],
    client_secret: args['client-secret'],
    redirect_uris: args.redirect,
    post_logout_redirect_uris: args['post-logout'],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...(args['userinfo-signed'] ? { userinfo_signed_response_alg: 'RS256' } : {}),
    ...(args.backchannel
      ? { backchannel_logout_uri: args.backchannel, backchannel_logout_session_required: true }
      : {}),
  }],
  jwks,
  // The provider refuses to post to special-use addresses, loopback included (its SSRF
  // protection, which hands `fetch` a guarded dispatcher); here coe is on loopback, so
  // the test provider's back-channel logout posts skip that guard. Nothing else of its
  // behaviour changes; a real provider reaches coe at its public address.
  ...(args.backchannel
    ? { fetch: (url, options) => globalThis.fetch(url, { ...options, dispatcher: undefined }) }
    : {}),
  cookies: { keys: ['test-cookie-key-not-secret'] },
  pkce: { required: () => true },
  // The shipped default unless asked: the scopes' claims at /me (UserInfo) only.
  ...(args['claims-in-id-token'] ? { conformIdTokenClaims: false } : {}),
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    jwtUserinfo: { enabled: args['userinfo-signed'] },
    backchannelLogout: { enabled: Boolean(args.backchannel) },
  },
  // Grant every requested scope at once: the browser sees the login page only.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope([...(ctx.oidc.requestParamScopes ?? ['openid'])].join(' '));
    await grant.save();
    return grant;
  },
  async findAccount(ctx, id) {
    const account = ACCOUNTS[id] ?? { email: `${id}@example.com`, email_verified: true, name: id, groups: [] };
    const { tamper, ...claims } = account;
    return { accountId: id, async claims() { return { sub: id, ...claims }; } };
  },
});

// The provider with the keys `kids`, as a request handler.
function made(kids) {
  jwks = { keys: kids.split(',').map(keptKey) };
  counts = {};
  const provider = new Provider(issuer, configuration());
  // What became of each back-channel logout, in op.log.
  provider.on('backchannel.success', (ctx, client, accountId, sid) => {
    console.error(`op: back-channel logout of ${accountId} (sid ${sid}) delivered to ${client.clientId}`);
  });
  provider.on('backchannel.error', (ctx, err, client, accountId, sid) => {
    console.error(`op: back-channel logout of ${accountId} (sid ${sid}) failed: ${err.message}`);
  });
  // What coe asked of the provider, by path: GET /test/counts (a test checks that a
  // sign-in costs one token request, and that keys are fetched again only when needed).
  provider.use(async (ctx, next) => {
    counts[ctx.path] = (counts[ctx.path] ?? 0) + 1;
    await next();
  });

  // The built-in pages @import a web font: strip it, so the browser only talks to loopback.
  provider.use(async (ctx, next) => {
    await next();
    if (typeof ctx.body === 'string' && ctx.body.includes('fonts.googleapis.com')) {
      ctx.body = ctx.body.replace(/@import url\(https:\/\/fonts\.googleapis\.com[^)]*\);?/g, '');
    }
  });

  // After UserInfo: the account `other-sub` is answered about someone else.
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/me' && ctx.status === 200 && ctx.body?.sub === 'other-sub') {
      ctx.body = { ...ctx.body, sub: 'someone-else' };
    }
  });

  // After the token endpoint: doctor the ID token of the negative-test accounts.
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path !== '/token' || ctx.status !== 200 || !ctx.body?.id_token) return;
    const payload = decodeJwt(ctx.body.id_token);
    const header = decodeProtectedHeader(ctx.body.id_token);
    const tamper = ACCOUNTS[payload.sub]?.tamper;
    if (!tamper && args['no-kid']) {
      const signed = await new SignJWT(payload)
        .setProtectedHeader({ alg: header.alg })
        .sign(await importJWK(jwks.keys[0], header.alg));
      ctx.body = { ...ctx.body, id_token: signed };
      return;
    }
    if (!tamper) return;
    let key = jwks.keys[0];
    let kid = header.kid;
    if (tamper.aud) payload.aud = tamper.aud;
    if (tamper.iss) payload.iss = tamper.iss;
    if (tamper.nonce) payload.nonce = tamper.nonce;
    if (tamper.expOffset) {
      const now = Math.floor(Date.now() / 1000);
      payload.exp = now + tamper.expOffset;
      payload.iat = payload.exp - 3600;
    }
    if (tamper.forge) {
      key = forgersKey;
      if (tamper.forge === 'new-kid') kid = 'never-published';
    }
    const signed = await new SignJWT(payload)
      .setProtectedHeader({ alg: header.alg, kid })
      .sign(await importJWK(key, header.alg));
    ctx.body = { ...ctx.body, id_token: signed };
  });

  return provider.callback();
}

let handle = made(args.kids);
step('provider made');

const server = createServer((req, res) => {
  const url = new URL(req.url, issuer);
  if (url.pathname === '/test/counts') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(counts));
  } else if (url.pathname === '/test/logout-token' && req.method === 'POST') {
    // A logout token as the provider would sign one (for the tests of what coe
    // refuses): ?sub=&sid=&jti=&aud=&key=forger&nonce=1&noevent=1&iat=<offset s>.
    const q = url.searchParams;
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: issuer,
      aud: q.get('aud') ?? args['client-id'],
      iat: now + Number(q.get('iat') ?? 0),
      jti: q.get('jti') ?? `jti-${Math.random()}`,
      ...(q.get('noevent') ? {} : { events: { 'http://schemas.openid.net/event/backchannel-logout': {} } }),
      ...(q.get('sub') ? { sub: q.get('sub') } : {}),
      ...(q.get('sid') ? { sid: q.get('sid') } : {}),
      ...(q.get('nonce') ? { nonce: 'n' } : {}),
    };
    const key = q.get('key') === 'forger' ? forgersKey : jwks.keys[0];
    importJWK(key, 'RS256')
      .then((signing) => new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: jwks.keys[0].kid, typ: 'logout+jwt' })
        .sign(signing))
      .then((token) => res.end(token));
  } else if (url.pathname === '/test/rotate' && req.method === 'POST') {
    handle = made(url.searchParams.get('kids'));
    res.end('rotated');
  } else {
    handle(req, res);
  }
});
server.listen(Number(args.port), '127.0.0.1', () => {
  step('listening');
  console.log(`OP READY ${issuer}`);
});
