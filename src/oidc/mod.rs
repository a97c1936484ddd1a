//! The OpenID Provider (`auth.mode = "oidc"`): discovery, the authorization-code flow
//! with PKCE, `state` and `nonce`, and the ID token's checks (signature against the
//! provider's keys, issuer, audience, expiry, nonce), all by the `openidconnect` crate.
//! What the provider's word lets in is `domain::auth` (`vouched_address`,
//! `admin_by_groups`) and `services::accounts::auth::oidc_session`; the pages are
//! `http::pages::oidc`.
//!
//! The discovery document and the keys are fetched on first use and kept: a sign-in
//! costs one request to the provider (the code's exchange) besides the browser's.
//! A token signed with a key the kept set lacks fetches the set again (at most every
//! `KEYS_REFETCH_MIN`), so the provider may rotate its keys.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration as StdDuration, Instant};

use chrono::Duration;
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType,
    CoreGenderClaim, CoreIdTokenVerifier, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    reqwest, AdditionalClaims, AuthorizationCode, ClaimsVerificationError, Client, ClientId,
    ClientSecret, CsrfToken, EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet,
    IdTokenClaims, IdTokenFields, IssuerUrl, JsonWebKeySet, LogoutRequest, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, PostLogoutRedirectUrl,
    ProviderMetadataWithLogout, RedirectUrl, Scope, SignatureVerificationError,
    StandardErrorResponse, StandardTokenResponse, TokenResponse,
};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::config::Settings;

mod logout;
mod problems;
mod user_info;

use problems::{chain, discovery_problem, token_problem, HttpError};

pub use logout::Logout;

/// The clock difference allowed between coe and the provider.
pub const CLOCK_SKEW_SECS: i64 = 60;

/// The discovery document is fetched again after this long (the keys too).
const DISCOVERY_MAX_AGE: StdDuration = StdDuration::from_secs(3600);

/// After a failed discovery, the provider is asked again only after this long (the
/// failure, or the document kept, answers meanwhile): a provider that is down is
/// not asked by every sign-in at once.
const DISCOVERY_RETRY: StdDuration = StdDuration::from_secs(5);

/// An unknown signing key fetches the key set again at most this often.
pub const KEYS_REFETCH_MIN: StdDuration = StdDuration::from_secs(2);

/// How long the provider may take to answer one request.
const PROVIDER_TIMEOUT: StdDuration = StdDuration::from_secs(10);

/// The path of the callback, under `public_url` (the redirect URI to register).
pub const CALLBACK_PATH: &str = "/sign-in/oidc/callback";

/// Every claim of the ID token besides the standard ones, read leniently: the groups
/// claim is named by `auth.oidc.groups_claim` and its shape varies by provider.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    claims: HashMap<String, serde_json::Value>,
}

impl AdditionalClaims for OtherClaims {}

type IdToken = openidconnect::IdToken<
    OtherClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

type IdFields = IdTokenFields<
    OtherClaims,
    EmptyExtraTokenFields,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

/// The client as discovery makes it: an authorization endpoint; a token endpoint
/// "maybe" (`exchange_code` checks it).
type OidcClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    StandardTokenResponse<IdFields, CoreTokenType>,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why a sign-in through the provider did not work. Each is a page (`http::pages::oidc`)
/// and a log line with the reason; none signs anyone in.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OidcError {
    /// The provider cannot be reached or its discovery document is not usable: 503.
    #[error("the sign-in provider cannot be reached: {0}")]
    Unreachable(String),
    /// The provider said no (the person refused, or not allowed; a code it will not
    /// exchange): 403.
    #[error("the sign-in provider refused: {0}")]
    Refused(String),
    /// The callback is not the end of a sign-in this browser began (no or another
    /// `state`, a replay): 400.
    #[error("{0}")]
    Callback(String),
    /// The ID token failed its checks (signature, issuer, audience, expiry, nonce),
    /// or the provider's answer cannot be read: 401.
    #[error("the provider's ID token was refused: {0}")]
    Token(String),
    /// A back-channel logout token failed its checks (section 2.6): 400.
    #[error("the logout token was refused: {0}")]
    LogoutToken(String),
}

