//! What a page handler takes, with the rules made types: a form that changes something
//! is a `CsrfForm` (its token checked against the session's before the handler runs),
//! an admin page takes an `Admin`, a sign-in form a `SameOrigin`, a form posted to a
//! link that carries its own secret a `LinkForm`. The routes of
//! `pages::configure` register every POST through [`form`], which accepts only a
//! handler whose first argument is one of the guarded forms: a POST page route
//! without the check does not compile.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, Handler, HttpRequest, Responder, Route};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::error::PageError;
use super::kit::State;
use crate::http::session::{same_origin_only, SignedIn};
use crate::http::state::AppState;

/// Who may post a form: a signed-in person, or one who must also be an admin.
pub trait Signer: Sized + 'static {
    /// `who`, when they may; otherwise why not.
    fn admit(who: SignedIn) -> Result<Self, PageError>;

    /// The signed-in person.
    fn person(&self) -> &SignedIn;
}

impl Signer for SignedIn {
    fn admit(who: SignedIn) -> Result<Self, PageError> {
        Ok(who)
    }

    fn person(&self) -> &SignedIn {
        self
    }
}

/// A signed-in person the directory marks as an admin: the admin pages take one.
pub struct Admin(pub SignedIn);

impl Signer for Admin {
    fn admit(who: SignedIn) -> Result<Self, PageError> {
        if who.person.is_admin {
            Ok(Admin(who))
        } else {
            Err(PageError::Forbidden(
                "only admins see the admin pages; an admin token makes someone an admin with \
                 PUT /api/v1/people/{email}/admin"
                    .into(),
            ))
        }
    }

    fn person(&self) -> &SignedIn {
        &self.0
    }
}

impl FromRequest for Admin {
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, PageError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let who = SignedIn::from_request(req, payload);
        Box::pin(async move { Admin::admit(who.await?) })
    }
}

/// A form posted by a signed-in person (`W`: `SignedIn`, or `Admin`), its CSRF token
/// checked before the handler runs; `fields` is the rest of the form as `T`.
pub struct CsrfForm<T, W = SignedIn> {
    pub who: W,
    pub fields: T,
}

impl<T: DeserializeOwned + 'static, W: Signer> FromRequest for CsrfForm<T, W> {
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, PageError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let who = SignedIn::from_request(req, payload);
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            let who = W::admit(who.await?)?;
            let bytes = body
                .await
                .map_err(|e| PageError::BadRequest(format!("the form could not be read: {e}")))?;
            let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
                .map_err(|e| PageError::BadRequest(format!("the form is not a form: {e}")))?;
            let presented = pairs
                .iter()
                .find(|(name, _)| name == "csrf")
                .map_or("", |(_, v)| v.as_str());
            who.person().check_csrf(presented)?;
            let fields = serde_urlencoded::from_bytes(&bytes).map_err(|e| {
                PageError::BadRequest(format!("the form's fields are not as expected: {e}"))
            })?;
            Ok(CsrfForm { who, fields })
        })
    }
}

/// A form posted without a session: `ORIGIN_CHECKED`, it must come from a page of
/// this service (`SameOrigin`); otherwise from anywhere (`LinkForm`). `fields` is the
/// form as `T`.
pub struct Posted<T, const ORIGIN_CHECKED: bool> {
    pub fields: T,
}

/// A sign-in form, posted from a page of this service (there is no session yet, so
/// no CSRF token: another site's page posting its own link token would sign the
/// visitor in as the attacker).
pub type SameOrigin<T> = Posted<T, true>;

/// A form posted to an address that carries its own secret (an unsubscribe link):
/// whoever holds the link may use it, signed in or not, from any site (RFC 8058's
/// one-click POST comes from the mail provider's servers). The handler checks the
/// secret; nothing of a session is used.
pub type LinkForm<T> = Posted<T, false>;

impl<T: DeserializeOwned + 'static, const ORIGIN_CHECKED: bool> FromRequest
    for Posted<T, ORIGIN_CHECKED>
{
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, PageError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let checked = match ORIGIN_CHECKED {
            true => req
                .app_data::<web::Data<AppState>>()
                .ok_or_else(|| PageError::Internal("no application state".into()))
                .and_then(|state| same_origin_only(req, &state.settings.public_url)),
            false => Ok(()),
        };
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            checked?;
            Ok(Posted {
                fields: read_form(body).await?,
            })
        })
    }
}

/// A form's body read as `T`, or why not.
async fn read_form<T: DeserializeOwned>(
    body: impl Future<Output = Result<web::Bytes, actix_web::Error>>,
) -> Result<T, PageError> {
    let bytes = body
        .await
        .map_err(|e| PageError::BadRequest(format!("the form could not be read: {e}")))?;
    serde_urlencoded::from_bytes(&bytes)
        .map_err(|e| PageError::BadRequest(format!("the form's fields are not as expected: {e}")))
}

/// The argument lists of handlers whose first argument is a guarded form.
pub trait Guarded {}

