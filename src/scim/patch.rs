//! PATCH (RFC 7644 section 3.5.2) applied to a resource as JSON, as Okta and Entra ID
//! send it: operations with a path (`name.givenName`, `emails[type eq "work"].value`,
//! the enterprise extension's `…:User:manager`), operations without one whose value
//! names the attributes (Okta's `{"op": "replace", "value": {"active": false}}`), and
//! Entra's removal of members by value. The `scim_v2` crate parses the body; what comes
//! out is cleaned by the schema afterwards (`super::clean_resource`).

use scim_v2::filter::{AttrExp, AttrPath, CompValue, CompareOp, PatchPath, ValFilter};
use scim_v2::models::others::{OperationTarget, PatchOperation};
use std::collections::HashSet;

use serde_json::{Map, Value};

use super::filter::val_matches;
use super::schema::{self, ENTERPRISE};
use super::ScimError;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Add,
    Replace,
}

/// Applies `ops` in order to `resource` (its core attributes at the top, the
/// enterprise extension under its URN).
///
/// Bounded: at most `MAX_OPERATIONS` operations, and no list may grow past
/// `MAX_VALUES` on the way (the schema's own caps are checked when the result is
/// cleaned), so that the work is at most operations × values.
pub fn apply(resource: &mut Map<String, Value>, ops: &[PatchOperation]) -> Result<(), ScimError> {
    if ops.len() > MAX_OPERATIONS {
        return Err(ScimError::bad(
            "invalidValue",
            format!(
                "Operations: at most {MAX_OPERATIONS} operations in one PATCH (got {})",
                ops.len()
            ),
        ));
    }
    for op in ops {
        match op {
            PatchOperation::Add(target) => with_target(resource, target, Mode::Add)?,
            PatchOperation::Replace(target) => with_target(resource, target, Mode::Replace)?,
            PatchOperation::Remove { path, value } => remove(resource, path, value.as_ref())?,
        }
        if let Some((name, n)) = longest_list(resource).filter(|(_, n)| *n > MAX_VALUES) {
            return Err(ScimError::bad(
                "invalidValue",
                format!("{name} may hold at most {MAX_VALUES} values (the PATCH made {n})"),
            ));
        }
    }
    Ok(())
}

/// The most operations one PATCH may carry (Entra ID and Okta send a few, with many
/// values each).
pub const MAX_OPERATIONS: usize = 1_000;

/// The longest list any attribute may reach while a PATCH is applied: the largest of
/// the schema's caps (`schema::MAX_MEMBERS`).
pub const MAX_VALUES: usize = schema::MAX_MEMBERS;

/// The attribute holding the longest list, at the top or in the extension.
fn longest_list(resource: &Map<String, Value>) -> Option<(String, usize)> {
    let ext = resource
        .iter()
        .filter(|(k, _)| is_urn(k, ENTERPRISE))
        .filter_map(|(_, v)| v.as_object())
        .flat_map(|m| m.iter());
    resource
        .iter()
        .chain(ext)
        .filter_map(|(k, v)| v.as_array().map(|a| (k.clone(), a.len())))
        .max_by_key(|(_, n)| *n)
}

/// What tells one value of a multi-valued attribute from another: its `value` (a
/// member's id, an address) when it has one, else all of it.
fn identity(v: &Value) -> String {
    canonical(v.get("value").unwrap_or(v))
}

