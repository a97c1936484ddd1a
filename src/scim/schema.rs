//! The attributes coe keeps of a SCIM User and Group (RFC 7643 sections 4 and 7), as
//! data: the `/Schemas` documents are written from it, a resource written by the
//! identity provider is cleaned by it (names to their canonical case, booleans sent as
//! strings to booleans, attributes coe does not keep left out), and filters compare by
//! it (case-insensitive unless `caseExact`).

use serde_json::{json, Map, Value};

pub const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const ENTERPRISE: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Boolean,
    Complex,
    Reference,
}

/// One attribute of a schema.
#[derive(Debug)]
pub struct Attr {
    pub name: &'static str,
    pub kind: Kind,
    pub multi: bool,
    pub required: bool,
    pub mutability: &'static str,
    pub case_exact: bool,
    pub unique: bool,
    pub canonical: &'static [&'static str],
    /// An IANA time zone name: its canonical values are the time zone database's.
    pub zones: bool,
    pub sub: &'static [Attr],
    pub description: &'static str,
    /// A multi-valued attribute: the most values it may hold (a person has a handful
    /// of addresses; a group, up to `MAX_MEMBERS` members). More is refused, so that
    /// one provider request cannot make coe hold or compare without end.
    pub max: usize,
}

/// The most addresses a User may have.
pub const MAX_EMAILS: usize = 10;
/// The most members a Group may have.
pub const MAX_MEMBERS: usize = 10_000;

const fn attr(name: &'static str, kind: Kind, description: &'static str) -> Attr {
    Attr {
        name,
        kind,
        multi: false,
        required: false,
        mutability: "readWrite",
        case_exact: false,
        unique: false,
        canonical: &[],
        zones: false,
        sub: &[],
        description,
        max: 1,
    }
}

const NAME_SUB: &[Attr] = &[
    attr("formatted", Kind::String, "The full name, as it is shown."),
    attr("familyName", Kind::String, "The family name."),
    attr("givenName", Kind::String, "The given name."),
];

const EMAIL_SUB: &[Attr] = &[
    Attr {
        required: true,
        ..attr(
            "value",
            Kind::String,
            "The address. The primary one (else the work one, else the first) is the person's address in coe.",
        )
    },
    Attr {
        canonical: &["work", "home", "other"],
        ..attr("type", Kind::String, "work, home or other.")
    },
    attr("primary", Kind::Boolean, "The person's address in coe."),
];

pub const USER_ATTRS: &[Attr] = &[
    Attr {
        required: true,
        unique: true,
        ..attr(
            "userName",
            Kind::String,
            "The provider's unique name for the person (often the address).",
        )
    },
    Attr {
        sub: NAME_SUB,
        ..attr("name", Kind::Complex, "The person's name.")
    },
    attr(
        "displayName",
        Kind::String,
        "The name shown in coe (else name.formatted, else given and family names).",
    ),
    Attr {
        multi: true,
        required: true,
        max: MAX_EMAILS,
        sub: EMAIL_SUB,
        ..attr("emails", Kind::Complex, "The person's email addresses.")
    },
    attr(
        "active",
        Kind::Boolean,
        "false: the person has left; their open work passes to their manager.",
    ),
    Attr {
        zones: true,
        ..attr(
            "timezone",
            Kind::String,
            "An IANA time zone name; reminders are sent in it.",
        )
    },
];

const MANAGER_SUB: &[Attr] = &[
    Attr {
        case_exact: true,
        ..attr("value", Kind::String, "The id of the manager's User.")
    },
    Attr {
        case_exact: true,
        ..attr("$ref", Kind::Reference, "The URI of the manager's User.")
    },
];

pub const ENTERPRISE_ATTRS: &[Attr] = &[Attr {
    sub: MANAGER_SUB,
    ..attr(
        "manager",
        Kind::Complex,
        "The person's manager: escalations go to them, and a leaver's work passes to them.",
    )
}];

const MEMBER_SUB: &[Attr] = &[
    Attr {
        mutability: "immutable",
        case_exact: true,
        ..attr("value", Kind::String, "The id of the member's User.")
    },
    Attr {
        mutability: "immutable",
        case_exact: true,
        ..attr("$ref", Kind::Reference, "The URI of the member's User.")
    },
    Attr {
        mutability: "immutable",
        canonical: &["User"],
        ..attr(
            "type",
            Kind::String,
            "User (groups of groups are not kept).",
        )
    },
    attr("display", Kind::String, "The member's name."),
];

pub const GROUP_ATTRS: &[Attr] = &[
    Attr {
        required: true,
        ..attr(
            "displayName",
            Kind::String,
            "The group's name; scim.team_groups says which groups are teams.",
        )
    },
    Attr {
        multi: true,
        max: MAX_MEMBERS,
        sub: MEMBER_SUB,
        ..attr("members", Kind::Complex, "The group's members.")
    },
];

/// The attributes of the schema `urn`, if coe keeps it.
pub fn attrs_of(urn: &str) -> Option<&'static [Attr]> {
    match urn {
        u if u.eq_ignore_ascii_case(USER) => Some(USER_ATTRS),
        u if u.eq_ignore_ascii_case(GROUP) => Some(GROUP_ATTRS),
        u if u.eq_ignore_ascii_case(ENTERPRISE) => Some(ENTERPRISE_ATTRS),
        _ => None,
    }
}

/// The attribute called `name` (in any case) among `attrs`.
pub fn find<'a>(attrs: &'a [Attr], name: &str) -> Option<&'a Attr> {
    attrs.iter().find(|a| a.name.eq_ignore_ascii_case(name))
}

