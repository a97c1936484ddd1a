//! The rules that make the COE template a mechanism rather than a form: what is
//! missing or weak in a writeup, and which phrases state an intention instead of a
//! mechanism. One function, `assess`, serves the API, the web UI and the review step.

use std::collections::BTreeMap;

use serde::Serialize;

use super::template::{SectionKind, Template};

/// Phrases that state an intention ("we'll be more careful") rather than a mechanism.
/// The default of `coe.intention_phrases`.
pub const DEFAULT_INTENTION_PHRASES: &[&str] = &[
    "be more careful",
    "more carefully",
    "remind",
    "double-check",
    "double check",
    "pay more attention",
    "pay closer attention",
    "try to",
    "retrain",
    "re-train",
    "be aware",
    "make sure to",
    "be vigilant",
    "should have known",
];

/// Words that end a 5-whys chain at the person instead of the system.
const HUMAN_ERROR: &[&str] = &["human error", "operator error", "user error", "mistake by"];

/// One 5-whys step: a question and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhyStep {
    pub why: String,
    pub because: String,
}

/// What the rules look at.
#[derive(Debug, Clone, Default)]
pub struct CoeContent<'a> {
    /// Section bodies by key (text sections).
    pub sections: BTreeMap<&'a str, &'a str>,
    pub timeline_entries: usize,
    pub why_chains: Vec<Vec<WhyStep>>,
    /// The contributing factor of each chain, in the same order (`None`: not tagged).
    pub why_factors: Vec<Option<String>>,
    /// `None` until corrective actions are tracked for this COE.
    pub action_count: Option<usize>,
    /// Extra texts to lint, by where they are (e.g. action titles): (place, text).
    pub other_texts: Vec<(String, String)>,
}

/// One finding, naming where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Finding {
    /// A section key, or a place inside one (`five_whys[1]`).
    pub at: String,
    pub problem: String,
}

impl Finding {
    fn new(at: impl Into<String>, problem: impl Into<String>) -> Self {
        Finding {
            at: at.into(),
            problem: problem.into(),
        }
    }
}

/// Everything the rules found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Assessment {
    /// True when nothing required is missing (warnings do not block).
    pub complete: bool,
    /// Every missing or weak required piece; submitting is refused while any remain.
    pub missing: Vec<Finding>,
    /// Intentions and human-error endings: for the reviewer, not a block.
    pub warnings: Vec<Finding>,
}

fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
        .to_owned()
}

/// Whether `body` says nothing beyond the guidance text (pasted, or left in place).
pub fn only_guidance(body: &str, guidance: &str) -> bool {
    let body = normalize(body);
    let guidance = normalize(guidance);
    !guidance.is_empty() && (body == guidance || guidance.contains(&body) && !body.is_empty())
}

fn count_numbers(text: &str) -> usize {
    let mut count = 0;
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                count += 1;
            }
            in_number = true;
        } else if !(in_number && matches!(c, '.' | ',')) {
            in_number = false;
        }
    }
    count
}

/// Warnings for every intention phrase in `text`, found at `at`.
pub fn lint_intentions(at: &str, text: &str, phrases: &[String]) -> Vec<Finding> {
    let lower = text.to_lowercase();
    phrases
        .iter()
        .filter(|p| !p.trim().is_empty() && lower.contains(&p.to_lowercase()))
        .map(|p| {
            Finding::new(
                at,
                format!("“{p}” states an intention, not a mechanism: what will make it happen every time?"),
            )
        })
        .collect()
}

/// A COE's own times and its incidents' first alert, for `time_findings`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutageTimes {
    pub started: Option<chrono::NaiveDateTime>,
    pub detected: Option<chrono::NaiveDateTime>,
    pub mitigated: Option<chrono::NaiveDateTime>,
    pub resolved: Option<chrono::NaiveDateTime>,
    /// When the first alert of the COE's incidents fired.
    pub first_alert: Option<chrono::NaiveDateTime>,
}

