//! The route table: every route the service serves, in one list. The app's routing
//! ([`configure`]), the OpenAPI document's `paths(...)` (`openapi::ApiDoc`) and the table
//! the tests hold against the document ([`ROUTES`]) are all expanded from it, so a route
//! cannot be served without being documented, or documented without being served.
//!
//! A documented handler says its method and path once more in `#[utoipa::path]`; the
//! test `tests/api/openapi.rs` checks that the document and [`ROUTES`] agree.

use actix_web::web;

use crate::http::{api, health, observe, openapi, scim, slack, teams};

/// Hands the route table to the macro `$then` (see `serve` below and `api_doc` in
/// `openapi.rs`). One line per path: its methods and their handlers, in the order the
/// app matches them. Routes that answer something other than JSON are `undocumented`.
macro_rules! route_table {
    ($then:ident) => {
        $then! {
            documented {
                "/healthz" => { get: health::healthz }
                "/readyz" => { get: health::readyz }
                "/api/v1/me" => { get: api::tokens::me }
                "/api/v1/tokens" => { get: api::tokens::list, post: api::tokens::create }
                "/api/v1/tokens/{name}" => { delete: api::tokens::revoke }
                "/api/v1/events" => { post: api::ingest::post_events }
                "/api/v1/events/{id}" => { get: api::incidents::event }
                "/api/v1/webhooks/{source}" => { post: api::ingest::receive_webhook }
                "/api/v1/incidents" => { get: api::incidents::list }
                "/api/v1/incidents/{id}" => { get: api::incidents::get }
                "/api/v1/incidents/{id}/events" => { get: api::incidents::events }
                "/api/v1/coes" => { get: api::coes::list, post: api::coes::create }
                "/api/v1/coes/{id}" => { get: api::coes::get, patch: api::coes::patch }
                "/api/v1/coes/{id}/sections/{key}" => { put: api::coes::put_section }
                "/api/v1/coes/{id}/timeline" => { post: api::coes::add_timeline }
                "/api/v1/coes/{id}/timeline/{entry_id}" => {
                    put: api::coes::edit_timeline,
                    delete: api::coes::delete_timeline
                }
                "/api/v1/coes/{id}/whys" => { post: api::coes::add_whys }
                "/api/v1/coes/{id}/whys/{chain_id}" => {
                    put: api::coes::replace_whys,
                    delete: api::coes::delete_whys
                }
                "/api/v1/coes/{id}/related" => { post: api::coes::add_related }
                "/api/v1/coes/{id}/related/{item_id}" => { delete: api::coes::delete_related }
                "/api/v1/coes/{id}/incidents" => { post: api::outage::attach_incident }
                "/api/v1/coes/{id}/merge" => { post: api::outage::merge }
                "/api/v1/coes/{id}/incidents/{incident_id}" => { delete: api::outage::detach_incident }
                "/api/v1/coes/{id}/comments" => { post: api::comments::add_comment }
                "/api/v1/coes/{id}/comments/{comment_id}/answer" => { post: api::comments::answer_comment }
                "/api/v1/coes/{id}/history" => { get: api::coes::history }
                "/api/v1/coes/{id}/export.md" => { get: api::coes::export }
                "/api/v1/coes/{id}/actions" => { post: api::actions::create }
                "/api/v1/coes/{id}/submit" => { post: api::actions::submit }
                "/api/v1/coes/{id}/approve" => { post: api::actions::approve }
                "/api/v1/coes/{id}/bar-raiser" => { put: api::actions::name_bar_raiser }
                "/api/v1/coes/{id}/review-meeting" => { put: api::actions::set_review_meeting, delete: api::actions::cancel_review_meeting }
                "/api/v1/coes/{id}/request-changes" => { post: api::actions::request_changes }
                "/api/v1/actions" => { get: api::actions::list }
                "/api/v1/actions/{id}" => { get: api::actions::get, patch: api::actions::patch, delete: api::actions::delete }
                // Before `/api/v1/actions/{id}/{transition}`, which would otherwise take it.
                "/api/v1/actions/{id}/verify" => { post: api::actions::verify }
                "/api/v1/actions/{id}/ticket" => { post: api::trackers::ticket }
                "/api/v1/actions/{id}/risk" => { post: api::actions::ask_risk }
                "/api/v1/actions/{id}/risk/{decision}" => { post: api::actions::decide_risk }
                "/api/v1/actions/{id}/drill" => { get: api::drills::get, put: api::drills::set }
                // Before `/api/v1/actions/{id}/drill/{decision}`, which would otherwise take it.
                "/api/v1/actions/{id}/drill/recheck" => { post: api::drills::recheck }
                "/api/v1/actions/{id}/drill/{decision}" => { post: api::drills::decide }
                "/api/v1/actions/{id}/{transition}" => { post: api::actions::transition }
                "/api/v1/people" => { get: api::people::list }
                // Before `/api/v1/people/{email}`, which would otherwise take it.
                "/api/v1/people/import" => { post: api::people::import }
                "/api/v1/people/{email}" => { put: api::people::put }
                "/api/v1/people/{email}/feed-token" => { post: api::people::new_feed_token }
                "/api/v1/people/{email}/admin" => { put: api::people::set_admin }
                "/api/v1/people/{email}/sessions" => { get: api::people::sessions, delete: api::people::end_sessions }
                "/api/v1/people/{email}/actions.ics" => { get: api::people::calendar }
                "/api/v1/stats" => { get: api::stats::get }
                "/api/v1/outbox" => { get: api::outbox::list }
                "/api/v1/outbox/{id}/retry" => { post: api::outbox::retry }
                "/api/v1/outbox/{id}/drop" => { post: api::outbox::drop_held }
                "/api/v1/outbox/send-held" => { post: api::outbox::send_held }
                "/api/v1/outbox/drop-held" => { post: api::outbox::drop_all_held }
                "/api/v1/queue" => { get: api::outbox::waiting }
                "/api/v1/coes/{id}/chat-messages" => { get: api::chat_import::messages }
                "/api/v1/coes/{id}/publication" => { get: api::publishing::get, post: api::publishing::publish, delete: api::publishing::revoke }
                "/api/v1/coes/{id}/publication/change" => { get: api::publishing::get_change, put: api::publishing::propose_change }
                "/api/v1/coes/{id}/publication/change/decision" => { post: api::publishing::decide_change }
                "/api/v1/publications" => { get: api::publishing::list }
                "/api/v1/templates" => { get: api::templates::list }
                "/api/v1/templates/{name}" => { post: api::templates::save }
                "/api/v1/template-rules" => { get: api::templates::rules, put: api::templates::save_rules }
                "/api/v1/template-rules/check" => { post: api::templates::check_rules }
                "/api/v1/trackers" => { get: api::trackers::list }
                "/api/v1/connections" => { get: api::connections::list }
                "/api/v1/connections/{kind}/{name}" => { put: api::connections::save, delete: api::connections::remove }
                "/api/v1/trackers/{name}/webhook" => { post: api::trackers::webhook }
            }
            undocumented {
                // Prometheus text, and the document itself.
                "/metrics" => { get: observe::metrics }
                "/api/openapi.json" => { get: openapi::spec }
                // Posted by a Slack app, form-encoded and signed (docs/integrations.md).
                "/chat/slack/commands" => { post: slack::commands }
                "/chat/slack/interactions" => { post: slack::interactions }
                "/chat/teams/messages" => { post: teams::messages }
                // Posted by the OpenID Provider, form-encoded (docs/operations.md).
                "/sign-in/oidc/back-channel-logout" => { post: api::backchannel::logout }
                // SCIM 2.0 provisioning (RFC 7644), application/scim+json: docs/operations.md.
                "/scim/v2/ServiceProviderConfig" => { get: scim::service_provider_config }
                "/scim/v2/ResourceTypes" => { get: scim::resource_types }
                "/scim/v2/ResourceTypes/{id}" => { get: scim::resource_type }
                "/scim/v2/Schemas" => { get: scim::schemas }
                "/scim/v2/Schemas/{id}" => { get: scim::schema_one }
                "/scim/v2/Users" => { get: scim::user_routes::list, post: scim::user_routes::create }
                "/scim/v2/Users/.search" => { post: scim::user_routes::search }
                "/scim/v2/Users/{id}" => {
                    get: scim::user_routes::get,
                    put: scim::user_routes::replace,
                    patch: scim::user_routes::patch,
                    delete: scim::user_routes::delete
                }
                "/scim/v2/Groups" => { get: scim::group_routes::list, post: scim::group_routes::create }
                "/scim/v2/Groups/.search" => { post: scim::group_routes::search }
                "/scim/v2/Groups/{id}" => {
                    get: scim::group_routes::get,
                    put: scim::group_routes::replace,
                    patch: scim::group_routes::patch,
                    delete: scim::group_routes::delete
                }
                "/scim/v2/.search" => { post: scim::search_all }
                "/scim/v2/{rest:.*}" => {
                    get: scim::not_found,
                    post: scim::not_found,
                    put: scim::not_found,
                    patch: scim::not_found,
                    delete: scim::not_found
                }
            }
        }
    };
}

