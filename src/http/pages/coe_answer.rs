//! How a COE page answers its forms: a change that went through lands back on the
//! part of the page it came from; one that did not — and a preview — is kept for the
//! person (`forms::keep`) and shown by the `GET` its `303` leads to, with the problems
//! at their part, what was typed, or a notice naming who saved first.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::web;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::coe_history::change_words;
use super::coe_load::{load, section_of};
use super::error::PageError;
use super::guard::CoeForm;
use super::guard::Fields;
use super::kit::Page;
use super::outcome::{change, FormError};
use super::outcome::{see_other, Outcome};
use crate::db::DbConnection;
use crate::http::session::SignedIn;
use crate::http::state::AppState;
use crate::services::access::Editor;
use crate::services::coe::coes::{
    self as service, HistoryEntry, SectionConflict, SectionEdit, SectionView,
};
use crate::services::forms::{self, Once};

/// What a page shows besides the document after a change that did not go through
/// (kept between the POST and the GET after it, `forms::keep`): a notice, and per part
/// of the page (a text section's key, or `timeline`, `five_whys`, `related`, `actions`,
/// `details`, `review`) the problems and what the person typed.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Unsaved {
    pub notice: Option<String>,
    pub texts: BTreeMap<String, String>,
    pub problems: BTreeMap<String, Vec<String>>,
    pub forms: BTreeMap<String, Value>,
    /// Text sections to show rendered, not saved (the preview button).
    pub previews: BTreeMap<String, String>,
    /// Text sections someone else saved meanwhile: their text beside what was typed.
    pub conflicts: BTreeMap<String, SectionConflict>,
    /// The revision each typed section is based on, where it is not the one stored
    /// (what was typed before a preview; theirs after a conflict, to save the merge).
    pub seen: BTreeMap<String, String>,
    /// The sections saved by the same save.
    pub saved: Vec<String>,
}

impl Unsaved {
    /// Whether it holds nothing to show.
    pub fn is_empty(&self) -> bool {
        self.notice.is_none()
            && self.texts.is_empty()
            && self.problems.is_empty()
            && self.forms.is_empty()
            && self.previews.is_empty()
            && self.conflicts.is_empty()
            && self.saved.is_empty()
    }
}

/// The fields of the parts of a COE's page that start filled in (the details, a 5-whys
/// chain) as a fingerprint: what the page sends as `{part}.shown`, so that a part is
/// kept as typed only when the person changed something in it.
pub(super) fn shown(values: &Value) -> String {
    forms::fingerprint(values)
}

/// The details as the page shows them and as a form sends them back.
pub(super) fn details_print(
    title: &str,
    owner: &str,
    reviewer: &str,
    severity: &str,
    service: &str,
) -> String {
    shown(&serde_json::json!([
        title.trim(),
        owner.trim(),
        reviewer.trim(),
        severity,
        service.trim()
    ]))
}

/// A 5-whys chain as the page shows it and as a form sends it back (rows left empty
/// are not part of it).
pub(super) fn chain_print<'a>(
    rows: impl Iterator<Item = (&'a str, &'a str)>,
    factor: Option<&str>,
) -> String {
    let rows: Vec<(&str, &str)> = rows
        .map(|(w, b)| (w.trim(), b.trim()))
        .filter(|(w, b)| !w.is_empty() || !b.is_empty())
        .collect();
    shown(&serde_json::json!([rows, factor.unwrap_or_default()]))
}

/// The rows of a 5-whys form as typed, to show again.
pub(super) fn why_rows(form: &Fields) -> Value {
    form.all("why")
        .zip(form.all("because"))
        .map(|(why, because)| serde_json::json!({"why": why, "because": because}))
        .collect()
}

/// Part `part` of the page as typed, in the shape its form shows again.
fn part_typed(part: &str, fields: &Fields) -> Value {
    if part == "whys" || part.starts_with("chain:") {
        serde_json::json!({"rows": why_rows(fields), "factor": fields.text("factor")})
    } else {
        fields.to_json()
    }
}

