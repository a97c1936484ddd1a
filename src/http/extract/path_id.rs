//! Ids in the path, checked before the handler runs.

use std::future::{ready, Ready};
use std::marker::PhantomData;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};

use crate::error::ApiError;

/// What a path id names: the path parameter it is read from, and the word for it in
/// the 404 when it cannot name anything (`no COE with id …`).
pub trait IdOf {
    /// The path parameter, e.g. `id` in `/api/v1/coes/{id}`.
    const PARAM: &'static str;
    /// What the id names, as people say it: `COE`, `action`, `timeline entry`.
    const WHAT: &'static str;
}

/// The things a path id can name, as markers for [`PathId`].
pub mod ids {
    use super::IdOf;

    macro_rules! id_kinds {
        ($($(#[$doc:meta])* $kind:ident = $param:literal, $what:literal;)*) => {$(
            $(#[$doc])*
            pub enum $kind {}

            impl IdOf for $kind {
                const PARAM: &'static str = $param;
                const WHAT: &'static str = $what;
            }
        )*};
    }

    id_kinds! {
        /// `{id}` of `/api/v1/coes/{id}…`.
        Coe = "id", "COE";
        /// `{id}` of `/api/v1/actions/{id}…`.
        Action = "id", "action";
        /// `{id}` of `/api/v1/incidents/{id}`.
        Incident = "id", "incident";
        /// `{id}` of `/api/v1/events/{id}`.
        Event = "id", "event";
        /// `{id}` of `/api/v1/outbox/{id}/retry`.
        Email = "id", "email";
        /// `{entry_id}` of `/api/v1/coes/{id}/timeline/{entry_id}`.
        TimelineEntry = "entry_id", "timeline entry";
        /// `{chain_id}` of `/api/v1/coes/{id}/whys/{chain_id}`.
        WhyChain = "chain_id", "5-whys chain";
        /// `{item_id}` of `/api/v1/coes/{id}/related/{item_id}`.
        RelatedItem = "item_id", "related item";
        /// `{incident_id}` of `/api/v1/coes/{id}/incidents/{incident_id}`.
        CoveredIncident = "incident_id", "incident";
        /// `{comment_id}` of `/api/v1/coes/{id}/comments/{comment_id}/answer`.
        Comment = "comment_id", "comment";
    }
}

/// An id from the path that could name a `K`: read from the parameter `K::PARAM`,
/// percent-decoded as `web::Path` decodes it. An id that cannot name any row (see
/// [`plausible_id`]) is a 404 at once: `no COE with id `…``.
#[derive(Debug)]
pub struct PathId<K> {
    id: String,
    kind: PhantomData<K>,
}

impl<K: IdOf> PathId<K> {
    pub fn into_inner(self) -> String {
        self.id
    }

    pub fn as_str(&self) -> &str {
        &self.id
    }

    /// The 404 for an id that names nothing: `no incident with id `…``.
    pub fn not_found(&self) -> ApiError {
        not_found(&self.id, K::WHAT)
    }
}

impl<K: IdOf> FromRequest for PathId<K> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(path_param(req, K::PARAM).and_then(|id| {
            if plausible_id(&id) {
                Ok(PathId {
                    id,
                    kind: PhantomData,
                })
            } else {
                Err(not_found(&id, K::WHAT))
            }
        }))
    }
}

/// Whether a path id could name a row: ids are short and never hold NUL (which
/// PostgreSQL refuses in text, and which would otherwise turn a 404 into a 500).
pub fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && !id.contains('\0')
}

fn not_found(id: &str, what: &str) -> ApiError {
    ApiError::NotFound(format!("no {what} with id `{}`", id.escape_default()))
}

/// The path parameter `name`, percent-decoded by actix's own path deserializer (so
/// exactly as `web::Path<String>` would decode it).
fn path_param(req: &HttpRequest, name: &str) -> Result<String, ApiError> {
    let path = req.match_info();
    let index = path
        .iter()
        .position(|(param, _)| param == name)
        .ok_or_else(|| {
            ApiError::Internal(format!(
                "the route {} has no path parameter `{name}`",
                req.match_pattern().unwrap_or_default()
            ))
        })?;
    let mut values: Vec<String> = path
        .load()
        .map_err(|e| ApiError::NotFound(format!("no such resource: {e}")))?;
    Ok(values.swap_remove(index))
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn extract<K: IdOf>(params: &[(&'static str, &'static str)]) -> Result<String, ApiError> {
        let req = params
            .iter()
            .fold(TestRequest::default(), |req, (name, value)| {
                req.param(*name, *value)
            })
            .to_http_request();
        PathId::<K>::extract(&req)
            .into_inner()
            .map(PathId::into_inner)
    }

    fn not_found_message(result: Result<String, ApiError>) -> String {
        match result {
            Err(ApiError::NotFound(message)) => message,
            other => panic!("expected a 404, got {other:?}"),
        }
    }

    #[test]
    fn reads_the_named_parameter_percent_decoded() {
        let params = [("id", "c%2D1"), ("entry_id", "e%201")];
        assert_eq!(extract::<ids::Coe>(&params).unwrap(), "c-1");
        assert_eq!(extract::<ids::TimelineEntry>(&params).unwrap(), "e 1");
    }

    #[test]
    fn an_id_that_cannot_name_a_row_is_a_404_naming_what() {
        let message = not_found_message(extract::<ids::Event>(&[("id", "%00%00")]));
        assert_eq!(message, "no event with id `\\u{0}\\u{0}`");
        let long: &'static str = "a".repeat(129).leak();
        let message = not_found_message(extract::<ids::Coe>(&[("id", long)]));
        assert!(message.starts_with("no COE with id `aaa"), "{message}");
        assert!(extract::<ids::Coe>(&[("id", "0190-x")]).is_ok());
    }
}
