//! The web pages, rendered on the server with handlebars from `templates/pages/`
//! (embedded in the binary, HTML-escaped). Every page that shows or changes something
//! takes a `SignedIn` person; every form that changes something carries the session's
//! CSRF token. The pages call the same services as the API.
//!
//! This file is the route table only: the handlers' kit is `kit` (with `error`,
//! `templates`, `extract` and `outcome`), which never reaches back here.

mod action_forms;
mod actions;
mod admin;
mod admin_connections;
mod admin_template_rules;
mod admin_templates;
mod admin_trackers;
mod assets;
mod autosave;
mod board;
mod chat_import;
mod checklist;
mod coe_answer;
mod coe_customers;
mod coe_forms;
mod coe_history;
mod coe_list;
mod coe_load;
mod coe_timeline;
mod coes;
mod dashboard;
mod dashboard_charts;
mod diff;
pub mod error;
mod guard;
mod highlight;
mod home;
mod html;
mod incidents;
mod kit;
mod markdown;
mod me;
mod meeting;
mod notifications;
mod oidc;
mod outcome;
mod people_find;
mod publishing;
mod query;
mod report;
mod review;
mod search;
mod sign_in;
pub mod templates;

use actix_web::web;

use guard::form;

/// The page routes and `ROUTES`, their list (not part of the API's route table or its
/// OpenAPI document). A POST is registered through `extract::form`: its handler must
/// take a guarded form first.
macro_rules! page_routes {
    ($($method:ident $path:literal => $handler:path,)*) => {
        /// Every page route as (method, path), for the tests that walk them.
        pub const ROUTES: &[(&str, &str)] = &[$((page_routes!(@name $method), $path)),*];

        pub fn configure(cfg: &mut web::ServiceConfig) {
            $(cfg.route($path, page_routes!(@route $method $handler));)*
        }
    };
    (@name get) => { "GET" };
    (@name post) => { "POST" };
    (@route get $handler:path) => { web::get().to($handler) };
    (@route post $handler:path) => { form($handler) };
}

