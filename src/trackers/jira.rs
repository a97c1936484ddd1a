//! Jira Cloud's REST API v3: issues with their description in the Atlassian Document
//! Format, statuses moved by the workflow's transitions, Basic auth with an account's
//! email and API token.

use base64::Engine;
use chrono::NaiveDate;
use serde_json::{json, Value};

use super::{query_value, segment, Answer, Client, Failure, NewTicket, Remote, Status};
use crate::config::Meaning;

fn request(client: &Client<'_>, method: &str, path: &str) -> ureq::Request {
    let t = client.tracker;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        t.user.as_deref().unwrap_or_default(),
        t.token.expose()
    ));
    client
        .agent
        .request(method, &client.url(path))
        .set("Authorization", &format!("Basic {basic}"))
}

/// A paragraph of plain text in the Atlassian Document Format.
fn paragraph(text: &str) -> Value {
    json!({"type": "paragraph", "content": [{"type": "text", "text": text}]})
}

/// A document of `paragraphs` and then `links` (a label, then the link).
fn document(paragraphs: &[String], links: &[(String, String)]) -> Value {
    let mut content: Vec<Value> = paragraphs
        .iter()
        .filter(|p| !p.trim().is_empty())
        .map(|p| paragraph(p))
        .collect();
    for (label, url) in links {
        content.push(json!({"type": "paragraph", "content": [
            {"type": "text", "text": format!("{label}: ")},
            {"type": "text", "text": url, "marks": [{"type": "link", "attrs": {"href": url}}]},
        ]}));
    }
    json!({"type": "doc", "version": 1, "content": content})
}

fn status_of(fields: &Value) -> Status {
    Status {
        name: fields["status"]["name"].as_str().unwrap_or_default().into(),
        category: fields["status"]["statusCategory"]["key"]
            .as_str()
            .unwrap_or_default()
            .into(),
        reason: fields["resolution"]["name"].as_str().map(Into::into),
    }
}

/// The page of issue `key` in Jira's own pages.
fn browse(client: &Client<'_>, key: &str) -> String {
    match segment(key) {
        Ok(key) => client.url(&format!("/browse/{key}")),
        Err(_) => client.url("/browse"),
    }
}

fn remote(client: &Client<'_>, issue: &Value) -> Remote {
    let key = issue["key"].as_str().unwrap_or_default().to_owned();
    Remote {
        url: browse(client, &key),
        id: issue["id"].as_str().unwrap_or_default().into(),
        status: status_of(&issue["fields"]),
        key,
    }
}

pub(super) fn find(client: &Client<'_>, place: &str, marker: &str) -> Answer<Option<Remote>> {
    let jql = format!("project = \"{place}\" AND labels = \"{marker}\"");
    let found = client.call(
        request(
            client,
            "GET",
            &format!(
                "/rest/api/3/search/jql?jql={}&fields=status,resolution",
                query_value(&jql)
            ),
        ),
        None,
    )?;
    Ok(found["issues"]
        .as_array()
        .and_then(|issues| issues.first())
        .map(|issue| remote(client, issue)))
}

pub(super) fn user(client: &Client<'_>, email: &str) -> Answer<Option<String>> {
    let found = client.call(
        request(
            client,
            "GET",
            &format!("/rest/api/3/user/search?query={}", query_value(email)),
        ),
        None,
    )?;
    Ok(found.as_array().and_then(|users| {
        users
            .iter()
            .filter(|u| u["accountType"].as_str().unwrap_or("atlassian") == "atlassian")
            .find_map(|u| u["accountId"].as_str().map(Into::into))
    }))
}

pub(super) fn create(
    client: &Client<'_>,
    new: &NewTicket,
    assignee: Option<&str>,
) -> Answer<Remote> {
    let priority = match new.priority.as_str() {
        "high" => "High",
        "low" => "Low",
        _ => "Medium",
    };
    let mut fields = json!({
        "project": {"key": new.place},
        "issuetype": {"name": new.issue_type},
        "summary": crate::chat::format::cut(&new.title, 255),
        "description": document(&new.paragraphs, &new.links),
        "duedate": new.due.format("%Y-%m-%d").to_string(),
        "priority": {"name": priority},
        "labels": [new.marker],
    });
    if let Some(id) = assignee {
        fields["assignee"] = json!({"accountId": id});
    }
    let made = client.call(
        request(client, "POST", "/rest/api/3/issue"),
        Some(&json!({"fields": fields})),
    )?;
    let named = made["key"].as_str().unwrap_or_default();
    let Ok(key) = client.key(named) else {
        return Err(Failure::Refused(format!(
            "Jira made an issue but named no key coe can read: {}",
            crate::chat::format::cut(&made.to_string(), 200)
        )));
    };
    // Made: its status is read after, and a failure to read it is no failure to make.
    Ok(get(client, key.as_str()).unwrap_or_else(|_| Remote {
        key: key.to_string(),
        id: made["id"].as_str().unwrap_or_default().to_owned(),
        url: browse(client, key.as_str()),
        status: Status::default(),
    }))
}