/// `v` as text with its objects' keys in order: equal values give equal text,
/// whatever order a provider wrote the keys in.
fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn with_target(
    resource: &mut Map<String, Value>,
    target: &OperationTarget,
    mode: Mode,
) -> Result<(), ScimError> {
    match target {
        OperationTarget::WithPath { path, value } => {
            let value = value.clone().ok_or_else(|| {
                ScimError::bad(
                    "invalidValue",
                    format!("the operation on {path} has no value"),
                )
            })?;
            set(resource, path, value, mode)
        }
        OperationTarget::WithoutPath { value } => {
            for (key, v) in value {
                if is_urn(key, ENTERPRISE)
                    || is_urn(key, schema::USER)
                    || is_urn(key, schema::GROUP)
                {
                    let Value::Object(inner) = v else {
                        return Err(ScimError::bad(
                            "invalidValue",
                            format!("{key} must be an object"),
                        ));
                    };
                    for (k, v) in inner {
                        let path = parse(&format!("{key}:{k}"))?;
                        set(resource, &path, v.clone(), mode)?;
                    }
                } else {
                    set(resource, &parse(key)?, v.clone(), mode)?;
                }
            }
            Ok(())
        }
    }
}

fn is_urn(key: &str, urn: &str) -> bool {
    key.eq_ignore_ascii_case(urn)
}

fn parse(path: &str) -> Result<PatchPath, ScimError> {
    path.parse()
        .map_err(|e| ScimError::bad("invalidPath", format!("{path:?} is not a path: {e}")))
}

/// The object `path` starts in, made if it is missing; `None` for a path naming the
/// whole extension (`urn:…:enterprise:2.0:User`), which `whole_extension` handles.
fn container<'a>(
    resource: &'a mut Map<String, Value>,
    path: &AttrPath,
) -> &'a mut Map<String, Value> {
    match &path.uri {
        Some(uri) if uri.eq_ignore_ascii_case(ENTERPRISE) => {
            let ext = resource
                .entry(ENTERPRISE.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !ext.is_object() {
                *ext = Value::Object(Map::new());
            }
            ext.as_object_mut().expect("made an object above")
        }
        _ => resource,
    }
}

/// The key under which `name` is kept in `map`: the one there in any case, else the
/// schema's spelling, else `name` as given.
fn key_of(map: &Map<String, Value>, name: &str) -> String {
    if let Some(k) = map.keys().find(|k| k.eq_ignore_ascii_case(name)) {
        return k.clone();
    }
    [
        schema::USER_ATTRS,
        schema::GROUP_ATTRS,
        schema::ENTERPRISE_ATTRS,
        schema::COMMON,
    ]
    .iter()
    .find_map(|attrs| schema::find(attrs, name))
    .map(|a| a.name.to_owned())
    .unwrap_or_else(|| name.to_owned())
}

fn is_multi(name: &str) -> bool {
    [schema::USER_ATTRS, schema::GROUP_ATTRS]
        .iter()
        .find_map(|attrs| schema::find(attrs, name))
        .is_some_and(|a| a.multi)
}

/// `path` is the bare extension URN (parsed as a URI and a last name).
fn whole_extension(path: &AttrPath) -> bool {
    path.sub_attr.is_none()
        && path
            .uri
            .as_ref()
            .is_some_and(|u| is_urn(&format!("{u}:{}", path.name), ENTERPRISE))
}