macro_rules! guarded {
    ($($rest:ident),*) => {
        impl<T, W, $($rest,)*> Guarded for (CsrfForm<T, W>, $($rest,)*) {}
        impl<T, const O: bool, $($rest,)*> Guarded for (Posted<T, O>, $($rest,)*) {}
    };
}
guarded!();
impl Guarded for (CoeForm,) {}
guarded!(A);
guarded!(A, B);
guarded!(A, B, C);

/// A POST page route: only a handler that takes a guarded form first.
pub fn form<F, Args>(handler: F) -> Route
where
    F: Handler<Args>,
    Args: FromRequest + Guarded + 'static,
    F::Output: Responder + 'static,
{
    web::post().to(handler)
}

/// A submitted form's fields, in order (a name may repeat: the 5 whys' steps).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(transparent)]
pub struct Fields(Vec<(String, String)>);

impl Fields {
    /// The fields of part `part` of a page that is one form (`{part}.{name}`), named
    /// without the prefix, with the page's version; a form of that part alone (its
    /// fields unprefixed, as the API's callers and older pages send it) as it is.
    pub fn part(&self, part: &str) -> Fields {
        let prefix = format!("{part}.");
        let own: Vec<(String, String)> = self
            .0
            .iter()
            .filter_map(|(n, v)| Some((n.strip_prefix(&prefix)?.to_owned(), v.clone())))
            .collect();
        if own.is_empty() {
            return self.clone();
        }
        let shared = self.0.iter().filter(|(n, _)| n == "version").cloned();
        Fields(own.into_iter().chain(shared).collect())
    }

    /// The names of the fields sent, in order (a repeated name as often as sent).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// The parts of a page that is one form (the `{part}` of each `{part}.{name}`),
    /// each once, but `except`.
    pub fn parts(&self, except: &str) -> Vec<&str> {
        let mut parts: Vec<&str> = self
            .names()
            .filter_map(|n| n.split_once('.').map(|(part, _)| part))
            .filter(|part| *part != except)
            .collect();
        parts.sort_unstable();
        parts.dedup();
        parts
    }

    /// Whether nothing was typed in them: every field but the page's own (its token,
    /// version and keys) and the choices a form starts with (a kind, a priority, a
    /// factor, a severity) is empty.
    pub fn is_blank(&self) -> bool {
        self.0
            .iter()
            .filter(|(n, _)| {
                !matches!(
                    n.as_str(),
                    "csrf"
                        | "version"
                        | "form_key"
                        | "shown"
                        | "kind"
                        | "priority"
                        | "factor"
                        | "severity"
                )
            })
            .all(|(_, v)| v.trim().is_empty())
    }

    /// The field's value as sent, or "".
    pub fn text(&self, name: &str) -> String {
        self.all(name).next().unwrap_or_default().to_owned()
    }

    /// The field's value, trimmed, when it is not empty.
    pub fn filled(&self, name: &str) -> Option<String> {
        self.all(name)
            .next()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    }

    /// Every value of a repeated field.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The fields whose names start with `prefix`, as (the rest of the name, value).
    pub fn prefixed<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.0
            .iter()
            .filter_map(move |(n, v)| Some((n.strip_prefix(prefix)?, v.as_str())))
    }

    /// The COE version the page was loaded with.
    pub fn version(&self) -> Option<i32> {
        self.filled("version").and_then(|v| v.parse().ok())
    }

    /// The fingerprint of what was typed (every field but the CSRF token and the
    /// form's one-time key, in order): a repeat of the same form has the same.
    pub fn fingerprint(&self) -> String {
        let typed: Vec<&(String, String)> = self
            .0
            .iter()
            .filter(|(n, _)| n != "csrf" && n != "form_key")
            .collect();
        crate::services::forms::fingerprint(&serde_json::json!(typed))
    }

    /// The fields as a JSON object (the first value of each), to show again.
    pub fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        for (name, value) in self.0.iter().filter(|(n, _)| n != "csrf") {
            map.entry(name.clone())
                .or_insert_with(|| Value::String(value.clone()));
        }
        Value::Object(map)
    }
}

/// A form of a COE's page (`/coes/{id}/…`): a `CsrfForm` with the COE's id, the item
/// of the COE it is about (`/coes/{id}/timeline/{entry}`), the version the page was
/// loaded with and the app's state.
pub struct CoeForm {
    pub(super) who: SignedIn,
    pub(super) state: State,
    pub(super) id: String,
    pub item: String,
    pub fields: Fields,
}

impl FromRequest for CoeForm {
    type Error = PageError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, PageError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let form = CsrfForm::<Fields>::from_request(req, payload);
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let path = req.match_info();
        let id = path.get("id").unwrap_or_default().to_owned();
        let item = [
            "key", "entry", "chain", "item", "step", "comment", "incident",
        ]
        .iter()
        .find_map(|name| path.get(name))
        .unwrap_or_default()
        .to_owned();
        Box::pin(async move {
            let CsrfForm { who, fields } = form.await?;
            let state = state.ok_or_else(|| PageError::Internal("no application state".into()))?;
            Ok(CoeForm {
                who,
                state,
                id,
                item,
                fields,
            })
        })
    }
}
