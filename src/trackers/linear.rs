//! Linear's GraphQL API: issues in a team, moved between the team's workflow states
//! by their type, an API key in `Authorization`.

use chrono::NaiveDate;
use serde_json::{json, Value};

use super::{Answer, Client, Failure, NewTicket, Remote, Status};
use crate::config::Meaning;

const ISSUE: &str = "id identifier url state { name type }";

/// Runs a query; GraphQL's errors (in a 200 or a 400) are judged by their code.
fn gql(client: &Client<'_>, query: &str, variables: Value) -> Answer<Value> {
    let request = client
        .agent
        .post(&client.url("/graphql"))
        .set("Authorization", client.tracker.token.expose());
    let answer = client
        .call(
            request,
            Some(&json!({"query": query, "variables": variables})),
        )
        .map_err(|f| match f {
            // Linear's SDK reads a rate limit as an error of type `ratelimited`
            // (code RATELIMITED) whatever the status.
            Failure::Refused(e) if e.to_ascii_lowercase().contains("ratelimited") => {
                Failure::Retry {
                    after_secs: None,
                    error: e,
                }
            }
            Failure::Refused(e) if e.contains("AUTHENTICATION_ERROR") => Failure::Broken(e),
            other => other,
        })?;
    if let Some(errors) = answer["errors"].as_array().filter(|e| !e.is_empty()) {
        let extensions = &errors[0]["extensions"];
        let code = extensions["code"]
            .as_str()
            .or(extensions["type"].as_str())
            .unwrap_or_default()
            .to_ascii_uppercase();
        let error = format!(
            "Linear: {} ({code})",
            errors[0]["message"].as_str().unwrap_or("an error")
        );
        return Err(match code.as_str() {
            "RATELIMITED" => Failure::Retry {
                after_secs: None,
                error,
            },
            "AUTHENTICATION_ERROR" | "FORBIDDEN" => Failure::Broken(error),
            _ => Failure::Refused(error),
        });
    }
    Ok(answer["data"].clone())
}

fn remote(issue: &Value) -> Remote {
    Remote {
        key: issue["identifier"].as_str().unwrap_or_default().into(),
        id: issue["id"].as_str().unwrap_or_default().into(),
        url: issue["url"].as_str().unwrap_or_default().into(),
        status: Status {
            name: issue["state"]["name"].as_str().unwrap_or_default().into(),
            category: issue["state"]["type"].as_str().unwrap_or_default().into(),
            reason: None,
        },
    }
}

