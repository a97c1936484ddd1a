//! The claims an ID token leaves out, read from the provider's UserInfo endpoint.
//! OpenID Connect Core 5.4: when the provider issues an access token (the
//! authorization-code flow), the claims of the `email`, `profile` and other scopes are
//! returned by UserInfo, not in the ID token — `oidc-provider` as shipped, Zitadel,
//! Authelia and Ory do so. UserInfo's `sub` must be the ID token's (Core 5.3.2); a
//! signed answer is checked with the provider's keys; an encrypted one is refused by
//! name.

use openidconnect::core::CoreGenderClaim;
use openidconnect::{
    AccessToken, ClaimsVerificationError, SubjectIdentifier, UserInfoClaims, UserInfoError,
};

use super::{chain, Discovered, HttpError, Identity, OidcError, OtherClaims, Provider};

impl Provider {
    /// Whether `identity`, from the ID token alone, lacks what coe needs: the address,
    /// or the groups when admins follow them and the token does not list them.
    pub(super) fn needs_user_info(&self, identity: &Identity) -> bool {
        identity.email.is_none() || (self.wants_groups && !identity.groups_in_token)
    }

    /// `identity` completed from UserInfo: what the ID token left out is taken from
    /// the answer (the ID token's own claims win).
    pub(super) async fn with_user_info(
        &self,
        discovered: &Discovered,
        access_token: &AccessToken,
        mut identity: Identity,
    ) -> Result<Identity, OidcError> {
        let request = discovered
            .client
            .user_info(
                access_token.clone(),
                Some(SubjectIdentifier::new(identity.subject.clone())),
            )
            .map_err(|_| {
                OidcError::Token(
                    "the ID token names no email address, and the provider publishes no \
                     UserInfo endpoint to ask"
                        .into(),
                )
            })?;
        let claims: UserInfoClaims<OtherClaims, CoreGenderClaim> = request
            .request_async(&self.http)
            .await
            .map_err(|e| user_info_problem(&e))?;
        if identity.email.is_none() {
            identity.email = claims.email().map(|e| e.as_str().to_owned());
            identity.email_verified = claims.email_verified();
        } else if identity.email_verified.is_none() {
            identity.email_verified = claims.email_verified();
        }
        if identity.name.is_none() {
            identity.name = claims
                .name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned());
        }
        if !identity.groups_in_token {
            identity.groups = self.groups(claims.additional_claims());
        }
        Ok(identity)
    }
}

fn user_info_problem(e: &UserInfoError<HttpError>) -> OidcError {
    match e {
        UserInfoError::ClaimsVerification(ClaimsVerificationError::InvalidSubject(why)) => {
            OidcError::Token(format!(
                "its UserInfo answer is about someone else than its ID token ({why})"
            ))
        }
        UserInfoError::ClaimsVerification(e) => {
            OidcError::Token(format!("its signed UserInfo answer fails its checks: {e}"))
        }
        UserInfoError::Parse(e) => OidcError::Token(format!(
            "its UserInfo answer cannot be read ({e}); an encrypted UserInfo answer is not \
             supported: have the provider answer plain or signed JSON"
        )),
        UserInfoError::Request(e) => OidcError::Unreachable(format!(
            "its UserInfo endpoint did not answer ({})",
            chain(e)
        )),
        UserInfoError::Response(status, _, why) => OidcError::Token(format!(
            "its UserInfo endpoint answered HTTP {status}: {why}"
        )),
        other => OidcError::Token(format!("its UserInfo answer: {}", chain(other))),
    }
}