fn set(
    resource: &mut Map<String, Value>,
    path: &PatchPath,
    value: Value,
    mode: Mode,
) -> Result<(), ScimError> {
    match path {
        PatchPath::Attr(p) if whole_extension(p) => {
            let Value::Object(inner) = value else {
                return Err(ScimError::bad(
                    "invalidValue",
                    format!("{p} must be an object"),
                ));
            };
            for (k, v) in inner {
                set(resource, &parse(&format!("{ENTERPRISE}:{k}"))?, v, mode)?;
            }
            Ok(())
        }
        PatchPath::Attr(p) => {
            let map = container(resource, p);
            let key = key_of(map, &p.name);
            match &p.sub_attr {
                None => {
                    let multi = is_multi(&key) || map.get(&key).is_some_and(Value::is_array);
                    let merged = match (map.remove(&key), value) {
                        (Some(Value::Array(mut items)), v) if multi && mode == Mode::Add => {
                            // Linear: each value is looked up among those held by its
                            // canonical text, not compared with every one of them.
                            let mut held: HashSet<String> = items.iter().map(identity).collect();
                            for item in as_list(v) {
                                if held.insert(identity(&item)) {
                                    items.push(item);
                                }
                            }
                            Value::Array(items)
                        }
                        (_, v) if multi => Value::Array(as_list(v)),
                        (Some(Value::Object(mut old)), Value::Object(new)) => {
                            for (k, v) in new {
                                let k = key_of(&old, &k);
                                old.insert(k, v);
                            }
                            Value::Object(old)
                        }
                        (_, v) => v,
                    };
                    map.insert(key, merged);
                }
                Some(sub) => {
                    let slot = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
                    match slot {
                        Value::Array(items) if items.is_empty() => {
                            let mut one = Map::new();
                            one.insert(sub.clone(), value);
                            items.push(Value::Object(one));
                        }
                        Value::Array(items) => {
                            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                                let k = key_of(item, sub);
                                item.insert(k, value.clone());
                            }
                        }
                        Value::Object(obj) => {
                            let k = key_of(obj, sub);
                            obj.insert(k, value);
                        }
                        other => {
                            let mut one = Map::new();
                            one.insert(sub.clone(), value);
                            *other = Value::Object(one);
                        }
                    }
                }
            }
            Ok(())
        }
        PatchPath::Value(vp) => {
            let map = container(resource, &vp.attr);
            let key = key_of(map, &vp.attr.name);
            let slot = map.entry(key).or_insert_with(|| Value::Array(Vec::new()));
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            let items = slot.as_array_mut().expect("made an array above");
            let mut matched = false;
            for item in items.iter_mut().filter(|i| val_matches(&vp.filter, i)) {
                matched = true;
                let Some(obj) = item.as_object_mut() else {
                    continue;
                };
                match (&vp.sub_attr, &value) {
                    (Some(sub), v) => {
                        let k = key_of(obj, sub);
                        obj.insert(k, v.clone());
                    }
                    (None, Value::Object(new)) if mode == Mode::Add => {
                        for (k, v) in new {
                            let k = key_of(obj, k);
                            obj.insert(k, v.clone());
                        }
                    }
                    (None, v) => *item = v.clone(),
                }
            }
            if !matched {
                // Entra ID adds `emails[type eq "work"].value` to a person without a
                // work address: the element is made from what the filter asks for.
                let mut made = Map::new();
                demanded_fields(&vp.filter, &mut made);
                match (&vp.sub_attr, value) {
                    (Some(sub), v) => {
                        made.insert(sub.clone(), v);
                    }
                    (None, Value::Object(new)) => made.extend(new),
                    (None, _) => {
                        return Err(ScimError::bad(
                            "noTarget",
                            format!("no element of {} matches {}", vp.attr, vp.filter),
                        ))
                    }
                }
                items.push(Value::Object(made));
            }
            Ok(())
        }
    }
}

/// The `sub eq value` pairs of a value filter, for an element it is to make.
fn demanded_fields(filter: &ValFilter, into: &mut Map<String, Value>) {
    match filter {
        ValFilter::Attr(AttrExp::Comparison(p, CompareOp::Eq, v)) => {
            let v = match v {
                CompValue::Str(s) => Value::String(s.clone()),
                CompValue::True => Value::Bool(true),
                CompValue::False => Value::Bool(false),
                CompValue::Number(n) => Value::Number(n.clone()),
                CompValue::Null => return,
            };
            into.insert(p.name.clone(), v);
        }
        ValFilter::And(items) => items
            .as_slice()
            .iter()
            .for_each(|f| demanded_fields(f, into)),
        _ => {}
    }
}

fn as_list(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        one => vec![one],
    }
}