/// The team with key `place`: its id and its workflow states.
fn team(client: &Client<'_>, place: &str) -> Answer<(String, Vec<Value>)> {
    let data = gql(
        client,
        "query($key: String!) { teams(filter: { key: { eq: $key } }) { nodes { id key states { nodes { id name type } } } } }",
        json!({"key": place}),
    )?;
    let Some(team) = data["teams"]["nodes"].as_array().and_then(|t| t.first()) else {
        return Err(Failure::Broken(format!(
            "Linear has no team with key {place}"
        )));
    };
    Ok((
        team["id"].as_str().unwrap_or_default().into(),
        team["states"]["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    ))
}

/// The issue an earlier attempt made: coe chooses each issue's id (the action's,
/// from `marker`), so it is read by that id.
pub(super) fn find(client: &Client<'_>, _place: &str, marker: &str) -> Answer<Option<Remote>> {
    let id = issue_id(marker);
    match gql(
        client,
        &format!("query($id: String!) {{ issue(id: $id) {{ {ISSUE} }} }}"),
        json!({"id": id}),
    ) {
        Ok(data) if data["issue"].is_object() => Ok(Some(remote(&data["issue"]))),
        Ok(_) | Err(Failure::Refused(_)) => Ok(None),
        Err(other) => Err(other),
    }
}

/// The id coe gives the issue of the action `marker` names: the action's id with the
/// version and variant bits of a UUID v4, which is what Linear takes (the same
/// action, the same id, whichever replica asks).
fn issue_id(marker: &str) -> String {
    let action = marker.strip_prefix("coe-action-").unwrap_or(marker);
    match uuid::Uuid::parse_str(action) {
        Ok(id) => uuid::Builder::from_random_bytes(*id.as_bytes())
            .into_uuid()
            .to_string(),
        Err(_) => action.to_owned(),
    }
}

pub(super) fn user(client: &Client<'_>, email: &str) -> Answer<Option<String>> {
    let data = gql(
        client,
        "query($email: String!) { users(filter: { email: { eq: $email } }) { nodes { id } } }",
        json!({"email": email}),
    )?;
    Ok(data["users"]["nodes"]
        .as_array()
        .and_then(|n| n.first())
        .and_then(|u| u["id"].as_str())
        .map(Into::into))
}

/// Markdown of `paragraphs` and `links`.
pub(super) fn markdown(new: &NewTicket) -> String {
    let mut text: Vec<String> = new
        .paragraphs
        .iter()
        .filter(|p| !p.trim().is_empty())
        .cloned()
        .collect();
    for (label, url) in &new.links {
        text.push(format!("{label}: <{url}>"));
    }
    text.push(format!("Kept in step by coe ({}).", new.marker));
    text.join("\n\n")
}

pub(super) fn create(
    client: &Client<'_>,
    new: &NewTicket,
    assignee: Option<&str>,
) -> Answer<Remote> {
    let (team_id, _) = team(client, &new.place)?;
    let priority = match new.priority.as_str() {
        "high" => 2,
        "low" => 4,
        _ => 3,
    };
    let mut input = json!({
        "id": issue_id(&new.marker),
        "teamId": team_id,
        "title": new.title,
        "description": markdown(new),
        "dueDate": new.due.format("%Y-%m-%d").to_string(),
        "priority": priority,
    });
    if let Some(id) = assignee {
        input["assigneeId"] = json!(id);
    }
    let data = gql(
        client,
        &format!("mutation($input: IssueCreateInput!) {{ issueCreate(input: $input) {{ success issue {{ {ISSUE} }} }} }}"),
        json!({"input": input}),
    )?;
    if data["issueCreate"]["success"] != true {
        return Err(Failure::Refused("Linear did not make the issue".into()));
    }
    Ok(remote(&data["issueCreate"]["issue"]))
}

pub(super) fn get(client: &Client<'_>, key: &str) -> Answer<Remote> {
    let data = gql(
        client,
        &format!("query($id: String!) {{ issue(id: $id) {{ {ISSUE} }} }}"),
        json!({"id": key}),
    )?;
    if data["issue"].is_null() {
        return Err(Failure::Broken(format!("Linear has no issue {key}")));
    }
    Ok(remote(&data["issue"]))
}

fn update(client: &Client<'_>, remote: &Remote, input: Value) -> Answer<()> {
    let data = gql(
        client,
        "mutation($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { success } }",
        json!({"id": remote.id, "input": input}),
    )?;
    if data["issueUpdate"]["success"] != true {
        return Err(Failure::Refused(format!(
            "Linear did not update {}",
            remote.key
        )));
    }
    Ok(())
}

pub(super) fn comment(client: &Client<'_>, remote: &Remote, text: &str) -> Answer<()> {
    gql(
        client,
        "mutation($input: CommentCreateInput!) { commentCreate(input: $input) { success } }",
        json!({"input": {"issueId": remote.id, "body": text}}),
    )?;
    Ok(())
}

pub(super) fn set_due(client: &Client<'_>, remote: &Remote, due: NaiveDate) -> Answer<()> {
    update(
        client,
        remote,
        json!({"dueDate": due.format("%Y-%m-%d").to_string()}),
    )
}

pub(super) fn assign(client: &Client<'_>, remote: &Remote, assignee: Option<&str>) -> Answer<()> {
    update(client, remote, json!({"assigneeId": assignee}))
}

pub(super) fn move_to(client: &Client<'_>, remote: &Remote, to: Meaning) -> Answer<()> {
    let types: &[&str] = match to {
        Meaning::Open => &["unstarted", "backlog"],
        Meaning::InProgress => &["started"],
        Meaning::Done => &["completed"],
        Meaning::WontDo => &["canceled"],
        Meaning::Ignore => return Ok(()),
    };
    let data = gql(
        client,
        "query($id: String!) { issue(id: $id) { team { states { nodes { id name type } } } } }",
        json!({"id": remote.id}),
    )?;
    let states = data["issue"]["team"]["states"]["nodes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let Some(state) = types
        .iter()
        .find_map(|ty| states.iter().find(|s| s["type"] == *ty))
    else {
        return Err(Failure::Refused(format!(
            "the team of {} has no workflow state of type {}",
            remote.key, types[0]
        )));
    };
    update(client, remote, json!({"stateId": state["id"]}))
}

pub(super) fn check(client: &Client<'_>, place: &str) -> Answer<Vec<Status>> {
    let (_, states) = team(client, place)?;
    Ok(states
        .iter()
        .map(|s| Status {
            name: s["name"].as_str().unwrap_or_default().into(),
            category: s["type"].as_str().unwrap_or_default().into(),
            reason: None,
        })
        .collect())
}