/// Whether part `part`, sent as `fields`, holds something the person typed: a part
/// that starts filled in, when it differs from what the page showed.
fn part_changed(part: &str, fields: &Fields) -> bool {
    if part == "decision" {
        // The change decided rides along hidden; only a note is typed.
        return fields.filled("note").is_some();
    }
    let Some(shown) = fields.filled("shown") else {
        return !fields.is_blank();
    };
    if part == "customers" {
        // The summary for customers' edit form starts on what customers read.
        let now = format!("{}\n{}", fields.text("title"), fields.text("body"));
        return service::revision(&now) != shown;
    }
    if part == "template" {
        // A choice that starts on the COE's own template: changed when another is chosen.
        return fields.text("name") != shown;
    }
    if part == "review" {
        // The reviewer field beside Submit starts on the reviewer (or the one suggested).
        return fields.text("reviewer").trim() != shown || fields.filled("comment").is_some();
    }
    let now = if part == "details" {
        details_print(
            &fields.text("title"),
            &fields.text("owner"),
            &fields.text("reviewer"),
            &fields.text("severity"),
            &fields.text("service"),
        )
    } else {
        let factor = fields.filled("factor");
        chain_print(
            fields.all("why").zip(fields.all("because")),
            factor.as_deref(),
        )
    };
    now != shown
}

/// Everything typed on a COE's page but the part `own` whose button was pressed: every
/// text section changed since the page was loaded (`text:{key}` against `seen:{key}`)
/// unless `own` is `sections`, and every other part (`{part}.{field}`: `details`,
/// `timeline`, `whys`, `chain:{id}`, `related`, `actions`, `comment:{section}`,
/// `answer:{comment}`, `review`, `incidents`) that holds something typed. The page is
/// one form, so every button sends all of it; what the button's own change does not
/// use is kept (`keep`) and shown again on the page it lands on, not saved: no button
/// loses what was typed elsewhere on the page.
pub(super) fn typed_elsewhere(fields: &Fields, own: &str) -> Unsaved {
    let mut kept = Unsaved::default();
    if own != "sections" {
        keep_texts(fields, &mut kept);
    }
    for part in fields.parts(own) {
        let typed = fields.part(part);
        if part_changed(part, &typed) {
            kept.forms.insert(part.to_owned(), part_typed(part, &typed));
        }
    }
    kept
}

/// Every text section as sent (`text:{key}`, with the revision it started from in
/// `seen:{key}`).
pub(super) fn section_edits(fields: &Fields) -> Vec<SectionEdit> {
    fields
        .prefixed("text:")
        .map(|(key, body)| SectionEdit {
            based_on: fields.text(&format!("seen:{key}")),
            key: key.to_owned(),
            // One text whether a form (`\r\n`) or the page's script (`\n`) sent it.
            body: body.replace("\r\n", "\n"),
        })
        .collect()
}

/// Whether the person changed the section since the page showed it.
pub(super) fn changed(edit: &SectionEdit) -> bool {
    service::revision(&edit.body) != edit.based_on
}

/// Every text section changed since the page was loaded, into `kept` with the
/// revision it started from.
pub(super) fn keep_texts(fields: &Fields, kept: &mut Unsaved) {
    for edit in section_edits(fields).into_iter().filter(changed) {
        kept.seen.insert(edit.key.clone(), edit.based_on);
        kept.texts.insert(edit.key, edit.body);
    }
}

/// Everything typed on the page, part `own` included (sent in its `own.` fields, or
/// unprefixed by a form of that part alone): what a change that did not go through
/// shows again.
pub(super) fn typed_on_page(fields: &Fields, own: &str) -> Unsaved {
    let mut kept = typed_elsewhere(fields, own);
    if own == "sections" {
        keep_texts(fields, &mut kept);
    } else {
        let typed = fields.part(own);
        if !typed.is_blank() {
            kept.forms.insert(own.to_owned(), part_typed(own, &typed));
        }
    }
    kept
}