/// The person as the provider's ID token describes them.
#[derive(Debug, Clone)]
pub struct Identity {
    pub subject: String,
    /// The ID token's `iss`.
    pub issuer: String,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub name: Option<String>,
    /// The person's groups; `None` when the provider left them out for being too
    /// many (Entra ID's "overage": `_claim_names` points elsewhere for them), so
    /// that they cannot be known from the token.
    pub groups: Option<Vec<String>>,
    /// The provider's session (the ID token's `sid`), which its back-channel logout
    /// names.
    pub session: Option<String>,
    /// Whether the ID token listed the groups (else UserInfo is asked, when admins
    /// follow groups).
    pub groups_in_token: bool,
    /// The ID token itself, handed back to the provider on sign-out.
    pub id_token: String,
}

/// What a sign-in must remember from its start to the callback. Kept in a cookie of
/// the browser that started it (so a callback in another browser, or a second time,
/// finds none): its `state` is compared with the callback's, its nonce with the ID
/// token's, and its PKCE verifier proves to the provider that the code is ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    /// The page to go to once signed in (already `safe_next`).
    pub next: String,
}

impl Pending {
    /// `state.nonce.verifier.next`: the first three are base64url (no `.`); `next`
    /// is form-encoded.
    pub fn to_cookie(&self) -> String {
        let next: String = form_urlencoded::byte_serialize(self.next.as_bytes()).collect();
        format!("{}.{}.{}.{}", self.state, self.nonce, self.verifier, next)
    }

