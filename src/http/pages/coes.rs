//! One COE as a document: its sections with their guidance and completeness, the
//! timeline, 5 whys, actions, related items, recurrence and review, with what is
//! still missing listed at the top and linked to its section. Everything is edited in
//! place (`coe_forms`); every change names the version the page was loaded with, and
//! when someone saved first the page says who and keeps what the person typed.

use actix_web::http::StatusCode;
use actix_web::web;
use serde::Deserialize;
use serde_json::{json, Value};

use super::coe_answer::{self, Unsaved};
use super::coe_customers::CustomersOf;
use super::coe_history::{history_words, text_at};
use super::coe_load::{findings, load, related_links, who_is_missing, Loaded};
use super::kit::{names_data, render, Page, State};
use crate::domain::action::{ActionKind, Priority};
use crate::domain::coe::CoeState;
use crate::domain::template::SectionKind;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::forms;

/// The fields of each part's form, so that a form shows every field (empty, or as
/// typed when a change did not go through).
const PART_FIELDS: &[(&str, &[&str])] = &[
    ("details", &["title", "owner", "reviewer", "service"]),
    ("timeline", &["at", "kind", "text"]),
    ("related", &["kind", "target", "title"]),
    (
        "actions",
        &[
            "title",
            "owner",
            "due_date",
            "priority",
            "kind",
            "success_criteria",
            "description",
            "external_url",
            "past_target_reason",
        ],
    ),
    ("review", &["comment", "reviewer"]),
];

/// Part `part`'s form: every field, as typed (`kept`) or empty.
fn form_of(part: &str, kept: Option<&Value>) -> Value {
    let fields = PART_FIELDS
        .iter()
        .find(|(p, _)| *p == part)
        .map_or(&[][..], |(_, f)| *f);
    let mut form = serde_json::Map::new();
    for field in fields {
        let value = kept
            .and_then(|k| k.get(*field))
            .cloned()
            .unwrap_or_else(|| json!(""));
        form.insert((*field).to_owned(), value);
    }
    if part == "timeline" {
        // A milestone kind typed: the form offers to let it move the COE's own time.
        let milestone = form
            .get("kind")
            .and_then(Value::as_str)
            .and_then(crate::domain::coe::TimelineKind::parse)
            .is_some_and(crate::domain::coe::TimelineKind::is_milestone);
        form.insert("milestone".into(), json!(milestone));
    }
    Value::Object(form)
}