/// Who changed the COE lately, in words: "ana@example.com wrote Impact at 10:03 UTC".
fn changed_by(
    history: &[HistoryEntry],
    count: usize,
    titles: &[SectionView],
    zone: chrono_tz::Tz,
) -> String {
    let recent: Vec<String> = history
        .iter()
        .rev()
        .take(count.max(1))
        .map(|h| {
            format!(
                "{} {} at {}",
                h.actor,
                change_words(&h.action, titles),
                h.at.and_utc().with_timezone(&zone).format("%H:%M %Z")
            )
        })
        .collect();
    recent.join("; ")
}

/// Keeps `kept` for the person and answers with a `303` to the COE's page showing it
/// (with `status`), at `anchor`: a form that did not go through, and a preview, are
/// answered like one that did, so Back and reload never post it again.
pub(super) async fn keep(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    status: StatusCode,
    kept: &Unsaved,
    anchor: &str,
) -> Page {
    let body = serde_json::to_value(kept).map_err(|e| PageError::Internal(e.to_string()))?;
    let (person, coe) = (who.person.email.as_str().to_owned(), id.to_owned());
    let kept_id = super::outcome::as_service(state, move |conn, _| {
        Ok(forms::keep(conn, &person, &coe, status.as_u16(), &body)?)
    })
    .await?;
    Ok(see_other(&format!("/coes/{id}?kept={kept_id}#{anchor}")))
}

/// The part of the page (`anchor`) a form of part `part` is in.
pub(super) fn anchor_of(part: &str) -> String {
    if matches!(part, "timeline" | "five_whys" | "related" | "actions") {
        format!("part-{part}")
    } else if matches!(part, "customers" | "publication") {
        "for-customers".to_owned()
    } else {
        part.to_owned()
    }
}

/// The answer to a change of COE `id` made from the part `part` of its page: back
/// to that part when it worked; otherwise (through `keep`) the page again, with the
/// problems next to the part and what the person typed (`kept`), or — when someone
/// saved first — a notice saying who.
pub(super) async fn answer(
    state: &web::Data<AppState>,
    who: &SignedIn,
    id: &str,
    part: &str,
    outcome: Outcome,
    mut kept: Unsaved,
) -> Page {
    // A form that adds to a part shows its problems in the form, and the page lands there.
    let anchor = if matches!(part, "timeline" | "related" | "actions") {
        format!("problem-{part}")
    } else {
        anchor_of(part)
    };
    outcome
        .answer(&format!("/coes/{id}#{anchor}"), |again| async move {
            if let Some((expected, current)) = again.stale {
                let loaded = load(state, id, who, false).await?;
                let count = usize::try_from(current - expected).unwrap_or(1);
                kept.notice = Some(format!(
                    "Someone saved this COE after you opened it (version {expected} → {current}): {}. \
                     What you typed is kept below, not saved; compare it with theirs and save again.",
                    changed_by(
                        &loaded.history,
                        count,
                        &loaded.doc.sections,
                        super::kit::zone_of(state, Some(who))
                    )
                ));
            } else if part == "review" && !again.fields.is_empty() {
                // What a submit lacks, named as the checklist names the sections.
                let loaded = load(state, id, who, false).await?;
                let named = again
                    .fields
                    .iter()
                    .map(|(field, problem)| {
                        if field == crate::services::coe::review::OPEN_INCIDENTS_FIELD {
                            return format!("Not approved: {problem}.");
                        }
                        let title = loaded
                            .doc
                            .sections
                            .iter()
                            .find(|s| s.key == section_of(field))
                            .map_or_else(|| field.replace('_', " "), |s| s.title.clone());
                        format!("{title}: {problem}")
                    })
                    .collect();
                kept.problems.insert(part.to_owned(), named);
            } else {
                kept.problems.insert(part.to_owned(), again.problems);
            }
            keep(state, who, id, again.status, &kept, &anchor).await
        })
        .await
}