pub(super) fn get(client: &Client<'_>, key: &str) -> Answer<Remote> {
    let issue = client.call(
        request(
            client,
            "GET",
            &format!(
                "/rest/api/3/issue/{}?fields=status,resolution",
                segment(key)?
            ),
        ),
        None,
    )?;
    Ok(remote(client, &issue))
}

pub(super) fn comment(client: &Client<'_>, remote: &Remote, text: &str) -> Answer<()> {
    client.call(
        request(
            client,
            "POST",
            &format!("/rest/api/3/issue/{}/comment", segment(&remote.key)?),
        ),
        Some(&json!({"body": document(&[text.to_owned()], &[])})),
    )?;
    Ok(())
}

pub(super) fn set_due(client: &Client<'_>, remote: &Remote, due: NaiveDate) -> Answer<()> {
    client.call(
        request(
            client,
            "PUT",
            &format!("/rest/api/3/issue/{}", segment(&remote.key)?),
        ),
        Some(&json!({"fields": {"duedate": due.format("%Y-%m-%d").to_string()}})),
    )?;
    Ok(())
}

pub(super) fn assign(client: &Client<'_>, remote: &Remote, assignee: Option<&str>) -> Answer<()> {
    client.call(
        request(
            client,
            "PUT",
            &format!("/rest/api/3/issue/{}/assignee", segment(&remote.key)?),
        ),
        Some(&json!({"accountId": assignee})),
    )?;
    Ok(())
}

pub(super) fn move_to(client: &Client<'_>, remote: &Remote, to: Meaning) -> Answer<()> {
    let path = format!("/rest/api/3/issue/{}/transitions", segment(&remote.key)?);
    let offered = client.call(request(client, "GET", &path), None)?;
    let transitions = offered["transitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let category = match to {
        Meaning::Open => "new",
        Meaning::InProgress => "indeterminate",
        Meaning::Done | Meaning::WontDo => "done",
        Meaning::Ignore => return Ok(()),
    };
    let to_category = |t: &&Value| t["to"]["statusCategory"]["key"] == category;
    let named = |t: &&Value, words: &[&str]| {
        let name = format!("{} {}", t["name"], t["to"]["name"]).to_lowercase();
        words.iter().any(|w| name.contains(w))
    };
    let declining = ["won't", "wont", "declin", "reject", "cancel"];
    let chosen = match to {
        Meaning::WontDo => transitions
            .iter()
            .filter(to_category)
            .find(|t| named(t, &declining))
            .or_else(|| transitions.iter().find(to_category)),
        Meaning::Done => transitions
            .iter()
            .filter(to_category)
            .find(|t| !named(t, &declining))
            .or_else(|| transitions.iter().find(to_category)),
        _ => transitions.iter().find(to_category),
    };
    let Some(id) = chosen.and_then(|t| t["id"].as_str()) else {
        return Err(Failure::Refused(format!(
            "the workflow offers {} no transition to a status of the \"{category}\" category",
            remote.key
        )));
    };
    client.call(
        request(client, "POST", &path),
        Some(&json!({"transition": {"id": id}})),
    )?;
    Ok(())
}

pub(super) fn check(client: &Client<'_>, place: &str) -> Answer<Vec<Status>> {
    client.call(
        request(
            client,
            "GET",
            &format!("/rest/api/3/project/{}", segment(place)?),
        ),
        None,
    )?;
    let types = client.call(
        request(
            client,
            "GET",
            &format!("/rest/api/3/project/{}/statuses", segment(place)?),
        ),
        None,
    )?;
    let mut statuses: Vec<Status> = Vec::new();
    for s in types
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["statuses"].as_array().cloned().unwrap_or_default())
    {
        let status = Status {
            name: s["name"].as_str().unwrap_or_default().into(),
            category: s["statusCategory"]["key"]
                .as_str()
                .unwrap_or_default()
                .into(),
            reason: None,
        };
        if !statuses.contains(&status) {
            statuses.push(status);
        }
    }
    Ok(statuses)
}
