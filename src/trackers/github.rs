//! GitHub's REST API (and GitHub Enterprise Server's): issues in a repository, open
//! or closed with a reason, a token in `Authorization`. Issues have no due date and
//! no progress: the due date is in the body and moves by comment.

use serde_json::{json, Value};

use super::{query_value, segment, Answer, Client, Failure, NewTicket, Remote, Status};
use crate::config::Meaning;

fn request(client: &Client<'_>, method: &str, path: &str) -> ureq::Request {
    client
        .agent
        .request(method, &client.url(path))
        .set("Accept", "application/vnd.github+json")
        .set("X-GitHub-Api-Version", "2022-11-28")
        .set(
            "Authorization",
            &format!("Bearer {}", client.tracker.token.expose()),
        )
}

/// Whether `repo` is `owner/repo` of the characters GitHub allows in them.
pub(super) fn is_repo(repo: &str) -> bool {
    let word = |s: &str| {
        !s.is_empty()
            && s.len() <= 100
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && s != "."
            && s != ".."
    };
    repo.split_once('/')
        .is_some_and(|(owner, name)| word(owner) && word(name))
}

/// `repo` (`owner/repo`) as the two segments of a path, each encoded; anything else
/// (a path, `..`) is refused before it reaches a URL.
fn repo_path(repo: &str) -> Answer<String> {
    match repo.split_once('/') {
        Some((owner, name)) if is_repo(repo) => {
            Ok(format!("{}/{}", segment(owner)?, segment(name)?))
        }
        _ => Err(Failure::Refused(format!(
            "{repo:?} is not a GitHub repository (owner/repo)"
        ))),
    }
}

/// `owner/repo#12` as the repository and the number; anything else (a path, a
/// query) is refused before it reaches a URL.
fn split(key: &str) -> Answer<(&str, &str)> {
    key.rsplit_once('#')
        .filter(|(repo, n)| {
            is_repo(repo) && !n.is_empty() && n.len() <= 12 && n.bytes().all(|b| b.is_ascii_digit())
        })
        .ok_or_else(|| Failure::Refused(format!("{key} is not a GitHub issue (owner/repo#12)")))
}

fn remote(repo: &str, issue: &Value) -> Remote {
    let number = issue["number"].as_u64().unwrap_or_default().to_string();
    let state = issue["state"].as_str().unwrap_or_default();
    Remote {
        // GitHub's names are not case-sensitive: keys are kept in lower case.
        key: format!("{}#{number}", repo.to_ascii_lowercase()),
        id: number,
        url: issue["html_url"].as_str().unwrap_or_default().into(),
        status: Status {
            name: state.into(),
            category: state.into(),
            reason: issue["state_reason"].as_str().map(Into::into),
        },
    }
}

/// The issue carrying the label `marker`, read from the repository itself (the
/// search lags behind a write).
pub(super) fn find(client: &Client<'_>, place: &str, marker: &str) -> Answer<Option<Remote>> {
    let found = client.call(
        request(
            client,
            "GET",
            &format!(
                "/repos/{}/issues?labels={}&state=all",
                repo_path(place)?,
                query_value(marker)
            ),
        ),
        None,
    )?;
    Ok(found
        .as_array()
        .and_then(|items| items.first())
        .map(|issue| remote(place, issue)))
}

/// GitHub finds a user by email only when they made it public, and its search does
/// not say the address: the user's profile is read to be sure.
pub(super) fn user(client: &Client<'_>, email: &str) -> Answer<Option<String>> {
    let q = format!("{email} in:email");
    let found = client.call(
        request(
            client,
            "GET",
            &format!("/search/users?q={}", query_value(&q)),
        ),
        None,
    )?;
    let Some(login) = found["items"]
        .as_array()
        .and_then(|items| items.first())
        .and_then(|u| u["login"].as_str())
    else {
        return Ok(None);
    };
    let profile = client.call(
        request(client, "GET", &format!("/users/{}", segment(login)?)),
        None,
    )?;
    let same = profile["email"]
        .as_str()
        .is_some_and(|e| e.eq_ignore_ascii_case(email));
    Ok(same.then(|| login.to_owned()))
}

pub(super) fn create(
    client: &Client<'_>,
    new: &NewTicket,
    assignee: Option<&str>,
) -> Answer<Remote> {
    let mut body = super::linear::markdown(new);
    body.insert_str(0, &format!("**Due:** {}\n\n", new.due.format("%Y-%m-%d")));
    let mut issue = json!({
        "title": crate::chat::format::cut(&new.title, 256),
        "body": body,
        "labels": [format!("priority: {}", new.priority), new.marker.clone()],
    });
    if let Some(login) = assignee {
        issue["assignees"] = json!([login]);
    }
    let made = client.call(
        request(
            client,
            "POST",
            &format!("/repos/{}/issues", repo_path(&new.place)?),
        ),
        Some(&issue),
    )?;
    Ok(remote(&new.place, &made))
}

pub(super) fn get(client: &Client<'_>, key: &str) -> Answer<Remote> {
    let (repo, number) = split(key)?;
    let issue = client.call(
        request(
            client,
            "GET",
            &format!("/repos/{}/issues/{number}", repo_path(repo)?),
        ),
        None,
    )?;
    Ok(remote(repo, &issue))
}

pub(super) fn comment(client: &Client<'_>, remote: &Remote, text: &str) -> Answer<()> {
    let (repo, number) = split(&remote.key)?;
    client.call(
        request(
            client,
            "POST",
            &format!("/repos/{}/issues/{number}/comments", repo_path(repo)?),
        ),
        Some(&json!({"body": text})),
    )?;
    Ok(())
}

pub(super) fn assign(client: &Client<'_>, remote: &Remote, assignee: Option<&str>) -> Answer<()> {
    let (repo, number) = split(&remote.key)?;
    client.call(
        request(
            client,
            "PATCH",
            &format!("/repos/{}/issues/{number}", repo_path(repo)?),
        ),
        Some(&json!({"assignees": assignee.into_iter().collect::<Vec<_>>()})),
    )?;
    Ok(())
}

pub(super) fn move_to(client: &Client<'_>, remote: &Remote, to: Meaning) -> Answer<()> {
    let (repo, number) = split(&remote.key)?;
    let change = match to {
        Meaning::Open => json!({"state": "open", "state_reason": "reopened"}),
        Meaning::Done => json!({"state": "closed", "state_reason": "completed"}),
        Meaning::WontDo => json!({"state": "closed", "state_reason": "not_planned"}),
        Meaning::InProgress | Meaning::Ignore => return Ok(()),
    };
    client.call(
        request(
            client,
            "PATCH",
            &format!("/repos/{}/issues/{number}", repo_path(repo)?),
        ),
        Some(&change),
    )?;
    Ok(())
}

pub(super) fn check(client: &Client<'_>, place: &str) -> Answer<Vec<Status>> {
    let repo = client.call(
        request(client, "GET", &format!("/repos/{}", repo_path(place)?)),
        None,
    )?;
    if repo["has_issues"] == false {
        return Err(Failure::Broken(format!("{place} has issues turned off")));
    }
    let status = |name: &str, category: &str, reason: Option<&str>| Status {
        name: name.into(),
        category: category.into(),
        reason: reason.map(Into::into),
    };
    Ok(vec![
        status("open", "open", None),
        status("closed", "closed", Some("completed")),
        status("closed", "closed", Some("not_planned")),
    ])
}