impl CoeForm {
    /// Runs `work` on the COE (its id and the page's version given) as the signed-in
    /// person: the change of part `own` of its page (the button's; see
    /// `typed_elsewhere`). Answers on part `part` of the page: when it went
    /// through, with what was typed in the page's other parts kept and shown again;
    /// when it did not, with all of it, `own` included.
    pub async fn change<E: FormError + Send + 'static>(
        &self,
        part: &str,
        own: &str,
        work: impl FnOnce(&mut DbConnection, &AppState, &Editor<'_>, &str, Option<i32>) -> Result<(), E>
            + Send
            + 'static,
    ) -> Page {
        let (id, version) = (self.id.clone(), self.fields.version());
        let outcome = change(&self.state, &self.who, move |conn, state, editor| {
            work(conn, state, editor, &id, version)
        })
        .await?;
        self.answer(part, own, outcome).await
    }

    /// The answer to the change of part `own`, made from part `part` of the page.
    pub(super) async fn answer(&self, part: &str, own: &str, outcome: Outcome) -> Page {
        match outcome {
            Outcome::Done => {
                // What was done, for the page to confirm (`coes::confirmation`): the
                // review's step, or the part changed.
                let did = if part == "review" {
                    &self.item
                } else {
                    own.split(':').next().unwrap_or(own)
                };
                // A reviewer who sent it back has nothing more to do on it: they land
                // on their own work, told it is with its owner.
                let landed = if did == "request-changes" {
                    format!("/?did=changes-asked&coe={}", self.id)
                } else {
                    format!("/coes/{}?did={did}#{}", self.id, anchor_of(part))
                };
                self.landed(&landed, own).await
            }
            outcome => {
                let kept = typed_on_page(&self.fields, own);
                answer(&self.state, &self.who, &self.id, part, outcome, kept).await
            }
        }
    }

    /// Lands on `path` (on this COE's page) after the change of part `own` went
    /// through, with what was typed elsewhere on the page kept and shown again.
    pub(super) async fn landed(&self, path: &str, own: &str) -> Page {
        let rest = typed_elsewhere(&self.fields, own);
        if rest.is_empty() {
            return Ok(super::outcome::see_other(path));
        }
        let anchor = path.split_once('#').map_or("", |(_, a)| a);
        keep(
            &self.state,
            &self.who,
            &self.id,
            StatusCode::OK,
            &rest,
            anchor,
        )
        .await
    }
}

impl CoeForm {
    /// Runs `work`, which makes a record of the COE (given its id) from part `own` of
    /// its page and answers the page address it lands on, under the part's one-time
    /// key (`form_key`): a repeat of the same form (a retry on a slow link, a double
    /// click) lands where the first did and makes nothing. Answers on part `part` of
    /// the page, with what was typed kept as `change` does.
    pub async fn create<E>(
        &self,
        part: &str,
        own: &str,
        work: impl FnOnce(&mut DbConnection, &AppState, &Editor<'_>, &str) -> Result<String, E>
            + Send
            + 'static,
    ) -> Page
    where
        E: FormError + From<diesel::result::Error> + Send + 'static,
    {
        let fields = self.fields.part(own);
        let key = forms::form_key(fields.filled("form_key"));
        let print = fields.fingerprint();
        let id = self.id.clone();
        let made =
            super::outcome::write_as_person(&self.state, &self.who, move |conn, state, editor| {
                let made = forms::once(conn, key.as_deref(), editor.actor, &print, |conn| {
                    work(conn, state, editor, &id)
                });
                match made {
                    Ok(Once::Made(path)) => Ok(Ok(path)),
                    Ok(Once::Reused) => Ok(Err(Outcome::Refused(REUSED.into()))),
                    Err(e) => Outcome::of::<E>(Err(e)).map(Err),
                }
            })
            .await?;
        match made {
            Ok(landed) => self.landed(&landed, own).await,
            Err(outcome) => self.answer(part, own, outcome).await,
        }
    }
}

/// Why a create form's key that was sent with other fields makes nothing.
const REUSED: &str = "This form was sent before with other contents (from a page kept by the \
                      browser?): nothing was added. What you typed is kept: send it again to add it.";