    pub fn from_cookie(value: &str) -> Option<Pending> {
        let mut parts = value.splitn(4, '.');
        let (state, nonce, verifier, next) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 128
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if !(plain(state) && plain(nonce) && plain(verifier)) {
            return None;
        }
        let next = form_urlencoded::parse(format!("n={next}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())?;
        Some(Pending {
            state: state.into(),
            nonce: nonce.into(),
            verifier: verifier.into(),
            next,
        })
    }

    /// Whether the callback's `state` is this sign-in's (in constant time).
    pub fn state_matches(&self, presented: &str) -> bool {
        bool::from(self.state.as_bytes().ct_eq(presented.as_bytes()))
    }
}

/// What discovery found, and the client built from it.
struct Discovered {
    metadata: ProviderMetadataWithLogout,
    client: OidcClient,
    fetched: Instant,
    keys_fetched: Instant,
}

impl Discovered {
    /// The provider's published keys, as JSON (for `jsonwebtoken`).
    fn keys_json(&self) -> String {
        serde_json::to_string(self.metadata.jwks()).unwrap_or_default()
    }
}

/// The provider, as this replica knows it. Built at start-up without contacting it:
/// discovery happens at the first sign-in (an unreachable provider does not stop the
/// service; its pages say so).
pub struct Provider {
    http: reqwest::Client,
    issuer: String,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    redirect: RedirectUrl,
    post_logout: String,
    scopes: Vec<String>,
    groups_claim: String,
    /// Whether admins follow groups (`auth.oidc.admin_groups`): then they are read
    /// from UserInfo when the ID token does not list them.
    wants_groups: bool,
    current: RwLock<Option<Arc<Discovered>>>,
    /// The last failed discovery: when, and why.
    failed: RwLock<Option<(Instant, OidcError)>>,
}

impl Provider {
    /// The provider of `auth.oidc`; `None` unless `auth.mode = "oidc"`.
    pub fn from_settings(settings: &Settings) -> Result<Option<Provider>, String> {
        if settings.auth.mode != crate::config::AuthMode::Oidc {
            return Ok(None);
        }
        let o = &settings.auth.oidc;
        let base = settings.public_url.trim_end_matches('/');
        let redirect = RedirectUrl::new(format!("{base}{CALLBACK_PATH}"))
            .map_err(|e| format!("public_url does not make a redirect URI: {e}"))?;
        let http = reqwest::ClientBuilder::new()
            // A provider's answer never sends coe elsewhere (SSRF).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        let secret = o.client_secret.expose();
        Ok(Some(Provider {
            http,
            issuer: o.issuer.clone(),
            client_id: ClientId::new(o.client_id.clone()),
            client_secret: (!secret.is_empty()).then(|| ClientSecret::new(secret.to_owned())),
            redirect,
            post_logout: format!("{base}/sign-in"),
            scopes: o.scopes.clone(),
            groups_claim: o.groups_claim.clone(),
            wants_groups: !o.admin_groups.is_empty(),
            current: RwLock::new(None),
            failed: RwLock::new(None),
        }))
    }

    /// The redirect URI registered at the provider.
    pub fn redirect_uri(&self) -> &str {
        self.redirect.as_str()
    }

    /// The issuer, as configured.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    fn kept(&self) -> Option<Arc<Discovered>> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn keep(&self, discovered: Arc<Discovered>) {
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(discovered);
    }

    /// What discovery found: kept, or fetched (when there is none or it is an hour
    /// old; an old one is used still when the provider cannot be reached).
    async fn discovered(&self) -> Result<Arc<Discovered>, OidcError> {
        let kept = self.kept();
        if let Some(d) = kept
            .as_ref()
            .filter(|d| d.fetched.elapsed() < DISCOVERY_MAX_AGE)
        {
            return Ok(d.clone());
        }
        let recent_failure = self
            .failed
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .filter(|(at, _)| at.elapsed() < DISCOVERY_RETRY)
            .map(|(_, e)| e.clone());
        let fetched = match recent_failure {
            // Not asked again so soon: the failure stands (or the document kept).
            Some(e) => return kept.ok_or(e),
            None => self.discover().await,
        };
        match fetched {
            Ok(DiscoverySummary(fresh)) => {
                let fresh = Arc::new(fresh);
                self.keep(fresh.clone());
                Ok(fresh)
            }
            Err(e) => {
                *self
                    .failed
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Some((Instant::now(), e.clone()));
                match kept {
                    Some(old) => {
                        tracing::warn!(error = %e, "the sign-in provider's discovery document cannot be fetched again; using the one kept");
                        Ok(old)
                    }
                    None => Err(e),
                }
            }
        }
    }

    /// Fetches the discovery document and the keys (`coe check-config` uses it too).
    pub async fn discover(&self) -> Result<DiscoverySummary, OidcError> {
        let issuer = IssuerUrl::new(self.issuer.clone())
            .map_err(|e| OidcError::Unreachable(format!("the issuer is not a URL: {e}")))?;
        let metadata = ProviderMetadataWithLogout::discover_async(issuer, &self.http)
            .await
            .map_err(|e| OidcError::Unreachable(discovery_problem(&e)))?;
        let now = Instant::now();
        Ok(DiscoverySummary(Discovered {
            client: self.client_for(&metadata),
            metadata,
            fetched: now,
            keys_fetched: now,
        }))
    }

    fn client_for(&self, metadata: &ProviderMetadataWithLogout) -> OidcClient {
        OidcClient::from_provider_metadata(
            metadata.clone(),
            self.client_id.clone(),
            self.client_secret.clone(),
        )
        .set_redirect_uri(self.redirect.clone())
    }

    /// The first half: where to send the browser, and what to remember until it
    /// comes back.
    pub async fn begin(&self, next: String) -> Result<(url::Url, Pending), OidcError> {
        let discovered = self.discovered().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = discovered.client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in self.scopes.iter().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok((
            url,
            Pending {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                verifier: verifier.secret().clone(),
                next,
            },
        ))
    }

    /// The second half, once the callback's `state` matched: exchanges the code (the
    /// one request to the provider) and checks the ID token.
    pub async fn finish(&self, code: &str, pending: &Pending) -> Result<Identity, OidcError> {
        let discovered = self.discovered().await?;
        let response = discovered
            .client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Unreachable(format!("no token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| token_problem(&e))?;
        let id_token = response
            .id_token()
            .ok_or_else(|| OidcError::Token("the provider's answer has no ID token".into()))?;
        let nonce = Nonce::new(pending.nonce.clone());
        let checked = id_token
            .claims(&self.verifier(&discovered.client), &nonce)
            .map(|c| self.identity(c, id_token));
        let identity = match checked {
            Ok(identity) => identity,
            // A signature that fails with the keys kept: the provider may have rotated
            // its keys (a new `kid`, or none at all, when every kept key is tried and
            // fails). Fetch them again (not too often) and check once more.
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey
                | SignatureVerificationError::CryptoError(_),
            )) => {
                let fresh = self.refetch_keys(&discovered).await?;
                let rechecked = id_token
                    .claims(&self.verifier(&fresh.client), &nonce)
                    .map(|c| self.identity(c, id_token))
                    .map_err(|e| OidcError::Token(e.to_string()));
                rechecked?
            }
            Err(e) => return Err(OidcError::Token(e.to_string())),
        };
        if !self.issuer_accepted(&identity.issuer) {
            return Err(OidcError::Token(format!(
                "issued by {:?}, not by the configured issuer {:?}",
                identity.issuer, self.issuer
            )));
        }
        if self.needs_user_info(&identity) {
            return self
                .with_user_info(&discovered, response.access_token(), identity)
                .await;
        }
        Ok(identity)
    }

    /// Google documents its issuer as `https://accounts.google.com` and says ID tokens
    /// may carry `accounts.google.com`: for that issuer only, both are accepted.
    fn google(&self) -> bool {
        self.issuer.trim_end_matches('/') == "https://accounts.google.com"
    }

    fn issuer_accepted(&self, iss: &str) -> bool {
        !self.google() || matches!(iss, "https://accounts.google.com" | "accounts.google.com")
    }

    fn verifier<'a>(&self, client: &'a OidcClient) -> CoreIdTokenVerifier<'a> {
        // For Google the issuer is checked by `issuer_accepted`, both spellings.
        verifier(client).require_issuer_match(!self.google())
    }

    async fn refetch_keys(&self, seen: &Arc<Discovered>) -> Result<Arc<Discovered>, OidcError> {
        if let Some(kept) = self.kept().filter(|k| !Arc::ptr_eq(k, seen)) {
            return Ok(kept);
        }
        if seen.keys_fetched.elapsed() < KEYS_REFETCH_MIN {
            return Err(OidcError::Token(
                "signed with a key the provider does not publish, or its signature does not verify (the keys were fetched moments ago)"
                    .into(),
            ));
        }
        let keys = JsonWebKeySet::fetch_async(seen.metadata.jwks_uri(), &self.http)
            .await
            .map_err(|e| OidcError::Unreachable(format!("its keys cannot be fetched: {e}")))?;
        tracing::info!(
            keys = keys.keys().len(),
            "the sign-in provider's signing keys fetched again (a token named a key not kept)"
        );
        let metadata = seen.metadata.clone().set_jwks(keys);
        let fresh = Arc::new(Discovered {
            client: self.client_for(&metadata),
            metadata,
            fetched: seen.fetched,
            keys_fetched: Instant::now(),
        });
        self.keep(fresh.clone());
        Ok(fresh)
    }

    fn identity(
        &self,
        claims: &IdTokenClaims<OtherClaims, CoreGenderClaim>,
        id_token: &impl std::fmt::Display,
    ) -> Identity {
        Identity {
            subject: claims.subject().as_str().to_owned(),
            issuer: claims.issuer().as_str().to_owned(),
            email: claims.email().map(|e| e.as_str().to_owned()),
            email_verified: claims.email_verified(),
            name: claims
                .name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned()),
            groups: self.groups(claims.additional_claims()),
            session: claims
                .additional_claims()
                .claims
                .get("sid")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            groups_in_token: claims
                .additional_claims()
                .claims
                .contains_key(&self.groups_claim),
            id_token: id_token.to_string(),
        }
    }

    fn groups(&self, other: &OtherClaims) -> Option<Vec<String>> {
        let overage = other
            .claims
            .get("_claim_names")
            .and_then(|names| names.get(&self.groups_claim))
            .is_some();
        if overage && !other.claims.contains_key(&self.groups_claim) {
            return None;
        }
        Some(groups_of(other.claims.get(&self.groups_claim)))
    }

    /// Where to send the browser after coe's session ended: the provider's
    /// `end_session_endpoint` (RP-initiated logout), back to coe's sign-in page;
    /// `None` when the provider offers none or cannot be reached.
    pub async fn logout_url(&self, id_token: Option<&str>) -> Option<String> {
        let discovered = match self.discovered().await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "signing out of coe only: the provider's sign-out cannot be found");
                return None;
            }
        };
        let end = discovered
            .metadata
            .additional_metadata()
            .end_session_endpoint
            .clone()?;
        let back = PostLogoutRedirectUrl::new(self.post_logout.clone()).ok()?;
        let mut request = LogoutRequest::from(end)
            .set_client_id(self.client_id.clone())
            .set_post_logout_redirect_uri(back);
        // The token the session began with tells the provider whose session to end
        // (some providers insist on it); a session without one names the client only.
        let hint = id_token.and_then(|t| t.parse::<IdToken>().ok());
        if let Some(hint) = &hint {
            request = request.set_id_token_hint(hint);
        }
        Some(request.http_get_url().to_string())
    }
}

