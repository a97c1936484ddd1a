//! What email a person wants from coe. Each email is of a class; a person chooses how
//! much of the non-essential classes they get, and may pause them for a while. What
//! needs them (escalations, assignments, review requests, sign-in links) always goes:
//! the mechanism does not depend on anyone's inbox settings.

use chrono::{Duration, NaiveDateTime};

/// Why an email is sent, as far as a person's choice goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Needs them: an escalation, an assignment, a review or a verification asked of
    /// them, a sign-in link. Always sent.
    Essential,
    /// A reminder or a digest: at most one of its kind a day or a week, with
    /// `List-Id` and `List-Unsubscribe` headers.
    Digest,
    /// A notice that only informs (a COE approved, merged, an action's incident
    /// recurred): also on the person's own page.
    Notice,
}

/// How much of the non-essential email a person gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Everything (the default).
    #[default]
    Every,
    /// Reminders and digests, not single notices.
    Digests,
    /// Only what needs them. The one-click unsubscribe chooses this.
    Essential,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Every, Mode::Digests, Mode::Essential];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Every => "every",
            Mode::Digests => "digests",
            Mode::Essential => "essential",
        }
    }

    pub fn parse(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }

    fn allows(self, class: Class) -> bool {
        match (self, class) {
            (_, Class::Essential) | (Mode::Every, _) => true,
            (Mode::Digests, Class::Digest) => true,
            (Mode::Digests, Class::Notice) | (Mode::Essential, _) => false,
        }
    }
}

/// The longest pause a person can choose: a pause is for a holiday, not for ever.
pub const MAX_PAUSE_DAYS: i64 = 90;

/// How long an unsubscribe link keeps working.
pub const LINK_DAYS: i64 = 90;

/// A person's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Choice {
    pub mode: Mode,
    /// No non-essential email before this time.
    pub paused_until: Option<NaiveDateTime>,
    /// Where what needs them reaches them: by email, in chat, or both.
    pub reach: Reach,
}

/// Where a person's reminders, assignments, review requests and verifications reach
/// them. In chat, the email waits (`Reach::EMAIL_FALLBACK_MINUTES`) and goes only if
/// the chat message could not be delivered: nothing that needs them is lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reach {
    #[default]
    Email,
    /// A direct message in Slack.
    Chat,
    Both,
}

impl Reach {
    pub const ALL: [Reach; 3] = [Reach::Email, Reach::Chat, Reach::Both];

    /// How long an email waits for its chat message to be delivered instead.
    pub const EMAIL_FALLBACK_MINUTES: i64 = 30;

    pub fn name(self) -> &'static str {
        match self {
            Reach::Email => "email",
            Reach::Chat => "chat",
            Reach::Both => "both",
        }
    }

    pub fn parse(word: &str) -> Option<Reach> {
        Reach::ALL.into_iter().find(|r| r.name() == word)
    }

    /// Whether a chat message goes.
    pub fn in_chat(self) -> bool {
        self != Reach::Email
    }
}

impl Choice {
    /// Whether an email of `class` goes to this person at `now`.
    pub fn allows(&self, class: Class, now: NaiveDateTime) -> bool {
        if class == Class::Essential {
            return true;
        }
        if self.paused_until.is_some_and(|until| until > now) {
            return false;
        }
        self.mode.allows(class)
    }

    /// The pause's end for a pause of `days` from `now`: `None` for 0, else 1 to
    /// `MAX_PAUSE_DAYS` days.
    pub fn pause_for(days: i64, now: NaiveDateTime) -> Result<Option<NaiveDateTime>, String> {
        match days {
            0 => Ok(None),
            1..=MAX_PAUSE_DAYS => Ok(Some(now + Duration::days(days))),
            _ => Err(format!(
                "a pause lasts from 1 to {MAX_PAUSE_DAYS} days (0 ends it)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap()
    }

    #[test]
    fn essential_email_goes_whatever_the_choice() {
        let now = at("2026-12-05 10:00");
        for mode in Mode::ALL {
            let paused = Choice {
                mode,
                paused_until: Some(at("2027-01-01 00:00")),
                reach: Reach::Chat,
            };
            assert!(paused.allows(Class::Essential, now), "{mode:?}");
        }
    }

    #[test]
    fn each_mode_lets_through_what_it_says() {
        let now = at("2026-12-05 10:00");
        let choice = |mode| Choice {
            mode,
            paused_until: None,
            reach: Reach::Email,
        };
        assert!(choice(Mode::Every).allows(Class::Notice, now));
        assert!(choice(Mode::Digests).allows(Class::Digest, now));
        assert!(!choice(Mode::Digests).allows(Class::Notice, now));
        assert!(!choice(Mode::Essential).allows(Class::Digest, now));
        assert_eq!(Mode::parse("digests"), Some(Mode::Digests));
        assert_eq!(Mode::parse("none"), None);
    }

    #[test]
    fn a_pause_holds_until_its_end_then_the_mode_applies_again() {
        let until = at("2026-12-10 10:00");
        let choice = Choice {
            mode: Mode::Every,
            paused_until: Some(until),
            reach: Reach::Both,
        };
        assert_eq!(Reach::parse("chat"), Some(Reach::Chat));
        assert!(Reach::Both.in_chat() && !Reach::Email.in_chat());
        assert!(!choice.allows(Class::Digest, at("2026-12-10 09:59")));
        assert!(choice.allows(Class::Digest, until));
        assert_eq!(Choice::pause_for(0, until), Ok(None));
        assert_eq!(
            Choice::pause_for(3, until),
            Ok(Some(at("2026-12-13 10:00")))
        );
        assert!(Choice::pause_for(91, until).is_err());
        assert!(Choice::pause_for(-1, until).is_err());
    }
}
