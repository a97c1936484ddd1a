//! The OpenAPI 3 document, generated from the handlers' annotations. Its `paths` are
//! the documented routes of the route table (`routes.rs`), so every JSON endpoint the
//! app serves is in it.

use actix_web::HttpResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::{ErrorBody, ErrorDetail, FieldProblem};
use crate::http::{api, health};

/// Writes `ApiDoc` with every documented route of the route table as its `paths`.
macro_rules! api_doc {
    (
        documented { $($path:literal => { $($method:ident: $($handler:ident)::+),+ $(,)? })* }
        undocumented { $($undocumented:tt)* }
    ) => {
        /// The OpenAPI document.
        #[derive(OpenApi)]
        #[openapi(
            info(
                title = "coe",
                description = "Correction of Errors: failure events in, root-cause writeups and corrective actions tracked to closure."
            ),
            paths($($($($handler)::+,)+)*),
            components(schemas(ErrorBody, ErrorDetail, FieldProblem)),
            modifiers(&BearerAuth, &CommonResponses),
            tags(
                (name = "health", description = "Probes for orchestrators"),
                (name = "tokens", description = "API tokens and the caller's identity"),
                (name = "events", description = "Failure events in: the generic event API and webhook receivers"),
                (name = "incidents", description = "Incidents: failure events grouped by group key"),
                (name = "stats", description = "Figures for the inspection"),
                (name = "outbox", description = "Emails: queued, sent and failed, with retries"),
                (name = "people", description = "The people directory: teams, managers, time zones"),
                (name = "actions", description = "Corrective actions, tracked to closure"),
                (name = "trackers", description = "Issue trackers (Jira, Linear, GitHub): their webhooks and health"),
                (name = "admin", description = "Setting up the organisation: the chat channels and trackers kept in coe"),
                (name = "coes", description = "COE writeups: sections, timeline, 5 whys, related items, history, export"),
            )
        )]
        pub struct ApiDoc;
    };
}

crate::http::routes::route_table!(api_doc);

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Documents the answers every operation of a kind can give, where its own
/// annotation does not: 401 for a token-protected one, 400 and 413 for one with a
/// body, 422 for one with a JSON body or query parameters, 404 for one with a path
/// parameter; 403 and 429 for a token-protected one, 408 for one with a body, 503 for
/// every one that reads or writes the database. All in the one error shape.
struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::ParameterIn;
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            let by_email = path.contains("{email}");
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                let secured = operation.security.as_ref().is_some_and(|s| !s.is_empty());
                let body = operation.request_body.as_ref();
                let json_body = body.is_some_and(|b| b.content.contains_key("application/json"));
                let has_body = body.is_some();
                let params = operation.parameters.as_deref().unwrap_or_default();
                let has_query = params
                    .iter()
                    .any(|p| matches!(p.parameter_in, ParameterIn::Query));
                let has_path = params
                    .iter()
                    .any(|p| matches!(p.parameter_in, ParameterIn::Path));
                let versioned = operation.responses.responses.contains_key("428");
                let mut add = |code: &str, description: &str| {
                    operation
                        .responses
                        .responses
                        .entry(code.to_owned())
                        .or_insert_with(|| error(description).into());
                };
                if secured {
                    add("401", "Missing, unknown or revoked token");
                    add(
                        "429",
                        "Too many unknown tokens from this client this minute (`too_many_requests`, with `Retry-After`)",
                    );
                    if path != "/api/v1/me" {
                        add("403", "The token's role does not allow this");
                    }
                }
                if path != "/healthz" && path != "/api/openapi.json" {
                    add(
                        "503",
                        "The database is unreachable (`unavailable`), read-only (`database_read_only`) or its disk is full (`disk_full`); with `Retry-After`",
                    );
                }
                if has_body {
                    add("400", "Malformed body (the message names line and column)");
                    add(
                        "408",
                        "The body did not arrive within `server.body_timeout_secs`",
                    );
                    add("413", "Body too large");
                }
                if json_body || has_query {
                    add(
                        "422",
                        "A field or query parameter is missing or invalid (named in `fields`)",
                    );
                }
                if has_path {
                    add("404", "No such resource");
                }
                if versioned {
                    add(
                        "400",
                        "Malformed `If-Match` (it must be the ETag of the last read)",
                    );
                }
                if by_email {
                    add("422", "The email in the path is not an email address");
                }
            }
        }
    }
}

/// `GET /api/openapi.json`
pub async fn spec() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}