/// What `coe check-config` says of the provider.
pub struct DiscoverySummary(Discovered);

impl DiscoverySummary {
    /// Lines describing the endpoints found.
    pub fn describe(&self) -> Vec<String> {
        let m = &self.0.metadata;
        vec![
            format!("issuer: {}", m.issuer().as_str()),
            format!(
                "authorization endpoint: {}",
                m.authorization_endpoint().as_str()
            ),
            format!(
                "token endpoint: {}",
                m.token_endpoint()
                    .map_or("(none: sign-in cannot work)", |u| u.as_str())
            ),
            format!(
                "signing keys: {} at {}",
                m.jwks().keys().len(),
                m.jwks_uri().as_str()
            ),
            format!(
                "sign-out (end_session_endpoint): {}",
                m.additional_metadata()
                    .end_session_endpoint
                    .as_ref()
                    .map_or("none: signing out ends coe's session only", |u| u.as_str())
            ),
        ]
    }

    /// Whether the provider can sign people in: a token endpoint and signing keys.
    pub fn usable(&self) -> Result<(), String> {
        let m = &self.0.metadata;
        if m.token_endpoint().is_none() {
            return Err("the discovery document names no token_endpoint".into());
        }
        if m.jwks().keys().is_empty() {
            return Err(format!(
                "the provider publishes no signing keys at {}",
                m.jwks_uri().as_str()
            ));
        }
        Ok(())
    }
}

