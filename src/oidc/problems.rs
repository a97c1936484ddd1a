//! How a provider's failures read: one line each, with their causes.

use openidconnect::core::CoreErrorResponseType;
use openidconnect::{
    reqwest, DiscoveryError, HttpClientError, RequestTokenError, StandardErrorResponse,
};

use super::OidcError;

pub(super) type HttpError = HttpClientError<reqwest::Error>;

pub(super) fn discovery_problem(e: &DiscoveryError<HttpError>) -> String {
    match e {
        DiscoveryError::Request(e) => format!("no answer ({})", chain(e)),
        DiscoveryError::Response(status, _, _) => {
            format!("its discovery document answered HTTP {status}")
        }
        DiscoveryError::Parse(e) => format!("its discovery document cannot be read: {e}"),
        DiscoveryError::Validation(e) => format!("its discovery document is not usable: {e}"),
        other => chain(other),
    }
}

pub(super) fn token_problem(
    e: &RequestTokenError<HttpError, StandardErrorResponse<CoreErrorResponseType>>,
) -> OidcError {
    match e {
        RequestTokenError::ServerResponse(answer) => OidcError::Refused(format!(
            "its token endpoint answered {}{}",
            answer.error().as_ref(),
            answer
                .error_description()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
        RequestTokenError::Request(e) => {
            OidcError::Unreachable(format!("its token endpoint did not answer ({})", chain(e)))
        }
        RequestTokenError::Parse(e, _) => {
            OidcError::Token(format!("its token endpoint's answer cannot be read: {e}"))
        }
        RequestTokenError::Other(e) => OidcError::Token(e.clone()),
    }
}

/// An error with its causes, on one line.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