pub(super) fn page(
    state: &AppState,
    who: &SignedIn,
    status: StatusCode,
    loaded: Loaded,
    kept: Unsaved,
    view: Option<View>,
) -> Page {
    let Loaded {
        doc,
        incidents,
        drafts,
        same_outage,
        history,
        earlier_open,
        may_edit,
        since_last_look,
        directory,
        bar_raisers,
        template_choices,
        publication,
        summary_change,
        customer_title,
        chat_import,
        chat_missing,
        reviewer_suggestions,
        hand_over,
        meeting,
    } = loaded;
    let names = names_data(&directory);
    let related = related_links(&doc);
    // The drafts offered to merge that are probably of the same outage, marked so.
    let probable: Vec<String> = doc.same_outage.iter().map(|o| o.coe_id.clone()).collect();
    let may_write = may_edit && doc.state.is_editable();
    let may_add_actions = may_edit && !matches!(doc.state, CoeState::Closed | CoeState::Merged);
    let me = who.person.email.as_str();
    // Only the reviewer decides (with a bar raiser, for the worst outages, both);
    // nobody approves what they own, submitted or named themselves reviewer of.
    let acting = who.person.acting();
    let customers = super::coe_customers::data(
        &doc,
        CustomersOf {
            publication: publication.as_ref(),
            change: summary_change.as_ref(),
            title: customer_title.as_deref(),
        },
        &acting.editor(),
        may_edit,
    );
    // The review's people: who comments on its sections may decide it.
    let is_reviewer = crate::services::access::comment_on_sections(
        &acting.editor(),
        doc.reviewer.as_deref(),
        doc.bar_raiser.as_deref(),
    )
    .is_ok();
    let as_bar_raiser = doc.bar_raiser.as_deref() == Some(me);
    let approved_already = doc.approved_by.as_deref() == Some(me);
    // Who still has to approve this round, when one of two approved.
    let awaited = doc.approved_by.as_ref().map(|first| {
        if Some(first) == doc.reviewer.as_ref() {
            doc.bar_raiser.clone()
        } else {
            doc.reviewer.clone()
        }
    });
    // The reviewer reads a COE in review unless they ask to edit it; anyone may ask to
    // read; who may not change it only reads.
    let reading = !may_write
        || view.unwrap_or(if is_reviewer && doc.state == CoeState::InReview {
            View::Read
        } else {
            View::Edit
        }) == View::Read;
    // The review's own rule decides (`services::coe::review::may_approve`).
    let may_approve =
        crate::services::coe::review::may_approve(&doc, me, &state.settings.auth.dotless_domains);
    let seen_at = since_last_look.as_ref().map(|(seen, _)| *seen);
    let changed_keys: Vec<String> = since_last_look
        .as_ref()
        .map(|(_, changes)| {
            changes
                .iter()
                .filter_map(|h| h.action.strip_prefix("section:").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let sections: Vec<Value> = doc
        .sections
        .iter()
        .map(|s| {
            let kind = serde_json::to_value(s.kind).unwrap_or_default();
            let part = kind.as_str().unwrap_or_default();
            let mut v = serde_json::to_value(s).unwrap_or_default();
            v["text"] = json!(kept.texts.get(&s.key).unwrap_or(&s.body));
            v["seen"] = json!(kept.seen.get(&s.key).unwrap_or(&s.revision));
            v["conflict"] = json!(kept.conflicts.get(&s.key));
            v["saved"] = json!(kept.saved.contains(&s.key));
            v["unsaved"] =
                json!(kept.texts.contains_key(&s.key) && !kept.conflicts.contains_key(&s.key));
            // What the checks say is of the saved text; typed and not saved, it says so.
            if kept.texts.contains_key(&s.key) && s.kind == SectionKind::Text {
                v["problems"] = json!(["typed, not saved yet"]);
            }
            v["preview"] = json!(kept.previews.get(&s.key));
            let problems = kept.problems.get(&s.key).or(kept.problems.get(part));
            v["save_problems"] = json!(problems);
            // The part's own form, as typed when it was kept (`five_whys`' new chain is `whys`).
            let typed_as = if part == "five_whys" { "whys" } else { part };
            v["form"] = form_of(part, kept.forms.get(typed_as));
            v["form_typed"] = json!(kept.forms.contains_key(typed_as));
            let changed = changed_keys.contains(&s.key);
            v["changed"] = json!(changed);
            if let (true, Some(seen)) = (changed && s.kind == SectionKind::Text, seen_at) {
                v["before"] = json!(text_at(&history, &s.key, seen));
            }
            let comments: Vec<Value> = doc
                .comments
                .iter()
                .filter(|c| c.section == s.key)
                .map(|c| {
                    let mut v = serde_json::to_value(c).unwrap_or_default();
                    let typed = kept.forms.get(&format!("answer:{}", c.id));
                    v["typed"] = json!(typed.map(|k| &k["answer"]));
                    let answers =
                        crate::services::access::answer_comment(&acting.editor(), &c.author)
                            .is_ok();
                    v["may_answer_it"] = json!(may_write && answers);
                    v
                })
                .collect();
            v["comments"] = json!(comments);
            let typed = kept.forms.get(&format!("comment:{}", s.key));
            v["comment_typed"] = json!(typed.map(|k| &k["body"]));
            v
        })
        .collect();
    // The comments waiting for an answer, for the banner of a COE sent back.
    let waiting: Vec<Value> = doc
        .comments
        .iter()
        .filter(|c| c.answer.is_none())
        .map(|c| {
            let title = doc
                .sections
                .iter()
                .find(|s| s.key == c.section)
                .map_or(c.section.as_str(), |s| s.title.as_str());
            json!({"section": c.section, "title": title, "author": c.author, "body": c.body})
        })
        .collect();
    // The last step of the review, when it sent the COE back.
    let sent_back = doc
        .review
        .last()
        .filter(|r| r.verdict == "changes_requested" && doc.state == CoeState::Draft);
    // A COE sent back waits on its owner: the reviewer (not its owner) is told so.
    let waits_on_owner =
        sent_back.is_some() && is_reviewer && doc.owner.as_deref().is_some_and(|o| o != me);
    let zone = super::kit::zone_of(state, Some(who));
    let timeline: Vec<Value> = doc
        .timeline
        .iter()
        .map(|t| {
            let mut v = serde_json::to_value(t).unwrap_or_default();
            v["at_input"] = json!(super::kit::local_input(&t.at, zone));
            v
        })
        .collect();
    // A 5-whys form that did not go through shows what was typed: a chain's change
    // in that chain's form, a new chain in the form that adds one.
    let whys: Vec<Value> = doc
        .five_whys
        .iter()
        .enumerate()
        .map(|(i, chain)| {
            let kept_chain = kept.forms.get(&format!("chain:{}", chain.id));
            let typed = kept_chain.map(|k| k["rows"].clone());
            let typed_some = typed.is_some();
            // Each step of the chain's form numbered from 1, as the form that adds one.
            let steps_input: Vec<Value> = typed
                .unwrap_or_else(|| json!(chain.steps))
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(n, step)| {
                    json!({"number": n + 1, "why": step["why"], "because": step["because"]})
                })
                .collect();
            let chosen = kept_chain
                .and_then(|k| k["factor"].as_str().map(str::to_owned))
                .or_else(|| chain.factor.clone());
            let shown = coe_answer::chain_print(
                chain.steps.iter().map(|s| (s.why.as_str(), s.because.as_str())),
                chain.factor.as_deref(),
            );
            json!({"id": chain.id, "number": i + 1, "steps": chain.steps, "shown": shown,
                   "kept": typed_some, "steps_input": steps_input, "factor": chain.factor,
                   "factors": factor_options(&doc.template.contributing_factors, chosen.as_deref())})
        })
        .collect();
    let kept_whys = kept.forms.get("whys");
    let typed_rows = kept_whys
        .and_then(|k| k["rows"].as_array())
        .cloned()
        .unwrap_or_default();
    let why_rows: Vec<Value> = (0..typed_rows.len().max(5))
        .map(|i| {
            let row = typed_rows.get(i);
            json!({"number": i + 1,
                   "why": row.map_or(json!(""), |r| r["why"].clone()),
                   "because": row.map_or(json!(""), |r| r["because"].clone())})
        })
        .collect();
    let new_chain_factors = factor_options(
        &doc.template.contributing_factors,
        kept_whys.and_then(|k| k["factor"].as_str()),
    );
    let kinds = super::coe_timeline::kind_options();
    let last_look = since_last_look.map(|(seen, changes)| {
        let lines: Vec<Value> = changes
            .iter()
            .map(|h| {
                json!({"at": crate::json::format_utc(&h.at), "actor": h.actor,
                       "what": history_words(h, &doc.sections, &doc.actions)})
            })
            .collect();
        json!({"seen": crate::json::format_utc(&seen), "changes": lines, "count": changes.len(),
               "text_changed": !changed_keys.is_empty()})
    });
    // The actions whose outage came back after they were done.
    let recurred: std::collections::BTreeSet<String> = doc
        .recurred_after_done
        .iter()
        .map(|r| r.action_id.clone())
        .collect();
    let mut data = json!({
        "state": doc.state.as_str().replace('_', " "),
        "is_draft": doc.state == CoeState::Draft,
        "in_review": doc.state == CoeState::InReview,
        // Reading mode: the rendered document, the review panel on top for the
        // reviewer; for anyone who may not change it now, or who asked for it.
        "reading": reading,
        "may_edit": may_write && !reading,
        "may_write": may_write,
        "may_comment": is_reviewer && doc.state == CoeState::InReview,
        "may_answer": may_write,
        "waiting_count": waiting.len(),
        "waiting": waiting,
        "sent_back": sent_back,
        "may_take": doc.owner.is_none() && doc.state.is_editable(),
        "may_add_actions": may_add_actions && !reading,

        "may_review": is_reviewer && doc.state == CoeState::InReview,
        "may_approve": may_approve,

        // The reviewer who sent it back does not submit it again: its owner does.
        "may_submit": may_write && doc.state == CoeState::Draft && !waits_on_owner,
        "waits_on_owner": waits_on_owner,
        // A merged draft is not to be submitted: nothing is missing from it.
        "missing": if doc.state == CoeState::Merged {
            Vec::new()
        } else {
            // A section typed and not saved is not "empty": it is typed, not saved.
            who_is_missing(&doc)
                .into_iter()
                .chain(findings(&doc.completeness.missing, &doc.sections))
                .map(|mut f| {
                    if f["section"].as_str().is_some_and(|k| kept.texts.contains_key(k)) {
                        f["problem"] = json!("typed, not saved yet");
                    }
                    f
                })
                .collect::<Vec<_>>()
        },

        "warnings": findings(&doc.completeness.warnings, &doc.sections),
        "related": related,
        "sections": sections,
        "timeline": timeline,
        "whys": whys,
        "timeline_kinds": kinds,
        "related_kinds": crate::domain::coe::RelatedKind::ALL.map(|k| k.as_str()),
        "severities": crate::domain::Severity::ALL.map(|s| s.to_string()),
        // A draft's owner may switch its template (`coe.templates`).
        "template_choices": template_choices,
        "customers": customers,
        "priorities": Priority::ALL.map(Priority::as_str),
        "action_kinds": ActionKind::ALL.map(ActionKind::as_str),
        "why_rows": why_rows,
        "new_chain_factors": new_chain_factors,
        "notice": kept.notice,
        "problems": kept.problems,
        // A part's form as typed, only where a change of it did not go through (the
        // details form shows the COE's own values otherwise); the review's comment always.
        "forms": {
            "details": kept.forms.get("details").map(|k| form_of("details", Some(k))),
            "review": form_of("review", kept.forms.get("review")),
            "customers": super::coe_customers::typed(&kept.forms, "customers", &["title", "body"]),
            "decision": super::coe_customers::typed(&kept.forms, "decision", &["note"]),
            "incidents": kept.forms.get("incidents").map_or(json!(""), |k| k["incident"].clone()),
        },
        "last_look": last_look,
        "form_key": forms::new_key(),
        "names": names,
        "changes": history.len(),
        "earlier_open": earlier_open,
        "coe": doc,
    });
    // The targets a new action's due date is proposed from, for this COE's severity.
    let today = state.settings.clock().today();
    data["action_targets"] = json!(crate::domain::action::Priority::ALL
        .into_iter()
        .filter_map(|p| {
            let targets = &state.settings.actions.targets;
            let days = crate::domain::action::target_days(targets, p, doc.severity)?;
            let by = crate::domain::action::target_date(targets, p, doc.severity, today)?;
            Some(json!({"priority": p.as_str(), "days": days, "by": by.to_string()}))
        })
        .collect::<Vec<_>>());
    // The review meeting: for whoever may change a COE in review.
    let zone = super::kit::zone_of(state, Some(who));
    data["meeting_form"] = if may_edit && doc.state == CoeState::InReview {
        let scheduled = meeting.as_ref().filter(|m| m.state == "scheduled");
        json!({
            "scheduled": scheduled.is_some(),
            "when": scheduled.map(|m| {
                use chrono::TimeZone;
                format!("{} ({zone})", zone.from_utc_datetime(&m.starts_at).format("%A %-d %B %Y, %H:%M"))
            }),
            "minutes": scheduled.map(|m| m.minutes),
            "attendees": scheduled.map(|m| m.attendees.clone()).unwrap_or_default(),
            "typed_at": kept.forms.get("meeting").and_then(|k| k["starts_at"].as_str().map(str::to_owned)).unwrap_or_default(),
            "minutes_default": scheduled.map_or(state.settings.coe.review_minutes as i32, |m| m.minutes),
            "slot": state.settings.coe.review_slot,
        })
    } else {
        Value::Null
    };
    data["chat_import"] = json!(chat_import);
    data["chat_missing"] = json!(chat_missing);
    // The outage's parts: its incidents and the drafts that could be merged into it.
    let outage = json!({
        // Whether the page holds something typed and not saved yet (the leave-page
        // warning counts it from the start).
        "unsaved": !kept.texts.is_empty() || !kept.forms.is_empty(),
        // The details as shown, to tell a change typed in them from none.
        "details_shown": coe_answer::details_print(
            &doc.title,
            doc.owner.as_deref().unwrap_or_default(),
            doc.reviewer.as_deref().unwrap_or_default(),
            &doc.severity.to_string(),
            doc.service.as_deref().unwrap_or_default(),
        ),
        "today": state.settings.clock().today().to_string(),
        "details_severity": kept
            .forms
            .get("details")
            .and_then(|k| k["severity"].as_str().map(str::to_owned))
            .unwrap_or_else(|| doc.severity.to_string()),
        "incidents": incidents
            .iter()
            .map(|(id, title, state)| json!({"id": id, "title": title, "state": state}))
            .collect::<Vec<_>>(),
        "may_detach": may_write && incidents.len() > 1,
        "incident_count": incidents.len(),
        "drafts": drafts
            .iter()
            .map(|c| {
                let mut v = json!(c);
                v["probable"] = json!(probable.contains(&c.id));
                v
            })
            .collect::<Vec<_>>(),
        "same_outage": same_outage,
        "same_outage_minutes": state.settings.incidents.same_outage_window_secs / 60,
    });
    if let (Value::Object(data), Value::Object(outage)) = (&mut data, outage) {
        data.extend(outage);
    }
    // Beside Submit: the reviewer, or the people who could be; as it is reported,
    // whom a COE that no rule gave an owner to could be handed to.
    if let Value::Object(data) = &mut data {
        let suggested = doc
            .reviewer
            .clone()
            .or_else(|| reviewer_suggestions.first().map(|s| s.email.clone()));
        data.insert("suggested_reviewer".into(), json!(suggested));
        // A draft's sections are saved as they are typed (by the page's script).
        data.insert(
            "autosave".into(),
            json!(may_write && doc.state == CoeState::Draft),
        );
        let others: Vec<_> = reviewer_suggestions
            .iter()
            .filter(|s| doc.reviewer.as_deref() != Some(s.email.as_str()))
            .collect();
        data.insert("reviewer_suggestions".into(), json!(others));
        data.insert(
            "hand_over".into(),
            json!(hand_over.map(|to| json!({ "to": to }))),
        );
    }
    // The bar raiser's part in the review panel (the worst outages).
    if let Value::Object(data) = &mut data {
        let other = if as_bar_raiser {
            &doc.reviewer
        } else {
            &doc.bar_raiser
        };
        data.insert("as_bar_raiser".into(), json!(as_bar_raiser));
        data.insert("approved_already".into(), json!(approved_already));
        let awaited = awaited.flatten();
        // Said to the person reading it: "it waits for you", not for their own name;
        // and an approval already given is not asked for again.
        data.insert("awaits_me".into(), json!(awaited.as_deref() == Some(me)));
        data.insert("awaited".into(), json!(awaited));
        let other_approved = other.is_some() && doc.approved_by == *other;
        data.insert(
            "other_approver".into(),
            json!(other.as_ref().filter(|_| !other_approved)),
        );
        data.insert(
            "other_approved".into(),
            json!(other.as_ref().filter(|_| other_approved)),
        );
        data.extend(super::review::rules(
            &doc,
            bar_raisers,
            &incidents,
            state.env(),
        ));
    }
    if let Some(actions) = data["coe"]["actions"].as_array_mut() {
        for action in actions {
            let id = action["id"].as_str().unwrap_or_default();
            action["recurred"] = json!(recurred.contains(id));
        }
    }
    render(state, Some(who), status, "coe", data)
}

/// What `GET /coes/{id}` may carry: the form kept after a change that did not go
/// through (`kept`), or the section a save went through from (`saved`).
#[derive(Deserialize)]
pub struct ShowQuery {
    kept: Option<String>,
    saved: Option<String>,
    /// The draft was just opened by "Report a failure": say so, and what to write first.
    reported: Option<String>,
    /// The reading mode, or the editor, for someone who may edit it.
    view: Option<View>,
    /// The move just made from the page, to confirm with what comes next.
    did: Option<String>,
}

/// How a person who may edit a COE asked to see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum View {
    Read,
    Edit,
}

/// `GET /coes/{id}`: the page, with what a form kept for this person when the address
/// names it (answered with the status the change came to: 409 for a conflict, 422 for
/// a problem), and "Saved" beside the section a save went through from.
pub async fn show(
    who: SignedIn,
    path: web::Path<String>,
    query: web::Query<ShowQuery>,
    state: State,
) -> Page {
    let ShowQuery {
        kept,
        saved,
        reported,
        view,
        did,
    } = query.into_inner();
    let (status, mut kept) = match kept {
        Some(kept_id) => {
            let (id, person) = (path.clone(), who.person.email.as_str().to_owned());
            let found = super::outcome::as_service(&state, move |conn, _| {
                Ok(forms::kept(conn, &kept_id, &person, &id)?)
            })
            .await?;
            found
                .and_then(|(status, body)| {
                    let status = StatusCode::from_u16(status).ok()?;
                    Some((status, serde_json::from_value(body).ok()?))
                })
                .unwrap_or_default()
        }
        None => (StatusCode::OK, Unsaved::default()),
    };
    kept.saved.extend(saved);
    let mut loaded = load(&state, &path, &who, kept.texts.is_empty()).await?;
    // Handing it over is offered as it is reported, not on every look after.
    if reported.is_none() {
        loaded.hand_over = None;
    }
    if reported.is_some() && kept.notice.is_none() {
        kept.notice = Some(super::report::reported_notice(&loaded.doc));
    }
    if let (Some(did), None) = (&did, &kept.notice) {
        kept.notice = confirmation(did, &loaded.doc, &loaded.directory, &state.settings);
    }
    page(&state, &who, status, loaded, kept, view)
}

/// The confirmation of move `did` just made on COE `doc`'s page: what happened and
/// what comes next, naming people as the directory (`names`) does.
fn confirmation(
    did: &str,
    doc: &crate::services::coe::coes::CoeDocument,
    names: &[(String, Option<String>)],
    settings: &crate::config::Settings,
) -> Option<String> {
    let name = |email: &str| super::kit::display_name(names, email);
    let closes =
        if crate::domain::coe::needs_verification(doc.severity, settings.coe.verify_actions_from) {
            "It closes once every corrective action is done and verified."
        } else {
            "It closes once every corrective action is done."
        };
    // Whom a COE in review still waits for: the reviewer, then the bar raiser.
    let awaited = || {
        let approved = |who: &Option<String>| who.is_some() && doc.approved_by == *who;
        [&doc.reviewer, &doc.bar_raiser]
            .into_iter()
            .find(|who| who.is_some() && !approved(who))
            .and_then(|who| who.as_deref().map(name))
    };
    let said = match did {
        "submit" => match (doc.state, awaited()) {
            (CoeState::InReview, Some(first)) => {
                let bar = doc
                    .bar_raiser
                    .as_deref()
                    .map(|b| format!(" and {} as its bar raiser", name(b)))
                    .unwrap_or_default();
                format!(
                    "Submitted. It now waits for {first}{bar} to approve it; you are told when \
                     they do or ask for changes."
                )
            }
            _ => "Submitted.".to_owned(),
        },
        "approve" => match (doc.state, awaited()) {
            (CoeState::InReview, Some(other)) => {
                format!("Approved. It now waits for {other} to approve it too.")
            }
            (CoeState::Closed, _) => {
                "Approved, and closed: every corrective action is done.".into()
            }
            _ => format!("Approved: the review is over. {closes}"),
        },
        "timeline" => "Added to the timeline.".to_owned(),
        "whys" | "chain" => "Saved the 5 whys.".to_owned(),
        "comment" => "Comment added: the owner answers it at the section.".to_owned(),
        "answer" => "Answer saved: the reviewer reads it at their comment.".to_owned(),
        "remove" => "Removed the related link.".to_owned(),
        "detach" => "The incident is no longer part of this COE.".to_owned(),
        "actions" => "Corrective action added.".to_owned(),
        "details" => "Saved.".to_owned(),
        "take" => "It is yours now: you write it and submit it for review.".to_owned(),
        "handover" => match &doc.owner {
            Some(owner) => format!(
                "Handed over: it is {}'s now, and they are emailed.",
                name(owner)
            ),
            None => "Handed over.".to_owned(),
        },
        "related" => "Saved the related link.".to_owned(),
        "incidents" => "Saved which incidents it covers.".to_owned(),
        "template" => "Switched its template: what was written is kept.".to_owned(),
        "published" => "Published: customers can read it at its address.".to_owned(),
        "publication" => {
            "Taken down: its address says the notice was withdrawn, without its text.".to_owned()
        }
        "customers" => match &doc.reviewer {
            Some(reviewer) => format!(
                "Sent to {} for approval: customers read the change once it is approved.",
                name(reviewer)
            ),
            None => "Sent for approval.".to_owned(),
        },
        "summary-approved" => {
            "Approved: it is what customers read now, where the summary is published.".to_owned()
        }
        "summary-sent-back" => "Sent back to its writer, with your note.".to_owned(),
        _ => return None,
    };
    Some(said)
}

/// The template's contributing factors as a select offers them, `chosen` selected.
fn factor_options(factors: &[String], chosen: Option<&str>) -> Vec<Value> {
    factors
        .iter()
        .map(|f| json!({"value": f, "selected": chosen.is_some_and(|c| c.eq_ignore_ascii_case(f))}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::coe_load::section_of;
    use super::super::kit::safe_href;

    #[test]
    fn findings_link_to_their_section_and_only_web_links_are_links() {
        assert_eq!(section_of("five_whys[1].steps[0]"), "five_whys");
        assert_eq!(section_of("impact"), "impact");
        assert_eq!(safe_href(Some("javascript:alert(1)")), None);
        assert_eq!(safe_href(Some("data:text/html,x")), None);
        assert_eq!(
            safe_href(Some("https://example.com/a b")).as_deref(),
            Some("https://example.com/a%20b")
        );
    }
}
