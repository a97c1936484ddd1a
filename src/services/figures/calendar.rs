//! A person's open corrective actions as an iCalendar feed: one all-day event on each
//! due date, so that owners see them in the calendar they already look at. Its links
//! open the action's and the COE's pages (as the emails' do), never the JSON API.

use icalendar::{Calendar, Component, Event, EventLike};

use crate::services::coe::actions::ActionView;

/// The feed for `owner`'s actions. `public_url` makes the links.
pub fn feed(owner: &str, actions: &[ActionView], public_url: &str) -> String {
    let base = public_url.trim_end_matches('/');
    let mut calendar = Calendar::new();
    calendar.name(&format!("coe: corrective actions of {owner}"));
    for a in actions {
        let url = format!("{base}/actions/{}", a.id);
        let coe_url = format!("{base}/coes/{}", a.coe_id);
        let overdue = if a.overdue {
            match a.days_overdue {
                1 => " (overdue by 1 day)".to_owned(),
                n => format!(" (overdue by {n} days)"),
            }
        } else {
            String::new()
        };
        let description = format!(
            "COE: {} ({coe_url})\\nPriority: {:?}, kind: {:?}, state: {}{}\\nSuccess criteria: {}\\n{}",
            a.coe_title,
            a.priority,
            a.kind,
            a.state,
            overdue,
            a.success_criteria.as_deref().unwrap_or("-"),
            url
        );
        calendar.push(
            Event::new()
                .uid(&format!("{}@coe", a.id))
                .summary(&one_line(&format!("Due: {}{}", a.title, overdue)))
                .description(&text(&description.replace("\\n", "\n")))
                // A one-day event ends the next day (RFC 5545, 3.8.2.2: DTEND is later
                // than DTSTART; `all_day` would write the same day twice).
                .starts(a.due_date)
                .ends(a.due_date.succ_opt().unwrap_or(a.due_date))
                .url(&url)
                .done(),
        );
    }
    calendar.done().to_string()
}

/// `text` as the feed may carry it: line breaks as `\n` (which the calendar library
/// escapes), a bare or paired carriage return among them, and no other control
/// character (stored before titles refused them, or from a success criterion's text
/// area); RFC 5545 text holds none.
fn text(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
        .collect()
}

/// `text` on one line (a summary).
fn one_line(text: &str) -> String {
    self::text(text).replace('\n', " ")
}