pub(crate) use route_table;

/// One route: an HTTP method (lower case, as in the OpenAPI document) on a path
/// pattern, and whether the OpenAPI document describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub documented: bool,
}

macro_rules! serve {
    (
        documented { $($path:literal => { $($method:ident: $($handler:ident)::+),+ $(,)? })* }
        undocumented { $($other:literal => { $($other_method:ident: $($other_handler:ident)::+),+ $(,)? })* }
    ) => {
        /// Registers every route. Each path is one `resource`, so that a wrong method
        /// answers 405 (with `Allow`) rather than 404.
        pub fn configure(cfg: &mut web::ServiceConfig) {
            $(cfg.service(web::resource($path)$(.route(web::$method().to($($handler)::+)))+);)*
            $(cfg.service(
                web::resource($other)$(.route(web::$other_method().to($($other_handler)::+)))+
            );)*
        }

        /// Every route the app serves, in the order it matches them.
        pub const ROUTES: &[Route] = &[
            $($(Route { method: stringify!($method), path: $path, documented: true },)+)*
            $($(Route { method: stringify!($other_method), path: $other, documented: false },)+)*
        ];
    };
}

route_table!(serve);

/// The routes `metrics.listen` serves: the same handlers as on `listen`, and nothing
/// else (no API, no pages, no sign-in on the address Prometheus reaches).
pub fn configure_metrics_listener(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/metrics").route(web::get().to(observe::metrics)))
        .service(web::resource("/healthz").route(web::get().to(health::healthz)))
        .service(web::resource("/readyz").route(web::get().to(health::readyz)));
}