/// Times that contradict each other, as missing work at `key` (the timeline): an
/// outage noticed, mitigated or resolved before it started; noticed or mitigated
/// after it was resolved; started after its first alert fired (it began at the
/// latest then). Each names the two times and the milestone entries that set them.
pub fn time_findings(key: &str, t: &OutageTimes) -> Vec<Finding> {
    let hm = |at: chrono::NaiveDateTime| at.format("%Y-%m-%d %H:%M UTC").to_string();
    let mut found = Vec::new();
    let mut before = |later: Option<chrono::NaiveDateTime>,
                      later_words: &str,
                      earlier: Option<chrono::NaiveDateTime>,
                      earlier_words: &str| {
        if let (Some(l), Some(e)) = (later, earlier) {
            if l < e {
                found.push(Finding::new(
                    key,
                    format!(
                        "says the outage {later_words} ({}) before it {earlier_words} ({}): correct the milestone entry that is wrong",
                        hm(l),
                        hm(e)
                    ),
                ));
            }
        }
    };
    before(t.detected, "was noticed", t.started, "started");
    before(t.mitigated, "was mitigated", t.started, "started");
    before(t.resolved, "was resolved", t.started, "started");
    before(t.resolved, "was resolved", t.detected, "was noticed");
    before(t.resolved, "was resolved", t.mitigated, "was mitigated");
    if let (Some(started), Some(alert)) = (t.started, t.first_alert) {
        if started > alert {
            found.push(Finding::new(
                key,
                format!(
                    "says the outage started at {}, after its first alert fired at {}: it began at the latest when the alert fired (move the entry “The outage started”, or make it a note)",
                    hm(started),
                    hm(alert)
                ),
            ));
        }
    }
    found
}

