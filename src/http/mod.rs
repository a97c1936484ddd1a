//! The HTTP layer: routes, extractors, middleware. Handlers call `services`.

pub mod api;
pub mod auth;
pub mod extract;
pub mod health;
pub mod metrics;
pub mod openapi;
pub mod page;
pub mod state;

use actix_web::web;

use crate::error::ApiError;

/// Every route of the service. Each path is a `resource`, so that a wrong method
/// answers 405 rather than 404.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/healthz").route(web::get().to(health::healthz)))
        .service(web::resource("/readyz").route(web::get().to(health::readyz)))
        .service(web::resource("/metrics").route(web::get().to(metrics::metrics)))
        .service(web::resource("/api/openapi.json").route(web::get().to(openapi::spec)))
        .service(web::resource("/api/v1/me").route(web::get().to(api::tokens::me)))
        .service(
            web::resource("/api/v1/tokens")
                .route(web::get().to(api::tokens::list))
                .route(web::post().to(api::tokens::create)),
        )
        .service(
            web::resource("/api/v1/tokens/{name}").route(web::delete().to(api::tokens::revoke)),
        )
        .service(web::resource("/api/v1/events").route(web::post().to(api::ingest::post_events)))
        .service(web::resource("/api/v1/events/{id}").route(web::get().to(api::incidents::event)))
        .service(
            web::resource("/api/v1/webhooks/{source}")
                .route(web::post().to(api::ingest::receive_webhook)),
        )
        .service(web::resource("/api/v1/incidents").route(web::get().to(api::incidents::list)))
        .service(web::resource("/api/v1/incidents/{id}").route(web::get().to(api::incidents::get)))
        .service(
            web::resource("/api/v1/coes")
                .route(web::get().to(api::coes::list))
                .route(web::post().to(api::coes::create)),
        )
        .service(
            web::resource("/api/v1/coes/{id}")
                .route(web::get().to(api::coes::get))
                .route(web::patch().to(api::coes::patch)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/sections/{key}")
                .route(web::put().to(api::coes::put_section)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/timeline")
                .route(web::post().to(api::coes::add_timeline)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/timeline/{entry_id}")
                .route(web::put().to(api::coes::edit_timeline))
                .route(web::delete().to(api::coes::delete_timeline)),
        )
        .service(web::resource("/api/v1/coes/{id}/whys").route(web::post().to(api::coes::add_whys)))
        .service(
            web::resource("/api/v1/coes/{id}/whys/{chain_id}")
                .route(web::put().to(api::coes::replace_whys))
                .route(web::delete().to(api::coes::delete_whys)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/related")
                .route(web::post().to(api::coes::add_related)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/related/{item_id}")
                .route(web::delete().to(api::coes::delete_related)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/history").route(web::get().to(api::coes::history)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/export.md").route(web::get().to(api::coes::export)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/actions").route(web::post().to(api::actions::create)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/submit").route(web::post().to(api::actions::submit)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/approve").route(web::post().to(api::actions::approve)),
        )
        .service(
            web::resource("/api/v1/coes/{id}/request-changes")
                .route(web::post().to(api::actions::request_changes)),
        )
        .service(web::resource("/api/v1/actions").route(web::get().to(api::actions::list)))
        .service(
            web::resource("/api/v1/actions/{id}")
                .route(web::get().to(api::actions::get))
                .route(web::patch().to(api::actions::patch)),
        )
        .service(
            web::resource("/api/v1/actions/{id}/{transition}")
                .route(web::post().to(api::actions::transition)),
        )
        .service(web::resource("/api/v1/people").route(web::get().to(api::people::list)))
        .service(web::resource("/api/v1/people/import").route(web::post().to(api::people::import)))
        .service(web::resource("/api/v1/people/{email}").route(web::put().to(api::people::put)))
        .service(
            web::resource("/api/v1/people/{email}/feed-token")
                .route(web::post().to(api::people::new_feed_token)),
        )
        .service(
            web::resource("/api/v1/people/{email}/actions.ics")
                .route(web::get().to(api::people::calendar)),
        )
        .service(web::resource("/api/v1/stats").route(web::get().to(api::stats::get)))
        .service(web::resource("/api/v1/outbox").route(web::get().to(api::outbox::list)))
        .service(
            web::resource("/api/v1/outbox/{id}/retry").route(web::post().to(api::outbox::retry)),
        );
}

/// Errors of actix's own path extractor, in our shape: a path that does not parse
/// names nothing that exists.
pub fn path_error(
    err: actix_web::error::PathError,
    _: &actix_web::HttpRequest,
) -> actix_web::Error {
    ApiError::NotFound(format!("no such resource: {err}")).into()
}

/// An optional RFC 3339 query parameter.
pub fn time_param(
    name: &str,
    raw: Option<&str>,
) -> Result<Option<chrono::NaiveDateTime>, ApiError> {
    match raw {
        None => Ok(None),
        Some(raw) => crate::domain::event::parse_time(raw).map_err(|p| ApiError::field(name, p)),
    }
}
