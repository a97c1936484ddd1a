//! What a page's query string holds: filters typed into a form (empty means none) and
//! words of a fixed set (a state, a severity), each refused with a page that names the
//! set when it is not one of them.

use serde::Deserialize;
use serde_json::json;

use super::error::PageError;

/// The value, trimmed, when it is not empty.
pub fn filled(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// A word of a fixed set (`T`'s names), or a page that names the set: `field` is what
/// the word is of, `words` the set as a person reads it.
pub fn word<T: for<'de> Deserialize<'de>>(
    value: &Option<String>,
    field: &str,
    words: &str,
) -> Result<Option<T>, PageError> {
    filled(value)
        .map(|v| {
            serde_json::from_value(json!(v))
                .map_err(|_| PageError::BadRequest(format!("no {field} {v:?}: {words}")))
        })
        .transpose()
}

/// Where a list with `total` items, shown `page` at a time from `offset`, goes back
/// and on: the URLs `url(offset)` makes, when there is somewhere to go.
pub fn pages(
    offset: i64,
    page: i64,
    total: i64,
    url: impl Fn(i64) -> String,
) -> (Option<String>, Option<String>) {
    let previous = (offset > 0).then(|| url((offset - page).max(0)));
    let next = (offset + page < total).then(|| url(offset + page));
    (previous, next)
}

/// The filters a list of COEs and the search share: a state, a service, a severity
/// (each empty for none).
#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
pub struct CoeFilters {
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub service: Option<String>,
    #[serde(default)]
    pub severity: Option<String>,
}

impl CoeFilters {
    /// The filter these ask for, or a page naming a word outside its set.
    pub fn filter(&self) -> Result<crate::services::coe::coes::CoeFilter, PageError> {
        use crate::domain::{coe::CoeState, Severity};
        Ok(crate::services::coe::coes::CoeFilter {
            state: word::<CoeState>(
                &self.state,
                "COE state",
                "draft, in_review, approved or closed",
            )?,
            service: filled(&self.service),
            severity: word::<Severity>(&self.severity, "severity", "sev1 to sev5")?,
            ..Default::default()
        })
    }
}

/// `pages` for a list at `path` whose query is `q`: the same query with another
/// offset (`with_offset`), as the page's address.
pub fn pages_at<Q: serde::Serialize + Clone>(
    path: &str,
    q: &Q,
    with_offset: impl Fn(&mut Q, i64),
    (offset, page, total): (i64, i64, i64),
) -> (Option<String>, Option<String>) {
    pages(offset, page, total, |offset| {
        let mut next = q.clone();
        with_offset(&mut next, offset);
        format!(
            "{path}?{}",
            serde_urlencoded::to_string(&next).unwrap_or_default()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Severity;

    /// A query with the shared filters flattened in still reads its numbers (a
    /// flattened struct reads every field of its query as text first).
    #[test]
    fn filters_and_an_offset_are_read_from_one_query() {
        #[derive(Deserialize)]
        struct Q {
            #[serde(flatten)]
            filters: CoeFilters,
            #[serde(default)]
            offset: Option<i64>,
        }
        let q: Q = serde_urlencoded::from_str("state=draft&offset=20&severity=sev2").expect("read");
        assert_eq!(q.offset, Some(20));
        assert_eq!(q.filters.state.as_deref(), Some("draft"));
        assert_eq!(q.filters.severity.as_deref(), Some("sev2"));
    }

    #[test]
    fn empty_is_none_and_a_word_outside_the_set_names_the_set() {
        assert_eq!(filled(&Some("  ".into())), None);
        assert_eq!(filled(&Some(" a ".into())).as_deref(), Some("a"));
        assert_eq!(
            word::<Severity>(&Some("sev2".into()), "severity", "sev1 to sev5").unwrap(),
            Some(Severity::Sev2)
        );
        let refused = word::<Severity>(&Some("sev9".into()), "severity", "sev1 to sev5");
        assert!(
            matches!(refused, Err(PageError::BadRequest(ref m)) if m == "no severity \"sev9\": sev1 to sev5"),
            "{refused:?}"
        );
        let (previous, next) = pages(0, 20, 45, |o| format!("?offset={o}"));
        assert_eq!((previous, next.as_deref()), (None, Some("?offset=20")));
        let (previous, next) = pages(40, 20, 45, |o| format!("?offset={o}"));
        assert_eq!((previous.as_deref(), next), (Some("?offset=20"), None));
    }
}
