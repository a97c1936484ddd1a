//! Filters (RFC 7644 section 3.4.2.2) held against a resource as JSON. The `scim_v2`
//! crate parses them; this module says whether a resource matches. Attribute names
//! match in any case; strings compare without regard to case unless the schema says
//! `caseExact` (ids, externalId, references).

use scim_v2::filter::{AttrExp, AttrPath, CompValue, CompareOp, Filter, ValFilter};
use serde_json::Value;

use super::schema::{self, ENTERPRISE};

/// Whether `resource` (a whole User or Group as served) matches `filter`.
pub fn matches(filter: &Filter, resource: &Value) -> bool {
    match filter {
        Filter::Attr(exp) => holds(exp, resource),
        Filter::ValuePath(vp) => elements(resource, &vp.attr)
            .iter()
            .any(|e| val_matches(&vp.filter, e)),
        Filter::Not(inner) => !matches(inner, resource),
        Filter::And(items) => items.as_slice().iter().all(|f| matches(f, resource)),
        Filter::Or(items) => items.as_slice().iter().any(|f| matches(f, resource)),
    }
}

/// How many comparisons `filter` makes of each resource (a value filter's count for
/// each of its elements): what bounds the work of holding it against the resources.
pub fn terms(filter: &Filter) -> usize {
    match filter {
        Filter::Attr(_) => 1,
        Filter::ValuePath(vp) => val_terms(&vp.filter),
        Filter::Not(inner) => terms(inner),
        Filter::And(items) | Filter::Or(items) => items.as_slice().iter().map(terms).sum(),
    }
}

fn val_terms(filter: &ValFilter) -> usize {
    match filter {
        ValFilter::Attr(_) => 1,
        ValFilter::Not(inner) => val_terms(inner),
        ValFilter::And(items) | ValFilter::Or(items) => {
            items.as_slice().iter().map(val_terms).sum()
        }
    }
}

/// How deeply `text` nests parentheses and brackets, read before it is parsed: the
/// parser descends once for each level, so a filter of ten thousand `(` must never
/// reach it.
pub fn depth(text: &str) -> usize {
    let (mut now, mut most, mut quoted, mut escaped) = (0usize, 0usize, false, false);
    for c in text.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '(' | '[' if !quoted => {
                now += 1;
                most = most.max(now);
            }
            ')' | ']' if !quoted => now = now.saturating_sub(1),
            _ => {}
        }
    }
    most
}

/// Whether one element of a multi-valued attribute matches a value filter
/// (`emails[type eq "work"]`).
pub fn val_matches(filter: &ValFilter, element: &Value) -> bool {
    match filter {
        ValFilter::Attr(exp) => holds(exp, element),
        ValFilter::Not(inner) => !val_matches(inner, element),
        ValFilter::And(items) => items.as_slice().iter().all(|f| val_matches(f, element)),
        ValFilter::Or(items) => items.as_slice().iter().any(|f| val_matches(f, element)),
    }
}

/// The one `attribute eq "value"` a filter demands, if it demands one of `names`
/// (alone or in an `and`): the store looks those up by index before the whole filter
/// is held against what it found. The attribute comes back as written in `names`.
pub fn demanded<'a>(filter: &Filter, names: &[&'a str]) -> Option<(&'a str, String)> {
    match filter {
        Filter::Attr(AttrExp::Comparison(path, CompareOp::Eq, CompValue::Str(v))) => {
            let written = match &path.sub_attr {
                Some(sub) => format!("{}.{sub}", path.name),
                None => path.name.clone(),
            };
            names
                .iter()
                .find(|n| n.eq_ignore_ascii_case(&written))
                .map(|n| (*n, v.clone()))
        }
        Filter::And(items) => items.as_slice().iter().find_map(|f| demanded(f, names)),
        _ => None,
    }
}

/// The value of `key` in `object`, its name matched in any case.
pub fn get<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    let map = object.as_object()?;
    map.get(key).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// Where `path` starts: the resource itself, or its enterprise extension.
fn container<'a>(resource: &'a Value, path: &AttrPath) -> Option<&'a Value> {
    match &path.uri {
        Some(uri) if uri.eq_ignore_ascii_case(ENTERPRISE) => get(resource, ENTERPRISE),
        _ => Some(resource),
    }
}

/// The elements of the attribute `path` names (one for a single-valued one).
fn elements<'a>(resource: &'a Value, path: &AttrPath) -> Vec<&'a Value> {
    match container(resource, path).and_then(|c| get(c, &path.name)) {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(one) => vec![one],
    }
}