fn remove(
    resource: &mut Map<String, Value>,
    path: &PatchPath,
    value: Option<&Value>,
) -> Result<(), ScimError> {
    match path {
        PatchPath::Attr(p) if whole_extension(p) => {
            resource.retain(|k, _| !is_urn(k, ENTERPRISE));
        }
        PatchPath::Attr(p) => {
            let map = container(resource, p);
            let key = key_of(map, &p.name);
            match (&p.sub_attr, map.get_mut(&key), value) {
                // Entra ID: `{"op": "Remove", "path": "members", "value": [{"value": id}]}`.
                (None, Some(Value::Array(items)), Some(which)) => {
                    let gone: HashSet<String> = as_slice(which)
                        .iter()
                        .map(|w| canonical(w.get("value").unwrap_or(w)))
                        .collect();
                    items.retain(|i| !gone.contains(&canonical(i.get("value").unwrap_or(i))));
                }
                (None, _, _) => {
                    map.remove(&key);
                }
                (Some(sub), Some(Value::Object(obj)), _) => {
                    let k = key_of(obj, sub);
                    obj.remove(&k);
                }
                (Some(sub), Some(Value::Array(items)), _) => {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        let k = key_of(item, sub);
                        item.remove(&k);
                    }
                }
                (Some(_), _, _) => {}
            }
        }
        PatchPath::Value(vp) => {
            let map = container(resource, &vp.attr);
            let key = key_of(map, &vp.attr.name);
            if let Some(Value::Array(items)) = map.get_mut(&key) {
                match &vp.sub_attr {
                    None => items.retain(|i| !val_matches(&vp.filter, i)),
                    Some(sub) => {
                        for item in items.iter_mut().filter(|i| val_matches(&vp.filter, i)) {
                            if let Some(obj) = item.as_object_mut() {
                                let k = key_of(obj, sub);
                                obj.remove(&k);
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn as_slice(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        one => std::slice::from_ref(one),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scim_v2::models::others::PatchOp;
    use serde_json::json;

    fn patched(start: Value, body: Value) -> Value {
        let op: PatchOp = serde_json::from_value(body).expect("a PATCH body");
        let mut doc = start.as_object().unwrap().clone();
        apply(&mut doc, &op.operations).expect("applied");
        Value::Object(doc)
    }

    #[test]
    fn okta_deactivation_without_a_path() {
        let out = patched(
            json!({"userName": "a", "active": true}),
            json!({"schemas": [super::super::PATCH_OP],
                   "Operations": [{"op": "replace", "value": {"active": false}}]}),
        );
        assert_eq!(out["active"], json!(false));
    }

    #[test]
    fn entra_work_email_manager_and_members() {
        let out = patched(
            json!({"userName": "a", "emails": [{"value": "old@example.com", "type": "home"}]}),
            json!({"schemas": [super::super::PATCH_OP], "Operations": [
                {"op": "Add", "path": "emails[type eq \"work\"].value", "value": "new@example.com"},
                {"op": "Replace", "path": "name.givenName", "value": "Chen"},
                {"op": "Add", "path": format!("{ENTERPRISE}:manager"), "value": "M1"},
                {"op": "Replace", "path": "displayName", "value": "Chen Li"}]}),
        );
        assert_eq!(
            out["emails"],
            json!([{"value": "old@example.com", "type": "home"},
                   {"type": "work", "value": "new@example.com"}])
        );
        assert_eq!(out["name"]["givenName"], "Chen");
        assert_eq!(out[ENTERPRISE]["manager"], "M1");

        let group = patched(
            json!({"displayName": "team-a", "members": [{"value": "1"}, {"value": "2"}]}),
            json!({"schemas": [super::super::PATCH_OP], "Operations": [
                {"op": "Add", "path": "members", "value": [{"value": "3"}, {"value": "1"}]},
                {"op": "Remove", "path": "members", "value": [{"value": "2"}]},
                {"op": "remove", "path": "members[value eq \"3\"]"}]}),
        );
        assert_eq!(group["members"], json!([{"value": "1"}]));
    }
}
