//! The COE page's "For customers" box: where its summary for customers stands
//! (written, approved, published, taken down), the change of it waiting for the
//! reviewer or sent back, and what the edit form starts from.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::domain::coe::CoeState;
use crate::services::access::{self, Editor};
use crate::services::coe::coes::CoeDocument;
use crate::services::coe::publishing::changes::ChangeView;
use crate::services::coe::publishing::PublicationView;

/// What the box is about besides the COE: its newest publication, its newest change,
/// and the title the next publication would have.
pub(super) struct CustomersOf<'a> {
    pub publication: Option<&'a PublicationView>,
    pub change: Option<&'a ChangeView>,
    pub title: Option<&'a str>,
}

/// The box's data (none when the COE's template writes nothing for customers), as
/// `editor` sees it; `may_edit`: they publish, take down and change it.
pub(super) fn data(
    doc: &CoeDocument,
    of: CustomersOf<'_>,
    editor: &Editor<'_>,
    may_edit: bool,
) -> Option<Value> {
    let section = doc.sections.iter().find(|s| s.for_customers)?;
    let waiting = of.change.filter(|c| c.decision.is_none());
    // Only the reviewer approves a change (an admin, the reviewer's own), never its
    // writer.
    let may_decide = waiting.is_some_and(|c| {
        access::decide_summary_change(editor, doc.reviewer.as_deref(), &c.proposed_by).is_ok()
    });
    let sent_back = of
        .change
        .filter(|c| c.decision.as_deref() == Some("sent_back"));
    // What customers read now, and what the edit form starts from (a change waiting,
    // else that): its fingerprint tells a form typed in from one left as shown.
    let live = of.publication.filter(|p| p.live());
    let now_body = live.map_or(section.body.as_str(), |p| p.body.as_str());
    let (edit_title, edit_body) = match waiting {
        Some(c) => (c.title.as_str(), c.body.as_str()),
        None => (of.title.unwrap_or_default(), now_body),
    };
    let shown = crate::services::coe::coes::revision(&format!("{edit_title}\n{edit_body}"));
    Some(json!({
        "title": section.title,
        "key": section.key,
        "now_body": now_body,
        "edit": {"title": edit_title, "body": edit_body, "shown": shown},
        "approved": matches!(doc.state, CoeState::Approved | CoeState::Closed),
        "written": !section.body.trim().is_empty(),
        "publication": of.publication,
        "live": live.is_some(),
        "may_publish": may_edit,
        "waiting": waiting,
        "may_decide": may_decide,
        "sent_back": sent_back,
    }))
}

/// Part `part` of the page as typed, with every field in `fields` (empty when not
/// sent: the templates are strict); none when nothing of it was kept.
pub(super) fn typed(forms: &BTreeMap<String, Value>, part: &str, fields: &[&str]) -> Value {
    let Some(kept) = forms.get(part) else {
        return Value::Null;
    };
    fields
        .iter()
        .map(|f| {
            (
                (*f).to_owned(),
                kept.get(*f).cloned().unwrap_or_else(|| json!("")),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}
