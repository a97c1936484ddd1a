//! SCIM 2.0 (RFC 7643, RFC 7644) as coe speaks it, free of storage: the schemas coe
//! publishes and cleans resources by (`schema`), filters (`filter`), PATCH (`patch`),
//! the `attributes`/`excludedAttributes` projection, list paging, and errors in
//! SCIM's own shape. What a provisioned person means to coe is
//! `services::accounts::scim`; the routes are `http::scim`.

use serde_json::{json, Map, Value};

pub mod filter;
pub mod patch;
pub mod schema;

pub use schema::{ENTERPRISE, GROUP, USER};

pub const LIST_RESPONSE: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const ERROR: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
pub const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

/// The most resources one page lists (`count` above it is taken as this).
pub const MAX_COUNT: usize = 500;

/// A refusal in SCIM's shape (RFC 7644 section 3.12): the status, a `scimType` for a
/// 400 or 409, and a detail that names the attribute and the problem.
#[derive(Debug, Clone, PartialEq)]
pub struct ScimError {
    pub status: u16,
    pub scim_type: Option<&'static str>,
    pub detail: String,
}

impl ScimError {
    pub fn bad(scim_type: &'static str, detail: impl Into<String>) -> Self {
        ScimError {
            status: 400,
            scim_type: Some(scim_type),
            detail: detail.into(),
        }
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        ScimError {
            status: 404,
            scim_type: None,
            detail: detail.into(),
        }
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        ScimError {
            status: 409,
            scim_type: Some("uniqueness"),
            detail: detail.into(),
        }
    }

    pub fn status(status: u16, detail: impl Into<String>) -> Self {
        ScimError {
            status,
            scim_type: None,
            detail: detail.into(),
        }
    }

    pub fn body(&self) -> Value {
        let mut body = json!({"schemas": [ERROR], "status": self.status.to_string(),
                              "detail": self.detail});
        if let Some(t) = self.scim_type {
            body["scimType"] = json!(t);
        }
        body
    }
}

/// The kinds of resource coe provisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    User,
    Group,
}

impl ResourceKind {
    pub fn urn(self) -> &'static str {
        match self {
            ResourceKind::User => USER,
            ResourceKind::Group => GROUP,
        }
    }

    fn attrs(self) -> &'static [schema::Attr] {
        match self {
            ResourceKind::User => schema::USER_ATTRS,
            ResourceKind::Group => schema::GROUP_ATTRS,
        }
    }
}

/// A resource as the provider wrote it, cleaned by the schema: core attributes at the
/// top, `externalId`, and (for a User) the enterprise extension under its URN.
/// `id`, `meta` and `schemas` are coe's and are dropped here.
pub fn clean_resource(
    kind: ResourceKind,
    written: &Map<String, Value>,
) -> Result<Map<String, Value>, ScimError> {
    let invalid = |problem: String| ScimError::bad("invalidValue", problem);
    let mut out = schema::clean(kind.attrs(), written).map_err(invalid)?;
    if let Some(v) = filter::get(&Value::Object(written.clone()), "externalId") {
        match v {
            Value::String(s) => {
                out.insert("externalId".into(), json!(s));
            }
            Value::Null => {}
            _ => return Err(invalid("externalId must be a string".into())),
        }
    }
    if kind == ResourceKind::User {
        if let Some((_, ext)) = written
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(ENTERPRISE))
        {
            let Value::Object(ext) = ext else {
                return Err(invalid(format!("{ENTERPRISE} must be an object")));
            };
            // A manager sent as its id alone (Entra ID's PATCH) is kept as `{value}`.
            let mut ext = ext.clone();
            if let Some((k, Value::String(id))) = ext
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("manager"))
                .map(|(k, v)| (k.clone(), v.clone()))
            {
                ext.insert(k, json!({ "value": id }));
            }
            let ext = schema::clean(schema::ENTERPRISE_ATTRS, &ext).map_err(invalid)?;
            if !ext.is_empty() {
                out.insert(ENTERPRISE.into(), Value::Object(ext));
            }
        }
    }
    let attrs = kind.attrs();
    // `emails` may be missing when `userName` is the address (`services::accounts::scim` says).
    for a in attrs.iter().filter(|a| a.required && a.name != "emails") {
        let missing = match out.get(a.name) {
            None => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(Value::Array(items)) => items.is_empty(),
            Some(_) => false,
        };
        if missing {
            return Err(invalid(format!("{} is required", a.name)));
        }
    }
    Ok(out)
}

