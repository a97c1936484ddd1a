//! A COE's review meeting as an iCalendar object (RFC 5545) sent by email (iTIP,
//! RFC 5546, in an email as RFC 6047 says): `METHOD:REQUEST` to invite and to move it
//! (the same UID, a higher SEQUENCE), `METHOD:CANCEL` to call it off. Google, Outlook
//! and Apple calendars read it from the message's `text/calendar` part.

use chrono::{DateTime, NaiveDateTime, Utc};
use icalendar::{Calendar, Component, Event, EventLike, EventStatus, Property};

/// What an invitation says.
pub struct Invitation<'a> {
    /// Stable across updates: `coe-review-<COE id>@<domain>`.
    pub uid: &'a str,
    pub sequence: u32,
    pub cancelled: bool,
    pub starts_at: NaiveDateTime,
    pub minutes: u32,
    pub title: &'a str,
    /// The reading view of the COE.
    pub link: &'a str,
    /// The organizer: the address emails come from, and its name.
    pub organizer: (&'a str, Option<&'a str>),
    pub attendees: &'a [String],
    /// When this version was made (`DTSTAMP`).
    pub stamp: DateTime<Utc>,
}

/// The iCalendar text, CRLF line ends, folded at 75 octets.
pub fn ics(inv: &Invitation<'_>) -> String {
    let start = inv.starts_at.and_utc();
    let end = start + chrono::Duration::minutes(i64::from(inv.minutes));
    let mut event = Event::new();
    event
        .uid(inv.uid)
        .sequence(inv.sequence)
        .timestamp(inv.stamp)
        .starts(start)
        .ends(end)
        .summary(&format!("COE review: {}", inv.title))
        .description(&format!(
            "The review of the COE \"{}\". Read it before the meeting: {}",
            inv.title, inv.link
        ))
        .url(inv.link)
        .status(if inv.cancelled {
            EventStatus::Cancelled
        } else {
            EventStatus::Confirmed
        });
    let (address, name) = inv.organizer;
    let mut organizer = Property::new("ORGANIZER", format!("mailto:{address}"));
    if let Some(name) = name {
        organizer.add_parameter("CN", name);
    }
    event.append_property(organizer);
    for attendee in inv.attendees {
        let mut line = Property::new("ATTENDEE", format!("mailto:{attendee}"));
        line.add_parameter("ROLE", "REQ-PARTICIPANT")
            .add_parameter("PARTSTAT", "NEEDS-ACTION")
            .add_parameter("RSVP", "TRUE");
        event.append_multi_property(line);
    }
    let mut calendar = Calendar::new();
    calendar
        .append_property(("METHOD", if inv.cancelled { "CANCEL" } else { "REQUEST" }))
        .push(event.done());
    calendar.done().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invitation_and_its_cancellation_are_calendars_with_a_method() {
        let attendees = ["ana@example.com".to_owned(), "bo@example.com".to_owned()];
        let mut inv = Invitation {
            uid: "coe-review-1@example.com",
            sequence: 0,
            cancelled: false,
            starts_at: "2026-12-10T14:00:00".parse().expect("time"),
            minutes: 45,
            title: "Checkout returned 502; 40 minutes",
            link: "https://coe.example.com/coes/1/print",
            organizer: ("coe@example.com", Some("coe")),
            attendees: &attendees,
            stamp: "2026-12-07T10:00:00Z".parse().expect("time"),
        };
        let text = ics(&inv);
        assert!(text.contains("\r\nMETHOD:REQUEST\r\n"), "{text}");
        assert!(text.contains("DTSTART:20261210T140000Z"), "{text}");
        assert!(text.contains("DTEND:20261210T144500Z"), "{text}");
        assert!(text.contains("SEQUENCE:0"), "{text}");
        assert!(text.contains("ATTENDEE;"), "{text}");
        assert!(
            text.contains("Checkout returned 502\\; 40 minutes"),
            "escaped: {text}"
        );
        inv.cancelled = true;
        inv.sequence = 2;
        let text = ics(&inv);
        assert!(
            text.contains("\r\nMETHOD:CANCEL\r\n") && text.contains("STATUS:CANCELLED"),
            "{text}"
        );
    }
}