/// The ID token's checks, with `CLOCK_SKEW_SECS` allowed either way: expiry (`exp`
/// may be that far past) and issue time (`iat` may be that far ahead). Audience,
/// issuer, signature (algorithms from discovery) and nonce are the crate's.
fn verifier(client: &OidcClient) -> CoreIdTokenVerifier<'_> {
    client
        .id_token_verifier()
        .set_time_fn(|| crate::domain::clock::now() - Duration::seconds(CLOCK_SKEW_SECS))
        .set_issue_time_verifier_fn(|iat| {
            if iat > crate::domain::clock::now() + Duration::seconds(CLOCK_SKEW_SECS) {
                Err(format!("issued in the future ({iat})"))
            } else {
                Ok(())
            }
        })
}

/// The groups claim: a list of names (strings; anything else in it is skipped), or
/// one name; absent or any other shape is no groups.
fn groups_of(claim: Option<&serde_json::Value>) -> Vec<String> {
    match claim {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|g| g.as_str().map(str::to_owned))
            .collect(),
        Some(serde_json::Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_sign_in_survives_its_cookie_and_refuses_tampering() {
        let pending = Pending {
            state: "s-1_A".into(),
            nonce: "n2".into(),
            verifier: "v3".into(),
            next: "/coes/01?tab=a.b&x=1 2".into(),
        };
        assert_eq!(
            Pending::from_cookie(&pending.to_cookie()),
            Some(pending.clone())
        );
        assert_eq!(Pending::from_cookie("s.n"), None);
        assert_eq!(Pending::from_cookie("s;x.n.v./"), None);
        assert_eq!(Pending::from_cookie(".n.v./"), None);
        assert!(pending.state_matches("s-1_A"));
        assert!(!pending.state_matches("s-1_B"));
        assert!(!pending.state_matches(""));
    }

    fn provider_of(issuer: &str) -> Provider {
        let mut settings = Settings::default();
        settings.auth.mode = crate::config::AuthMode::Oidc;
        settings.auth.oidc.issuer = issuer.into();
        settings.auth.oidc.client_id = "coe".into();
        Provider::from_settings(&settings)
            .expect("settings")
            .expect("a provider")
    }

    #[test]
    fn googles_issuer_is_accepted_in_both_its_spellings_for_google_only() {
        let google = provider_of("https://accounts.google.com");
        assert!(google.issuer_accepted("https://accounts.google.com"));
        assert!(google.issuer_accepted("accounts.google.com"));
        assert!(!google.issuer_accepted("https://accounts.google.com.evil.example"));
        assert!(!google.issuer_accepted("https://login.microsoftonline.com/x/v2.0"));
        // Any other issuer is matched exactly by the ID token verifier.
        let other = provider_of("https://login.example.com");
        assert!(!other.google());
    }

    #[test]
    fn groups_are_read_leniently() {
        use serde_json::json;
        assert_eq!(groups_of(Some(&json!(["a", 3, "b"]))), vec!["a", "b"]);
        assert_eq!(groups_of(Some(&json!("admins"))), vec!["admins"]);
        assert!(groups_of(Some(&json!({"a": 1}))).is_empty());
        assert!(groups_of(None).is_empty());
    }
}