page_routes! {
    get "/" => home::home,
    get "/sign-in" => sign_in::form,
    post "/sign-in" => sign_in::request,
    get "/sign-in/confirm" => sign_in::confirm_form,
    post "/sign-in/confirm" => sign_in::confirm,
    post "/sign-out" => sign_in::sign_out,
    get "/sign-in/oidc" => oidc::start,
    get "/sign-in/oidc/callback" => oidc::callback,
    get "/board" => board::board,
    get "/dashboard" => dashboard::dashboard,
    get "/review-meeting" => meeting::review_meeting,
    get "/search" => search::search,
    get "/people/find" => people_find::find,
    get "/teams/find" => people_find::find_teams,
    get "/me" => me::show,
    post "/me/calendar" => me::new_calendar,
    post "/me/timezone" => me::set_timezone,
    post "/me/sign-out-others" => me::sign_out_others,
    get "/me/notifications" => notifications::show,
    post "/me/notifications" => notifications::change,
    get "/notifications/{token}" => notifications::show_by_link,
    post "/notifications/{token}" => notifications::change_by_link,
    get "/admin" => admin::home,
    get "/admin/people" => admin::people_list,
    post "/admin/people/import" => admin::people_import,
    post "/admin/people/save" => admin::people_save,
    post "/admin/people/{email}/admin" => admin::people_admin,
    post "/admin/people/{email}/bar-raiser" => admin::people_bar_raiser,
    post "/admin/people/{email}/sign-out" => admin::people_sign_out,
    post "/admin/people/{email}/left" => admin::people_left,
    get "/admin/tokens" => admin::tokens_list,
    post "/admin/tokens" => admin::tokens_create,
    post "/admin/tokens/{name}/revoke" => admin::tokens_revoke,
    get "/admin/outbox" => admin::outbox_list,
    get "/admin/outbox/{id}" => admin::outbox_email,
    post "/admin/outbox/{id}/retry" => admin::outbox_retry,
    post "/admin/outbox/{id}/drop" => admin::outbox_drop,
    post "/admin/outbox/send-held" => admin::outbox_send_held,
    post "/admin/outbox/drop-held" => admin::outbox_drop_held,
    get "/admin/sessions" => admin::sessions_list,
    get "/admin/ownership" => admin::ownership_list,
    post "/admin/ownership/services" => admin::ownership_service,
    post "/admin/ownership/teams" => admin::ownership_team,
    post "/admin/sessions/{id}/end" => admin::sessions_end,
    get "/admin/chat" => admin_connections::chat_list,
    get "/admin/chat/new" => admin_connections::chat_new,
    post "/admin/chat/save" => admin_connections::chat_save,
    get "/admin/chat/{name}/edit" => admin_connections::chat_edit,
    post "/admin/chat/{name}/remove" => admin_connections::chat_remove,
    post "/admin/chat/{name}/test" => admin::chat_test,
    get "/admin/templates" => admin_templates::list,
    get "/admin/templates/new" => admin_templates::new,
    get "/admin/templates/{name}" => admin_templates::show,
    post "/admin/templates/{name}" => admin_templates::save,
    post "/admin/template-rules" => admin_templates::save_rules,
    get "/admin/published" => admin::published_list,
    get "/admin/trackers" => admin_trackers::list,
    get "/admin/trackers/new" => admin_connections::trackers_new,
    post "/admin/trackers/save" => admin_connections::trackers_save,
    get "/admin/trackers/{name}/edit" => admin_connections::trackers_edit,
    post "/admin/trackers/{name}/remove" => admin_connections::trackers_remove,
    post "/admin/trackers/{name}/check" => admin_trackers::check,
    get "/report" => report::form,
    post "/report" => report::submit,
    get "/incidents" => incidents::list,
    get "/incidents/{id}" => incidents::show,
    post "/incidents/{id}/coe" => incidents::open_coe,
    get "/coes" => coe_list::list,
    get "/coes/{id}" => coes::show,
    get "/coes/{id}/print" => review::print,
    get "/coes/{id}/import" => chat_import::form,
    post "/coes/{id}/import" => chat_import::import,
    get "/coes/{id}/for-customers.md" => publishing::export_markdown,
    get "/coes/{id}/for-customers.html" => publishing::export_html,
    get "/coes/{id}/publish" => publishing::preview,
    post "/coes/{id}/publish" => publishing::publish,
    post "/coes/{id}/unpublish" => publishing::unpublish,
    post "/coes/{id}/summary-change" => publishing::propose_change,
    post "/coes/{id}/summary-change/decision" => publishing::decide_change,
    // Before `/summaries/{token}`, which would otherwise take them.
    get "/summaries/feed.atom" => publishing::feed,
    get "/summaries/logo" => publishing::logo,
    get "/summaries/{token}" => publishing::public,
    get "/summaries/{token}/summary.md" => publishing::public_markdown,
    get "/summaries/{token}/{rest:.*}" => publishing::unknown,
    get "/coes/{id}/history" => coe_history::history,
    post "/coes/{id}/sections" => coe_forms::save_sections,
    post "/coes/{id}/sections/autosave" => autosave::autosave,
    post "/coes/{id}/details" => coe_forms::details,
    post "/coes/{id}/template" => coe_forms::switch_template,
    post "/coes/{id}/take" => coe_forms::take_ownership,
    post "/coes/{id}/hand-over" => coe_forms::hand_over,
    post "/coes/{id}/timeline" => coe_forms::add_timeline,
    get "/coes/{id}/timeline/{entry}" => coe_timeline::timeline_entry,
    post "/coes/{id}/timeline/{entry}" => coe_timeline::edit_timeline,
    post "/coes/{id}/whys" => coe_forms::add_whys,
    post "/coes/{id}/whys/{chain}" => coe_forms::edit_whys,
    post "/coes/{id}/related" => coe_forms::add_related,
    post "/coes/{id}/related/{item}/delete" => coe_forms::delete_related,
    post "/coes/{id}/actions" => coe_forms::add_action,
    post "/coes/{id}/review/{step}" => review::step,
    post "/coes/{id}/meeting/{step}" => review::meeting,
    post "/coes/{id}/comments" => coe_forms::add_comment,
    post "/coes/{id}/incidents" => coe_forms::attach_incident,
    post "/coes/{id}/merge" => coe_forms::merge,
    post "/coes/{id}/incidents/{incident}/detach" => coe_forms::detach_incident,
    post "/coes/{id}/comments/{comment}/answer" => coe_forms::answer_comment,
    get "/actions/{id}" => actions::show,
    post "/actions/{id}/due-date" => action_forms::move_due_date,
    post "/actions/{id}/edit" => action_forms::edit,
    post "/actions/{id}/reassign" => action_forms::reassign,
    post "/actions/{id}/delete" => action_forms::delete,
    post "/actions/{id}/verify" => action_forms::verify,
    post "/actions/{id}/ticket" => actions::make_ticket,
    post "/actions/{id}/risk" => action_forms::ask_risk,
    post "/actions/{id}/risk-decision" => action_forms::decide_risk,
    post "/actions/{id}/drill" => action_forms::set_drill,
    post "/actions/{id}/drill-recheck" => action_forms::request_recheck,
    post "/actions/{id}/drill-decision" => action_forms::decide_recheck,
    post "/actions/{id}/{verb}" => action_forms::transition,
    get "/static/app.css" => assets::stylesheet,
    get "/static/app.js" => assets::script,
}