/// Reports, for a COE, every missing or weak piece and every warning.
pub fn assess(template: &Template, content: &CoeContent<'_>, phrases: &[String]) -> Assessment {
    let mut missing = Vec::new();
    let mut warnings = Vec::new();
    for spec in &template.sections {
        let key = spec.key.as_str();
        match spec.kind {
            SectionKind::Text => {
                let body = content.sections.get(key).copied().unwrap_or("");
                if spec.required {
                    if body.trim().is_empty() {
                        missing.push(Finding::new(key, "is empty"));
                    } else if only_guidance(body, &spec.guidance) {
                        missing.push(Finding::new(key, "still holds only its guidance text"));
                    } else if count_numbers(body) < spec.min_numbers as usize {
                        missing.push(Finding::new(
                            key,
                            format!(
                                "must contain at least {} number{} (how many customers, requests, minutes?)",
                                spec.min_numbers,
                                if spec.min_numbers == 1 { "" } else { "s" }
                            ),
                        ));
                    }
                }
                warnings.extend(lint_intentions(key, body, phrases));
            }
            SectionKind::Timeline => {
                if spec.required && content.timeline_entries == 0 {
                    missing.push(Finding::new(key, "has no entries"));
                }
            }
            SectionKind::FiveWhys => {
                let long_enough = content
                    .why_chains
                    .iter()
                    .any(|chain| chain.len() >= spec.min_whys as usize);
                if spec.required && !long_enough {
                    missing.push(Finding::new(
                        key,
                        format!("needs a chain of at least {} whys", spec.min_whys),
                    ));
                }
                for (i, chain) in content.why_chains.iter().enumerate() {
                    let at = format!("{key}[{i}]");
                    let tagged = content.why_factors.get(i).is_some_and(Option::is_some);
                    if spec.required && !template.contributing_factors.is_empty() && !tagged {
                        missing.push(Finding::new(
                            &at,
                            format!(
                                "name the contributing factor this chain ends in (one of: {})",
                                template.contributing_factors.join(", ")
                            ),
                        ));
                    }
                    if let Some(last) = chain.last() {
                        let end = format!("{} {}", last.why, last.because).to_lowercase();
                        if HUMAN_ERROR.iter().any(|h| end.contains(h)) {
                            warnings.push(Finding::new(
                                &at,
                                "ends in human error: ask why the system let the error through",
                            ));
                        }
                    }
                    for (j, step) in chain.iter().enumerate() {
                        let text = format!("{} {}", step.why, step.because);
                        warnings.extend(lint_intentions(
                            &format!("{at}.steps[{j}]"),
                            &text,
                            phrases,
                        ));
                    }
                }
            }
            SectionKind::Actions => {
                if spec.required && content.action_count == Some(0) {
                    missing.push(Finding::new(key, "needs at least one corrective action"));
                }
            }
            SectionKind::Related => {}
        }
    }
    for (at, text) in &content.other_texts {
        warnings.extend(lint_intentions(at, text, phrases));
    }
    Assessment {
        complete: missing.is_empty(),
        missing,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrases() -> Vec<String> {
        DEFAULT_INTENTION_PHRASES
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn why(w: &str, b: &str) -> WhyStep {
        WhyStep {
            why: w.into(),
            because: b.into(),
        }
    }

    fn complete_content<'a>() -> CoeContent<'a> {
        let mut c = CoeContent::default();
        for (k, v) in [
            ("summary", "Checkout failed for 42 minutes."),
            ("impact", "12,000 orders failed; 3% of customers."),
            ("detection", "An alert after 4 minutes."),
            ("diagnosis", "Logs showed pool exhaustion."),
            ("mitigation", "Restarted the pool."),
            ("prevention", "A pool-size check in CI."),
            ("lessons", "Canaries work."),
        ] {
            c.sections.insert(k, v);
        }
        c.timeline_entries = 3;
        c.why_chains = vec![vec![
            why("a", "b"),
            why("c", "d"),
            why("e", "a config default"),
        ]];
        c.why_factors = vec![Some("configuration".into())];
        c.action_count = Some(1);
        c
    }

    #[test]
    fn every_chain_names_its_contributing_factor_unless_the_template_tags_none() {
        let mut t = Template::default_template();
        let mut c = complete_content();
        c.why_chains
            .push(vec![why("f", "g"), why("h", "i"), why("j", "k")]);
        c.why_factors.push(None);
        let a = assess(&t, &c, &phrases());
        assert_eq!(a.missing.len(), 1, "{:?}", a.missing);
        assert_eq!(a.missing[0].at, "five_whys[1]");
        assert!(a.missing[0].problem.contains("monitoring gap"));
        t.contributing_factors.clear();
        assert!(assess(&t, &c, &phrases()).missing.is_empty());
    }

    #[test]
    fn a_complete_coe_passes() {
        let t = Template::default_template();
        let a = assess(&t, &complete_content(), &phrases());
        assert_eq!(a.missing, vec![]);
        assert!(a.complete);
        assert_eq!(a.warnings, vec![]);
    }

    #[test]
    fn an_empty_coe_lists_every_missing_piece_by_key() {
        let t = Template::default_template();
        let c = CoeContent {
            action_count: Some(0),
            ..CoeContent::default()
        };
        let a = assess(&t, &c, &phrases());
        let keys: Vec<&str> = a.missing.iter().map(|f| f.at.as_str()).collect();
        assert_eq!(
            keys,
            [
                "summary",
                "impact",
                "timeline",
                "detection",
                "diagnosis",
                "mitigation",
                "prevention",
                "five_whys",
                "lessons",
                "actions"
            ]
        );
        assert!(!a.complete);
    }

    #[test]
    fn guidance_left_in_place_does_not_count() {
        let t = Template::default_template();
        let mut c = complete_content();
        let guidance = t.section("detection").expect("detection").guidance.clone();
        c.sections.insert("detection", &guidance);
        let a = assess(&t, &c, &phrases());
        assert_eq!(
            a.missing,
            vec![Finding::new(
                "detection",
                "still holds only its guidance text"
            )]
        );
        // A part of the guidance, re-cased, is still only guidance.
        c.sections
            .insert("detection", "  HOW AND WHEN was it detected?  ");
        assert_eq!(assess(&t, &c, &phrases()).missing.len(), 1);
    }

    #[test]
    fn impact_needs_a_number() {
        let t = Template::default_template();
        let mut c = complete_content();
        c.sections.insert("impact", "Many customers were unhappy.");
        let a = assess(&t, &c, &phrases());
        assert_eq!(a.missing.len(), 1);
        assert_eq!(a.missing[0].at, "impact");
        assert!(a.missing[0].problem.contains("number"));
    }

    #[test]
    fn five_whys_need_a_chain_of_three() {
        let t = Template::default_template();
        let mut c = complete_content();
        c.why_chains = vec![vec![why("a", "b"), why("c", "d")], vec![why("e", "f")]];
        c.why_factors = vec![Some("change".into()), Some("data".into())];
        let a = assess(&t, &c, &phrases());
        assert_eq!(
            a.missing,
            vec![Finding::new(
                "five_whys",
                "needs a chain of at least 3 whys"
            )]
        );
    }

    #[test]
    fn intentions_and_human_error_are_warnings_not_blocks() {
        let t = Template::default_template();
        let mut c = complete_content();
        c.sections
            .insert("prevention", "We will be more careful and remind the team.");
        c.why_chains
            .push(vec![why("Why was the wrong host drained?", "Human error.")]);
        c.why_factors.push(Some("runbook/process".into()));
        c.other_texts.push((
            "actions[0].title".into(),
            "Try to double-check deploys".into(),
        ));
        let a = assess(&t, &c, &phrases());
        assert!(a.complete, "warnings do not block");
        let places: Vec<&str> = a.warnings.iter().map(|w| w.at.as_str()).collect();
        assert_eq!(
            places,
            [
                "prevention",
                "prevention",
                "five_whys[1]",
                "actions[0].title",
                "actions[0].title"
            ]
        );
        assert!(a.warnings[0].problem.contains("be more careful"));
        assert!(a.warnings[2].problem.contains("human error"));
    }

    #[test]
    fn numbers_are_counted_as_runs_of_digits() {
        assert_eq!(count_numbers("no numbers"), 0);
        assert_eq!(count_numbers("12,000 orders, 3.5% and 7"), 3);
    }

    #[test]
    fn times_that_contradict_each_other_are_missing_work() {
        let at = |h: u32, m: u32| {
            chrono::NaiveDate::from_ymd_opt(2026, 12, 1)
                .and_then(|d| d.and_hms_opt(h, m, 0))
                .expect("a time")
        };
        let sound = OutageTimes {
            started: Some(at(22, 52)),
            detected: Some(at(22, 56)),
            mitigated: Some(at(23, 20)),
            resolved: Some(at(23, 40)),
            first_alert: Some(at(22, 52)),
        };
        assert!(time_findings("timeline", &sound).is_empty());
        assert!(time_findings("timeline", &OutageTimes::default()).is_empty());

        let late_start = OutageTimes {
            started: Some(at(23, 30)),
            ..sound
        };
        let found = time_findings("timeline", &late_start);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].problem.contains(
                "noticed (2026-12-01 22:56 UTC) before it started (2026-12-01 23:30 UTC)"
            ),
            "{found:?}"
        );
        assert!(
            found[2]
                .problem
                .contains("after its first alert fired at 2026-12-01 22:52 UTC"),
            "{found:?}"
        );

        let noticed_after_the_end = OutageTimes {
            detected: Some(at(23, 50)),
            ..sound
        };
        let found = time_findings("timeline", &noticed_after_the_end);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .problem
                .contains("resolved (2026-12-01 23:40 UTC) before it was noticed"),
            "{found:?}"
        );
        assert_eq!(found[0].at, "timeline");
    }
}
