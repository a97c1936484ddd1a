//! The forms of a COE's page: a text section (save or preview), the COE's details
//! (title, owner, reviewer, severity, service), a new timeline entry (an entry's own
//! page is `coe_timeline`), 5-whys chains, related items, new corrective actions,
//! comments and their answers, the outage's incidents and merges. Each calls the service the API calls,
//! with the version the page was loaded with; `coe_answer::answer` turns the outcome into
//! the next page, with what was typed kept when it did not go through.

use actix_web::http::StatusCode;

use super::coe_answer::{self};
use super::coe_timeline::timeline_input;
use super::guard::CoeForm;
use super::guard::Fields;
use super::kit::Page;
use super::outcome::{change, Outcome};
use crate::domain::{EmailAddress, Severity};
use crate::services::coe::actions::{self, NewAction};
use crate::services::coe::coes::{
    self as service, AnswerInput, CoeError, CoePatch, CommentInput, RelatedInput, Why,
    WhyChainInput,
};

/// `POST /coes/{id}/sections`: every text section as typed (`text:{key}`, with the
/// revision it started from in `seen:{key}`), saved together; the button pressed says
/// where the person is (`save={key}`), or asks for a section rendered and nothing
/// saved (`preview={key}`). Each section is checked on its own: the sections someone
/// else saved meanwhile come back side by side with what was typed, a section refused
/// (too long) comes back with its problem at it, the others are saved. What was typed
/// in the page's other parts is kept. Every answer is a `303`, so Back never posts
/// the form again.
pub async fn save_sections(form: CoeForm) -> Page {
    let fields = &form.fields;
    let edits = coe_answer::section_edits(fields);
    let preview = fields.filled("preview");
    let at = preview
        .clone()
        .or_else(|| fields.filled("save"))
        .or_else(|| edits.first().map(|e| e.key.clone()))
        .unwrap_or_default();
    // What was typed in the other parts of the page, and in every section the person
    // changed, with the revision it started from.
    let mut kept = coe_answer::typed_elsewhere(fields, "sections");
    coe_answer::keep_texts(fields, &mut kept);
    let (state, who, id) = (&form.state, &form.who, &form.id);
    if let Some(key) = preview {
        kept.previews
            .insert(key.clone(), fields.text(&format!("text:{key}")));
        return coe_answer::keep(state, who, id, StatusCode::OK, &kept, &key).await;
    }
    let coe = id.clone();
    let saved = super::outcome::write_as_person(state, who, move |conn, state, editor| {
        match service::put_sections(conn, &coe, &edits, editor, &state.env()) {
            Ok(saved) => Ok(Ok(saved)),
            Err(e) => Outcome::of(Err(e)).map(Err),
        }
    })
    .await?;
    let saved = match saved {
        Ok(saved) => saved,
        Err(Outcome::Invalid(problems)) => {
            for (field, problem) in problems {
                let part = if kept.texts.contains_key(&field) {
                    field
                } else {
                    at.clone()
                };
                kept.problems.entry(part).or_default().push(problem);
            }
            return coe_answer::keep(state, who, id, StatusCode::UNPROCESSABLE_ENTITY, &kept, &at)
                .await;
        }
        Err(outcome) => {
            return coe_answer::answer(state, who, id, &at, outcome, kept).await;
        }
    };
    // The sections saved are no longer "typed"; the ones in conflict are shown with
    // theirs, and are based on theirs, so that saving the merge goes through; the ones
    // refused are shown as typed with their problem.
    for key in &saved.saved {
        kept.texts.remove(key);
        kept.seen.remove(key);
    }
    if saved.conflicts.is_empty() && saved.refused.is_empty() {
        if kept.is_empty() {
            return Ok(super::outcome::see_other(&format!(
                "/coes/{id}?saved={at}#{at}"
            )));
        }
        kept.saved = saved.saved;
        return coe_answer::keep(state, who, id, StatusCode::OK, &kept, &at).await;
    }
    // The page lands on the first section that needs the person, in the page's order.
    let first = saved
        .refused
        .first()
        .map(|(key, _)| key.clone())
        .or_else(|| saved.conflicts.first().map(|c| c.key.clone()))
        .unwrap_or(at);
    let status = if saved.refused.is_empty() {
        StatusCode::CONFLICT
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let mut notice = Vec::new();
    if !saved.refused.is_empty() {
        notice.push(format!(
            "{} not saved: {} says why. {}",
            if saved.refused.len() == 1 {
                "A section was"
            } else {
                "Some sections were"
            },
            if saved.refused.len() == 1 {
                "the problem at it"
            } else {
                "the problem at each"
            },
            if saved.saved.is_empty() {
                "What you typed is kept below."
            } else {
                "Every other section you changed was saved."
            }
        ));
    }
    for (key, problem) in saved.refused {
        kept.problems.entry(key).or_default().push(problem);
    }
    if !saved.conflicts.is_empty() {
        // One person in two tabs is told so, not of "someone else".
        let me = who.person.email.as_str();
        let by_me = saved.conflicts.iter().all(|c| c.by == me);
        notice.push(if by_me {
            "You saved a section you changed here from another tab or window meanwhile: that \
             text and this one are side by side below. This one is not saved yet: merge them \
             and save."
                .to_owned()
        } else {
            "A section you changed was saved by another person while you were writing: theirs \
             and yours are side by side below. Yours is not saved yet: merge them and save."
                .to_owned()
        });
    }
    for conflict in saved.conflicts {
        kept.seen
            .insert(conflict.key.clone(), conflict.revision.clone());
        kept.conflicts.insert(conflict.key.clone(), conflict);
    }
    kept.notice = Some(notice.join(" "));
    kept.saved = saved.saved;
    coe_answer::keep(state, who, id, status, &kept, &first).await
}

/// An email address field: the value, or the problem with it.
fn email_field(
    form: &Fields,
    name: &str,
    problems: &mut Vec<(String, String)>,
) -> Option<EmailAddress> {
    let value = form.filled(name)?;
    EmailAddress::parse(&value)
        .map_err(|p| problems.push((name.to_owned(), p)))
        .ok()
}

/// `POST /coes/{id}/details`: title, owner, reviewer, severity and service; only
/// what differs from the COE as it is is sent, so nobody is told of an assignment
/// that did not change.
pub async fn details(form: CoeForm) -> Page {
    let fields = &form.fields.part("details");
    let mut problems = Vec::new();
    let owner = email_field(fields, "owner", &mut problems);
    let reviewer = email_field(fields, "reviewer", &mut problems);
    let severity = fields.filled("severity").and_then(|s| {
        s.parse::<Severity>()
            .map_err(|e| problems.push(("severity".into(), e.to_string())))
            .ok()
    });
    let (title, service_name) = (fields.filled("title"), fields.filled("service"));
    form.change(
        "details",
        "details",
        move |conn, state, editor, coe, version| {
            if !problems.is_empty() {
                return Err(CoeError::Invalid(problems));
            }
            let now = service::load(conn, coe, state.env())?;
            let patch = CoePatch {
                title: title.filter(|t| *t != now.title),
                owner: owner.filter(|o| now.owner.as_deref() != Some(o.as_str())),
                reviewer: reviewer.filter(|r| now.reviewer.as_deref() != Some(r.as_str())),
                severity: severity.filter(|s| *s != now.severity),
                service: service_name.filter(|s| now.service.as_deref() != Some(s.as_str())),
                template: None,
            };
            service::patch(conn, coe, patch, version, editor, state.env())
        },
    )
    .await
}

/// `POST /coes/{id}/hand-over`: the owner gives the COE to someone else (one of the
/// people offered, `to`, or one typed, `owner`), offered when no rule named its owner.
pub async fn hand_over(form: CoeForm) -> Page {
    let fields = form.fields.part("handover");
    let typed = fields.filled("to").or_else(|| fields.filled("owner"));
    form.change(
        "details",
        "handover",
        move |conn, state, editor, coe, version| {
            let Some(typed) = typed else {
                return Err(CoeError::Invalid(vec![(
                    String::new(),
                    "Name the person to hand it to.".into(),
                )]));
            };
            let owner = EmailAddress::parse(&typed)
                .map_err(|p| CoeError::Invalid(vec![("owner".into(), p)]))?;
            let patch = CoePatch {
                owner: Some(owner),
                ..CoePatch::default()
            };
            service::patch(conn, coe, patch, version, editor, state.env())
        },
    )
    .await
}

/// `POST /coes/{id}/template`: a draft takes another template; its text stays under
/// the sections both have, and the rest is shown apart.
pub async fn switch_template(form: CoeForm) -> Page {
    let name = form.fields.part("template").filled("name");
    form.change(
        "template",
        "template",
        move |conn, state, editor, coe, version| {
            let Some(name) = name else {
                return Err(CoeError::Invalid(vec![(
                    "template".into(),
                    "choose a template".into(),
                )]));
            };
            let patch = CoePatch {
                template: Some(name),
                ..CoePatch::default()
            };
            service::patch(conn, coe, patch, version, editor, state.env())
        },
    )
    .await
}

/// `POST /coes/{id}/take`: the signed-in person becomes the owner of a COE nobody
/// owns (the button beside "nobody yet").
pub async fn take_ownership(form: CoeForm) -> Page {
    form.change("details", "take", |conn, state, editor, coe, _| {
        service::take_ownership(conn, coe, editor, state.env())
    })
    .await
}

/// `POST /coes/{id}/timeline`: adds an entry.
pub async fn add_timeline(form: CoeForm) -> Page {
    let fields = form.fields.part("timeline");
    let zone = super::kit::zone_of(&form.state, Some(&form.who));
    let input = timeline_input(&fields, zone);
    let may_move = fields.filled("move").is_some();
    form.create("timeline", "timeline", move |conn, state, editor, coe| {
        let version = service::version(conn, coe)?;
        // A milestone that would move one of the COE's own times says so first.
        if !may_move {
            super::coe_timeline::refuse_unasked_moves(
                service::milestone_moves(conn, coe, &input, None)?,
                zone,
            )?;
        }
        let entry = service::add_timeline(conn, coe, &input, Some(version), editor, state.env())?;
        Ok::<_, CoeError>(format!("/coes/{coe}?did=timeline#tl-{entry}"))
    })
    .await
}

/// The steps of a chain from the form's repeated `why` and `because` fields; rows
/// left empty are skipped.
fn why_steps(form: &Fields) -> WhyChainInput {
    let steps = form
        .all("why")
        .zip(form.all("because"))
        .filter(|(w, b)| !w.trim().is_empty() || !b.trim().is_empty())
        .map(|(w, b)| Why {
            why: w.trim().to_owned(),
            because: b.trim().to_owned(),
        })
        .collect();
    WhyChainInput {
        steps,
        factor: form.filled("factor"),
    }
}

/// `POST /coes/{id}/whys`: adds a chain.
pub async fn add_whys(form: CoeForm) -> Page {
    let input = why_steps(&form.fields.part("whys"));
    form.create("five_whys", "whys", move |conn, state, editor, coe| {
        let version = service::version(conn, coe)?;
        let chain = service::add_why_chain(conn, coe, &input, Some(version), editor, state.env())?;
        Ok::<_, CoeError>(format!("/coes/{coe}?did=whys#chain-{chain}"))
    })
    .await
}

/// `POST /coes/{id}/whys/{chain}`: replaces a chain, or deletes it.
pub async fn edit_whys(form: CoeForm) -> Page {
    let chain = form.item.clone();
    let own = format!("chain:{chain}");
    let fields = form.fields.part(&own);
    let (input, delete) = (why_steps(&fields), fields.filled("delete").is_some());
    form.change(
        "five_whys",
        &own,
        move |conn, state, editor, coe, version| {
            if delete {
                service::delete_why_chain(conn, coe, &chain, version, editor, state.env())
            } else {
                service::replace_why_chain(conn, coe, &chain, &input, version, editor, state.env())
            }
        },
    )
    .await
}

/// `POST /coes/{id}/related`: links an item (a web page, or another COE by its id or
/// its page's address).
pub async fn add_related(form: CoeForm) -> Page {
    let fields = &form.fields.part("related");
    let kind = fields.text("kind");
    let target = fields.filled("target");
    let (url, coe_id) = if kind == "coe" {
        let other = target.map(|t| {
            let t = t.trim_end_matches('/');
            t.rsplit_once("/coes/").map_or(t, |(_, id)| id).to_owned()
        });
        (None, other)
    } else {
        (target, None)
    };
    let input = RelatedInput {
        kind,
        title: fields.filled("title"),
        url,
        coe_id,
    };
    form.create("related", "related", move |conn, state, editor, coe| {
        let version = service::version(conn, coe)?;
        let item = service::add_related(conn, coe, &input, Some(version), editor, state.env())?;
        Ok::<_, CoeError>(format!("/coes/{coe}?did=related#rel-{item}"))
    })
    .await
}

/// `POST /coes/{id}/related/{item}/delete`.
pub async fn delete_related(form: CoeForm) -> Page {
    let item = form.item.clone();
    form.change(
        "related",
        "remove",
        move |conn, state, editor, coe, version| {
            service::delete_related(conn, coe, &item, version, editor, state.env())
        },
    )
    .await
}

/// `POST /coes/{id}/actions`: a new corrective action; every missing or invalid
/// field is named at once and what was typed stays in the form.
pub async fn add_action(form: CoeForm) -> Page {
    let fields = &form.fields.part("actions");
    let input = NewAction {
        title: fields.filled("title"),
        description: fields.filled("description"),
        owner: fields.filled("owner"),
        due_date: fields.filled("due_date"),
        priority: fields.filled("priority"),
        kind: fields.filled("kind"),
        success_criteria: fields.filled("success_criteria"),
        external_url: fields.filled("external_url"),
        past_target_reason: fields.filled("past_target_reason"),
    };
    form.create("actions", "actions", move |conn, state, editor, coe| {
        let clock = state.settings.clock();
        let action = actions::create(conn, coe, &input, editor, clock, state.env())?;
        Ok::<_, actions::ActionError>(format!("/coes/{coe}?did=actions#action-{action}"))
    })
    .await
}

/// `POST /coes/{id}/comments`: the reviewer's comment on a section (`section`, `body`);
/// back at that section.
pub async fn add_comment(form: CoeForm) -> Page {
    let section = form.fields.text("section");
    let own = format!("comment:{section}");
    let input = CommentInput {
        body: form.fields.part(&own).text("body"),
        section: section.clone(),
    };
    form.change(&section, &own, move |conn, _, editor, coe, _| {
        service::add_comment(conn, coe, &input, editor).map(drop)
    })
    .await
}

/// `POST /coes/{id}/comments/{comment}/answer`: the owner's answer to a comment
/// (`answer`; `section`, the comment's, says where on the page to come back to).
pub async fn answer_comment(form: CoeForm) -> Page {
    let comment = form.item.clone();
    let own = format!("answer:{comment}");
    let input = AnswerInput {
        answer: form.fields.part(&own).text("answer"),
    };
    let part = form.fields.text("section");
    form.change(&part, &own, move |conn, _, editor, coe, _| {
        service::answer_comment(conn, coe, &comment, &input, editor)
    })
    .await
}

/// `POST /coes/{id}/incidents`: attaches another incident of the same outage (`incident`:
/// its id, or its page's address); back at the COE's incidents.
pub async fn attach_incident(form: CoeForm) -> Page {
    let typed = form.fields.part("incidents").text("incident");
    // An address (`…/incidents/{id}`, with or without the site) names its last segment.
    let incident = typed
        .trim()
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    form.change(
        "incidents",
        "incidents",
        move |conn, state, editor, coe, _| {
            service::attach_incident(conn, coe, &incident, editor, state.env())
        },
    )
    .await
}

/// `POST /coes/{id}/incidents/{incident}/detach`.
pub async fn detach_incident(form: CoeForm) -> Page {
    let incident = form.item.clone();
    form.change("incidents", "detach", move |conn, state, editor, coe, _| {
        service::detach_incident(conn, coe, &incident, editor, state.env())
    })
    .await
}

/// `POST /coes/{id}/merge`: folds the drafts ticked (`coe_id`, repeated) into this COE.
/// Lands on the COE kept, saying what was merged and whom it took as owner or
/// reviewer.
pub async fn merge(form: CoeForm) -> Page {
    // The drafts ticked ("Merge them into this COE"), or the one beside its button.
    let ticked = form.fields.filled("merge.go").is_some();
    let chosen = if ticked {
        form.fields.part("merge")
    } else {
        form.fields.clone()
    };
    let sources: Vec<String> = chosen.all("coe_id").map(str::to_owned).collect();
    let done = std::sync::Arc::new(std::sync::Mutex::new(None));
    let told = done.clone();
    let id = form.id.clone();
    let outcome = change(&form.state, &form.who, move |conn, state, editor| {
        let merged = service::merge(conn, &id, &sources, editor, state.env())?;
        *told.lock().unwrap_or_else(|e| e.into_inner()) = Some(merged);
        Ok::<(), crate::services::coe::coes::CoeError>(())
    })
    .await?;
    let merged = done.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (outcome, merged) {
        (Outcome::Done, Some(merged)) => {
            let mut notice = format!(
                "Merged into this COE: {}.",
                merged
                    .titles
                    .iter()
                    .map(|t| format!("“{t}”"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Some(owner) = &merged.took_owner {
                notice.push_str(&format!(" It had no owner: {owner} owns it now."));
            }
            if let Some(reviewer) = &merged.took_reviewer {
                notice.push_str(&format!(" It had no reviewer: {reviewer} reviews it now."));
            }
            let mut kept = coe_answer::typed_elsewhere(&form.fields, "merge");
            kept.notice = Some(notice);
            coe_answer::keep(
                &form.state,
                &form.who,
                &form.id,
                StatusCode::OK,
                &kept,
                "notice",
            )
            .await
        }
        (outcome, _) => form.answer("merge", "merge", outcome).await,
    }
}