/// What one list or search asks for (RFC 7644 sections 3.4.2 and 3.4.3).
#[derive(Debug, Default)]
pub struct ListQuery {
    pub filter: Option<scim_v2::filter::Filter>,
    /// 1-based.
    pub start_index: usize,
    pub count: usize,
    pub attributes: Vec<String>,
    pub excluded: Vec<String>,
}

impl ListQuery {
    /// From the query string's (or the search body's) parameters.
    pub fn parse(
        filter: Option<&str>,
        start_index: Option<&str>,
        count: Option<&str>,
        attributes: Option<&str>,
        excluded: Option<&str>,
    ) -> Result<ListQuery, ScimError> {
        let filter = match filter.map(str::trim).filter(|f| !f.is_empty()) {
            None => None,
            Some(f) => Some(parse_filter(f)?),
        };
        let number = |name: &str, v: Option<&str>, default: usize| match v {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<i64>()
                .map(|n| n.max(0) as usize)
                .map_err(|_| {
                    ScimError::bad(
                        "invalidValue",
                        format!("{name} must be a number (got {v:?})"),
                    )
                }),
        };
        let names = |v: Option<&str>| -> Vec<String> {
            v.map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
        };
        Ok(ListQuery {
            filter,
            start_index: number("startIndex", start_index, 1)?.max(1),
            count: number("count", count, 100)?.min(MAX_COUNT),
            attributes: names(attributes),
            excluded: names(excluded),
        })
    }
}

/// The longest filter taken, in bytes: identity providers send one or two
/// comparisons (`userName eq "…"`, `externalId eq "…"`).
pub const MAX_FILTER_BYTES: usize = 4_096;
/// The most comparisons one filter may make of each resource.
pub const MAX_FILTER_TERMS: usize = 32;
/// The deepest a filter may nest parentheses and brackets.
pub const MAX_FILTER_DEPTH: usize = 8;

/// A filter, refused before it is parsed when it is too long or nests too deep, and
/// after when it compares too much: what one filter may cost is bounded.
fn parse_filter(f: &str) -> Result<scim_v2::filter::Filter, ScimError> {
    let too = |problem: String| ScimError::bad("invalidFilter", problem);
    if f.len() > MAX_FILTER_BYTES {
        return Err(too(format!(
            "the filter is {} bytes long; at most {MAX_FILTER_BYTES} are taken",
            f.len()
        )));
    }
    let depth = filter::depth(f);
    if depth > MAX_FILTER_DEPTH {
        return Err(too(format!(
            "the filter nests {depth} levels of parentheses or brackets; at most {MAX_FILTER_DEPTH} are taken"
        )));
    }
    let parsed: scim_v2::filter::Filter = f
        .parse()
        .map_err(|e| too(format!("the filter {f:?} does not parse: {e}")))?;
    let terms = filter::terms(&parsed);
    if terms > MAX_FILTER_TERMS {
        return Err(too(format!(
            "the filter makes {terms} comparisons; at most {MAX_FILTER_TERMS} are taken \
             (filter by userName, externalId or id, and page through the rest)"
        )));
    }
    Ok(parsed)
}

/// A page of resources as a ListResponse.
pub fn list_response(total: usize, start_index: usize, page: Vec<Value>) -> Value {
    json!({"schemas": [LIST_RESPONSE], "totalResults": total, "startIndex": start_index,
           "itemsPerPage": page.len(), "Resources": page})
}