/// The simple values `path` reaches: `emails.value` gives every address; `emails`
/// alone gives each element's `value`.
fn values<'a>(resource: &'a Value, path: &AttrPath) -> Vec<&'a Value> {
    elements(resource, path)
        .into_iter()
        .filter_map(|e| match (&path.sub_attr, e) {
            (Some(sub), e) => get(e, sub),
            (None, Value::Object(_)) => get(e, "value"),
            (None, e) => Some(e),
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn case_exact(path: &AttrPath) -> bool {
    if path.name.eq_ignore_ascii_case("meta") {
        return true;
    }
    let all = [
        schema::COMMON,
        schema::USER_ATTRS,
        schema::GROUP_ATTRS,
        schema::ENTERPRISE_ATTRS,
    ];
    let Some(a) = all.iter().find_map(|attrs| schema::find(attrs, &path.name)) else {
        return false;
    };
    match &path.sub_attr {
        Some(sub) => schema::find(a.sub, sub).is_some_and(|s| s.case_exact),
        None => a.case_exact || schema::find(a.sub, "value").is_some_and(|s| s.case_exact),
    }
}

fn holds(exp: &AttrExp, resource: &Value) -> bool {
    match exp {
        // A complex attribute (`name pr`) is present when it is there at all.
        AttrExp::Present(path) if path.sub_attr.is_none() => {
            elements(resource, path).iter().any(|v| match v {
                Value::String(s) => !s.is_empty(),
                Value::Object(o) => !o.is_empty(),
                Value::Null => false,
                _ => true,
            })
        }
        AttrExp::Present(path) => values(resource, path).iter().any(|v| match v {
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            _ => true,
        }),
        AttrExp::Comparison(path, op, expected) => {
            let found = values(resource, path);
            if *op == CompareOp::Ne && matches!(expected, CompValue::Null) {
                return !found.is_empty();
            }
            if *op == CompareOp::Ne {
                return !found
                    .iter()
                    .any(|v| compare(&CompareOp::Eq, v, expected, case_exact(path)));
            }
            if matches!(expected, CompValue::Null) {
                return *op == CompareOp::Eq && found.is_empty();
            }
            found
                .iter()
                .any(|v| compare(op, v, expected, case_exact(path)))
        }
    }
}

fn compare(op: &CompareOp, actual: &Value, expected: &CompValue, exact: bool) -> bool {
    use std::cmp::Ordering;
    let ordering = match (actual, expected) {
        (Value::String(a), CompValue::Str(e)) => {
            let (a, e) = if exact {
                (a.clone(), e.clone())
            } else {
                (a.to_lowercase(), e.to_lowercase())
            };
            match op {
                CompareOp::Co => return a.contains(&e),
                CompareOp::Sw => return a.starts_with(&e),
                CompareOp::Ew => return a.ends_with(&e),
                _ => a.cmp(&e),
            }
        }
        (Value::Bool(a), CompValue::True) => return *op == CompareOp::Eq && *a,
        (Value::Bool(a), CompValue::False) => return *op == CompareOp::Eq && !*a,
        (Value::Number(a), CompValue::Number(e)) => match a.as_f64().partial_cmp(&e.as_f64()) {
            Some(o) => o,
            None => return false,
        },
        _ => return false,
    };
    match op {
        CompareOp::Eq => ordering == Ordering::Equal,
        CompareOp::Gt => ordering == Ordering::Greater,
        CompareOp::Ge => ordering != Ordering::Less,
        CompareOp::Lt => ordering == Ordering::Less,
        CompareOp::Le => ordering != Ordering::Greater,
        CompareOp::Ne | CompareOp::Co | CompareOp::Sw | CompareOp::Ew => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user() -> Value {
        json!({"id": "A1", "userName": "Chen@Example.com", "active": true,
               "emails": [{"value": "chen@example.com", "type": "work", "primary": true},
                          {"value": "chen@home.example", "type": "home"}],
               ENTERPRISE: {"manager": {"value": "B2"}}})
    }

    fn check(filter: &str) -> bool {
        matches(&filter.parse::<Filter>().expect("a filter"), &user())
    }

    #[test]
    fn filters_hold_as_rfc_7644_says() {
        assert!(
            check(r#"userName eq "chen@example.com""#),
            "userName is caseExact false"
        );
        assert!(!check(r#"id eq "a1""#), "ids are caseExact");
        assert!(check(
            r#"emails[type eq "work" and value co "example.com"]"#
        ));
        assert!(!check(r#"emails[type eq "other"]"#));
        assert!(check(r#"emails.value ew "home.example""#));
        assert!(check(&format!(r#"{ENTERPRISE}:manager.value eq "B2""#)));
        assert!(check(r#"active eq true and not (userName sw "x")"#));
        assert!(check(r#"externalId pr or userName pr"#));
        assert!(!check(r#"externalId pr"#));
        assert!(check(r#"displayName ne "Chen""#));
        assert!(check(r#"emails pr and userName ne null"#));
        assert!(!check(r#"name pr"#), "no name");
        let named = json!({"name": {"givenName": "Chen"}});
        assert!(matches(&"name pr".parse::<Filter>().unwrap(), &named));
    }

    #[test]
    fn a_filter_s_cost_is_counted_before_and_after_it_is_parsed() {
        let f: Filter = r#"userName eq "a" or (emails[type eq "work" and value co "x"] and not (active eq true))"#
            .parse()
            .unwrap();
        assert_eq!(terms(&f), 4);
        assert_eq!(depth(r#"(a eq "((((") and b[c eq "]"]"#), 1);
        assert_eq!(depth(r#"((a eq "\"(") )"#), 2);
        assert_eq!(depth(&"(".repeat(10_000)), 10_000);
    }

    #[test]
    fn a_demanded_equality_is_found_for_the_index() {
        let f: Filter = r#"USERNAME eq "x" and active eq true"#.parse().unwrap();
        assert_eq!(
            demanded(&f, &["userName", "externalId"]),
            Some(("userName", "x".to_owned()))
        );
        let f: Filter = r#"userName eq "x" or userName eq "y""#.parse().unwrap();
        assert_eq!(demanded(&f, &["userName"]), None);
    }
}
