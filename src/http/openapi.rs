//! The OpenAPI 3 document, generated from the handlers' annotations. Every JSON
//! endpoint is listed here; a test checks that each route the app serves appears.

use actix_web::HttpResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::{ErrorBody, ErrorDetail, FieldProblem};
use crate::http::{api, health};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "coe",
        description = "Correction of Errors: failure events in, root-cause writeups and corrective actions tracked to closure."
    ),
    paths(
        health::healthz,
        health::readyz,
        api::tokens::me,
        api::tokens::list,
        api::tokens::create,
        api::tokens::revoke,
        api::ingest::post_events,
        api::ingest::receive_webhook,
        api::incidents::list,
        api::incidents::get,
        api::incidents::event,
        api::coes::list,
        api::coes::create,
        api::coes::get,
        api::coes::patch,
        api::coes::put_section,
        api::coes::add_timeline,
        api::coes::edit_timeline,
        api::coes::delete_timeline,
        api::coes::add_whys,
        api::coes::replace_whys,
        api::coes::delete_whys,
        api::coes::add_related,
        api::coes::delete_related,
        api::coes::history,
        api::coes::export,
        api::actions::create,
        api::actions::get,
        api::actions::patch,
        api::actions::transition,
        api::actions::list,
        api::actions::submit,
        api::actions::approve,
        api::actions::request_changes,
        api::people::put,
        api::people::list,
        api::people::import,
        api::people::new_feed_token,
        api::people::calendar,
        api::stats::get,
        api::outbox::list,
        api::outbox::retry,
    ),
    components(schemas(ErrorBody, ErrorDetail, FieldProblem)),
    modifiers(&BearerAuth),
    tags(
        (name = "health", description = "Probes for orchestrators"),
        (name = "tokens", description = "API tokens and the caller's identity"),
        (name = "events", description = "Failure events in: the generic event API and webhook receivers"),
        (name = "incidents", description = "Incidents: failure events grouped by group key"),
        (name = "stats", description = "Figures for the inspection"),
        (name = "outbox", description = "Emails: queued, sent and failed, with retries"),
        (name = "people", description = "The people directory: teams, managers, time zones"),
        (name = "actions", description = "Corrective actions, tracked to closure"),
        (name = "coes", description = "COE writeups: sections, timeline, 5 whys, related items, history, export"),
    )
)]
pub struct ApiDoc;

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

/// `GET /api/openapi.json`
pub async fn spec() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}