/// `resource` with only the attributes asked for (`attributes`), or without those
/// excluded (`excludedAttributes`); `id` and `schemas` always stay (RFC 7644
/// section 3.9). Names may carry a sub-attribute (`name.givenName`) or the extension's
/// URN (`urn:…:enterprise:2.0:User:manager`).
pub fn project(resource: Value, attributes: &[String], excluded: &[String]) -> Value {
    let Value::Object(map) = resource else {
        return resource;
    };
    let split = |name: &str| -> (Option<String>, String, Option<String>) {
        let (uri, rest) = match name.rfind(':') {
            Some(i) => (Some(name[..i].to_owned()), &name[i + 1..]),
            None => (None, name),
        };
        let uri = uri.filter(|u| u.eq_ignore_ascii_case(ENTERPRISE));
        match rest.split_once('.') {
            Some((a, s)) => (uri, a.to_owned(), Some(s.to_owned())),
            None => (uri, rest.to_owned(), None),
        }
    };
    let always = |k: &str| k == "id" || k == "schemas";
    if !attributes.is_empty() {
        let mut out = Map::new();
        for (k, v) in &map {
            if always(k) {
                out.insert(k.clone(), v.clone());
            }
        }
        for name in attributes {
            let (uri, attr, sub) = split(name);
            let source = match &uri {
                Some(_) => map.get(ENTERPRISE).and_then(Value::as_object),
                None => Some(&map),
            };
            let Some(source) = source else { continue };
            let Some((key, value)) = source.iter().find(|(k, _)| k.eq_ignore_ascii_case(&attr))
            else {
                continue;
            };
            let picked = match (&sub, value) {
                (Some(sub), Value::Object(o)) => {
                    match o.iter().find(|(k, _)| k.eq_ignore_ascii_case(sub)) {
                        Some((sk, sv)) => json!({ sk.clone(): sv.clone() }),
                        None => continue,
                    }
                }
                _ => value.clone(),
            };
            let target = match &uri {
                Some(_) => out
                    .entry(ENTERPRISE.to_owned())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .expect("an object"),
                None => &mut out,
            };
            match (target.get_mut(key), picked) {
                (Some(Value::Object(have)), Value::Object(more)) => have.extend(more),
                (_, picked) => {
                    target.insert(key.clone(), picked);
                }
            }
        }
        return Value::Object(out);
    }
    let mut out = map;
    for name in excluded {
        let (uri, attr, sub) = split(name);
        let target = match &uri {
            Some(_) => match out.get_mut(ENTERPRISE).and_then(Value::as_object_mut) {
                Some(ext) => ext,
                None => continue,
            },
            None => &mut out,
        };
        let Some(key) = target
            .keys()
            .find(|k| k.eq_ignore_ascii_case(&attr))
            .cloned()
        else {
            continue;
        };
        if always(&key) && uri.is_none() {
            continue;
        }
        match (&sub, target.get_mut(&key)) {
            (Some(sub), Some(Value::Object(o))) => o.retain(|k, _| !k.eq_ignore_ascii_case(sub)),
            _ => {
                target.remove(&key);
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_keeps_what_is_asked_and_always_the_id() {
        let user = json!({"schemas": [USER], "id": "1", "userName": "a", "displayName": "A",
                          "name": {"givenName": "G", "familyName": "F"},
                          ENTERPRISE: {"manager": {"value": "2"}}});
        assert_eq!(
            project(
                user.clone(),
                &["name.givenName".into(), format!("{ENTERPRISE}:manager")],
                &[]
            ),
            json!({"schemas": [USER], "id": "1", "name": {"givenName": "G"},
                   ENTERPRISE: {"manager": {"value": "2"}}})
        );
        assert_eq!(
            project(
                user,
                &[],
                &["displayName".into(), "id".into(), "name.familyName".into()]
            ),
            json!({"schemas": [USER], "id": "1", "userName": "a", "name": {"givenName": "G"},
                   ENTERPRISE: {"manager": {"value": "2"}}})
        );
    }

    #[test]
    fn a_resource_is_cleaned_and_its_required_attributes_checked() {
        let written = json!({"schemas": [USER], "id": "ignored", "userName": "a",
                             "externalId": "x1", "emails": [{"value": "a@example.com"}],
                             ENTERPRISE: {"manager": "M1", "employeeNumber": "7"}});
        let cleaned = clean_resource(ResourceKind::User, written.as_object().unwrap()).unwrap();
        assert_eq!(
            Value::Object(cleaned),
            json!({"userName": "a", "externalId": "x1", "emails": [{"value": "a@example.com"}],
                   ENTERPRISE: {"manager": {"value": "M1"}}})
        );
        let no_name = json!({"emails": [{"value": "a@example.com"}]});
        assert_eq!(
            clean_resource(ResourceKind::User, no_name.as_object().unwrap()).unwrap_err(),
            ScimError::bad("invalidValue", "userName is required")
        );
    }
}