/// The attributes every resource has besides its schema's (RFC 7643 section 3.1).
pub const COMMON: &[Attr] = &[
    Attr {
        case_exact: true,
        mutability: "readOnly",
        ..attr("id", Kind::String, "")
    },
    Attr {
        case_exact: true,
        ..attr("externalId", Kind::String, "")
    },
];

/// `value` cleaned by `attrs`: names in their canonical case, booleans sent as strings
/// ("True", as Entra ID sends them) made booleans, a single value given for a
/// multi-valued attribute made a list, attributes coe does not keep left out.
/// A value of the wrong type is a problem naming the attribute.
pub fn clean(attrs: &[Attr], value: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (key, v) in value {
        let Some(a) = find(attrs, key) else { continue };
        if v.is_null() {
            continue;
        }
        let cleaned = if a.multi {
            let items = match v {
                Value::Array(items) => items.as_slice(),
                one => std::slice::from_ref(one),
            };
            if items.len() > a.max {
                return Err(format!(
                    "{} may hold at most {} values (got {})",
                    a.name,
                    a.max,
                    items.len()
                ));
            }
            let mut list = Vec::with_capacity(items.len());
            for item in items {
                list.push(clean_one(a, item)?);
            }
            Value::Array(list)
        } else {
            clean_one(a, v)?
        };
        out.insert(a.name.to_owned(), cleaned);
    }
    Ok(out)
}

fn clean_one(a: &Attr, v: &Value) -> Result<Value, String> {
    match (a.kind, v) {
        (Kind::Complex, Value::Object(m)) => Ok(Value::Object(clean(a.sub, m)?)),
        (Kind::Boolean, Value::Bool(_)) => Ok(v.clone()),
        (Kind::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(json!(true)),
        (Kind::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(json!(false)),
        (Kind::String, Value::String(s)) if a.zones && s.parse::<chrono_tz::Tz>().is_err() => {
            Err(format!(
                "{} must be an IANA time zone name such as Europe/Berlin (got {s:?})",
                a.name
            ))
        }
        (Kind::String | Kind::Reference, Value::String(_)) => Ok(v.clone()),
        _ => Err(format!(
            "{} must be {}",
            a.name,
            match a.kind {
                Kind::Complex => "an object",
                Kind::Boolean => "true or false",
                Kind::String | Kind::Reference => "a string",
            }
        )),
    }
}

fn describe(a: &Attr) -> Value {
    let mut d = json!({
        "name": a.name,
        "type": match a.kind {
            Kind::String => "string",
            Kind::Boolean => "boolean",
            Kind::Complex => "complex",
            Kind::Reference => "reference",
        },
        "multiValued": a.multi,
        "description": a.description,
        "required": a.required,
        "caseExact": a.case_exact,
        "mutability": a.mutability,
        "returned": "default",
        "uniqueness": if a.unique { "server" } else { "none" },
    });
    if a.kind == Kind::Reference {
        d["referenceTypes"] = json!(["User"]);
    }
    if !a.canonical.is_empty() {
        d["canonicalValues"] = json!(a.canonical);
    }
    if a.zones {
        let zones: Vec<&str> = chrono_tz::TZ_VARIANTS.iter().map(|z| z.name()).collect();
        d["canonicalValues"] = json!(zones);
    }
    if !a.sub.is_empty() {
        d["subAttributes"] = Value::Array(a.sub.iter().map(describe).collect());
    }
    d
}

/// The `/Schemas` resources: User, the enterprise extension, Group.
pub fn schemas(base: &str) -> Vec<Value> {
    [
        (USER, "User", "A person.", USER_ATTRS),
        (
            ENTERPRISE,
            "EnterpriseUser",
            "Who manages the person.",
            ENTERPRISE_ATTRS,
        ),
        (GROUP, "Group", "A group; some are teams.", GROUP_ATTRS),
    ]
    .into_iter()
    .map(|(id, name, description, attrs)| {
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
            "id": id,
            "name": name,
            "description": description,
            "attributes": attrs.iter().map(describe).collect::<Vec<_>>(),
            "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{id}")},
        })
    })
    .collect()
}

/// The `/ResourceTypes` resources.
pub fn resource_types(base: &str) -> Vec<Value> {
    vec![
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "User", "name": "User", "endpoint": "/Users",
            "description": "People", "schema": USER,
            "schemaExtensions": [{"schema": ENTERPRISE, "required": false}],
            "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/User")},
        }),
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "Group", "name": "Group", "endpoint": "/Groups",
            "description": "Groups; those scim.team_groups names are teams", "schema": GROUP,
            "schemaExtensions": [],
            "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/Group")},
        }),
    ]
}

/// The `/ServiceProviderConfig` resource.
/// (No `documentationUri`: coe does not serve its documentation, and RFC 7643
/// section 5 makes it optional; an address that answers 404 is worse than none.)
pub fn service_provider_config(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": crate::scim::MAX_COUNT},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": false},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "A coe API token with the scim role (coe token create --role scim).",
            "primary": true,
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": format!("{base}/ServiceProviderConfig")},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_takes_entra_spellings_and_leaves_out_the_unknown() {
        let sent = json!({"USERNAME": "a@example.com", "Active": "False", "locale": "en",
                          "emails": {"Value": "a@example.com", "Primary": "true"}});
        let cleaned = clean(USER_ATTRS, sent.as_object().unwrap()).unwrap();
        assert_eq!(
            Value::Object(cleaned),
            json!({"userName": "a@example.com", "active": false,
                   "emails": [{"value": "a@example.com", "primary": true}]})
        );
        let wrong = json!({"active": 3});
        assert_eq!(
            clean(USER_ATTRS, wrong.as_object().unwrap()).unwrap_err(),
            "active must be true or false"
        );
    }
}
