//! A loopback double of Jira Cloud's REST API v3, Linear's GraphQL API and GitHub's
//! REST API, for the tracker sync tests. Each checks what coe sends against the
//! platform's published shapes and limits (tests/fixtures/trackers/README.md lists
//! the sources) and answers as the platform does: a request off the shape gets the
//! platform's 400 and is noted in `problems`, which every test expects empty. Faults
//! are played on demand: an answer queued in `faults` (401, 404, 429 with
//! `Retry-After`, 503) is given to the next request, whatever it is; `refuse_moves`
//! answers a transition as a workflow that does not allow it; `hold` keeps every
//! request waiting (counted in `held`) until `release`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::Engine;
use serde_json::{json, Value};

pub const JIRA_USER: &str = "coe-bot@acme.test";
pub const JIRA_TOKEN: &str = "jira-api-token-0123";
pub const LINEAR_KEY: &str = "lin_api_0123456789";
pub const GITHUB_TOKEN: &str = "github_pat_0123456789";

/// People each tracker knows by email: Ana everywhere (GitHub: a public email).
const PEOPLE: [(&str, &str, &str, &str); 2] = [
    ("ana@example.com", "acc-ana", "user-ana", "ana-gh"),
    ("bo@example.com", "acc-bo", "user-bo", "bo-gh"),
];

/// A ticket in the double, whichever platform it is of.
#[derive(Debug, Clone, Default)]
pub struct Issue {
    pub platform: &'static str,
    pub key: String,
    pub id: String,
    pub number: u64,
    pub place: String,
    pub title: String,
    pub description: Value,
    pub due: Option<String>,
    pub priority: Value,
    pub assignee: Option<String>,
    pub labels: Vec<String>,
    pub issue_type: String,
    pub status: String,
    pub category: String,
    pub reason: Option<String>,
    pub comments: Vec<String>,
}

/// An answer played instead: status, `Retry-After`, a body of the test's own.
pub type Fault = (u16, Option<&'static str>, Option<Value>);

#[derive(Default)]
pub struct Double {
    pub issues: Mutex<Vec<Issue>>,
    /// Every request: method, path and query, body.
    pub requests: Mutex<Vec<(String, String, Value)>>,
    /// Answers to give the next requests instead (status, `Retry-After`, a body of
    /// the test's own instead of the played one).
    pub faults: Mutex<VecDeque<Fault>>,
    /// Requests off the platform's shape.
    pub problems: Mutex<Vec<String>>,
    /// The workflow refuses every transition.
    pub refuse_moves: AtomicBool,
    /// The tracker is down: every request answers 503.
    pub down: AtomicBool,
    /// The next request that makes an issue does, but its answer is lost (504).
    pub lose_next_answer: AtomicBool,
    /// Every request waits, unanswered, until `release`: a tracker that is slow.
    pub hold: AtomicBool,
    /// How many requests are waiting on `hold` now.
    pub held: AtomicUsize,
    released: tokio::sync::Notify,
}

impl Double {
    pub fn issues(&self, platform: &str) -> Vec<Issue> {
        let all = self.issues.lock().expect("lock");
        all.iter()
            .filter(|i| i.platform == platform)
            .cloned()
            .collect()
    }

    pub fn issue(&self, key: &str) -> Issue {
        let all = self.issues.lock().expect("lock");
        all.iter()
            .find(|i| i.key == key)
            .cloned()
            .unwrap_or_else(|| panic!("no issue {key} in the double"))
    }

    /// Someone moves `key` in the tracker (no webhook: the test sends it, or not).
    pub fn set_status(&self, key: &str, status: &str, category: &str, reason: Option<&str>) {
        let mut all = self.issues.lock().expect("lock");
        let issue = all.iter_mut().find(|i| i.key == key).expect("the issue");
        issue.status = status.into();
        issue.category = category.into();
        issue.reason = reason.map(Into::into);
    }

    pub fn will_answer(&self, status: u16, retry_after: Option<&'static str>) {
        self.faults
            .lock()
            .expect("lock")
            .push_back((status, retry_after, None));
    }

    /// The next request is answered `status` with `body`.
    pub fn will_answer_with(&self, status: u16, body: Value) {
        self.faults
            .lock()
            .expect("lock")
            .push_back((status, None, Some(body)));
    }

    /// Every request waiting on `hold` is answered, and no more wait.
    pub fn release(&self) {
        self.hold.store(false, Ordering::SeqCst);
        self.released.notify_waiters();
    }

    /// How many requests the double has had.
    pub fn request_count(&self) -> usize {
        self.requests.lock().expect("lock").len()
    }

    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().expect("lock").clone()
    }

    pub fn requests_to(&self, needle: &str) -> usize {
        let all = self.requests.lock().expect("lock");
        all.iter()
            .filter(|(m, p, _)| format!("{m} {p}").contains(needle))
            .count()
    }

    fn refuse(&self, problem: String) -> HttpResponse {
        self.problems.lock().expect("lock").push(problem.clone());
        HttpResponse::BadRequest().json(json!({"errorMessages": [problem], "errors": {}}))
    }
}

/// Starts the double on loopback; its base URL serves all three platforms (Jira at
/// `/rest/api/3`, Linear at `/graphql`, GitHub at `/repos`, `/search`, `/users`).
pub async fn start() -> (String, Arc<Double>) {
    let double = Arc::new(Double::default());
    let data = web::Data::new(double.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(1 << 20))
            .default_service(web::to(answer))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("bind");
    let port = server.addrs()[0].port();
    tokio::spawn(server.run());
    (format!("http://127.0.0.1:{port}"), double)
}

async fn answer(
    req: HttpRequest,
    body: web::Bytes,
    double: web::Data<Arc<Double>>,
) -> HttpResponse {
    let path = req.path().to_owned();
    let query = req.query_string().to_owned();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let shown = if query.is_empty() {
        path.clone()
    } else {
        format!("{path}?{query}")
    };
    double
        .requests
        .lock()
        .expect("lock")
        .push((req.method().to_string(), shown, json.clone()));
    if double.hold.load(Ordering::SeqCst) {
        double.held.fetch_add(1, Ordering::SeqCst);
        loop {
            // Registered before the flag is read: a release in between is not missed.
            let released = double.released.notified();
            if !double.hold.load(Ordering::SeqCst) {
                break;
            }
            released.await;
        }
        double.held.fetch_sub(1, Ordering::SeqCst);
    }
    if double.down.load(Ordering::Relaxed) {
        return HttpResponse::ServiceUnavailable().body("upstream connect error");
    }
    let fault = double.faults.lock().expect("lock").pop_front();
    if let Some((status, retry_after, body)) = fault {
        let mut answer =
            HttpResponse::build(actix_web::http::StatusCode::from_u16(status).expect("a status"));
        if let Some(after) = retry_after {
            answer.insert_header(("Retry-After", after));
        }
        return answer.json(body.unwrap_or_else(
            || json!({"errorMessages": [format!("played {status}")], "message": "played"}),
        ));
    }
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    if path.starts_with("/rest/api/3/") {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("{JIRA_USER}:{JIRA_TOKEN}"));
        if header("authorization") != format!("Basic {basic}") {
            return HttpResponse::Unauthorized().json(json!({"errorMessages": ["Client must be authenticated to access this resource."], "errors": {}}));
        }
        return jira(&double, req.method().as_str(), &path, &query, &json);
    }
    if path == "/graphql" {
        if header("authorization") != LINEAR_KEY {
            return HttpResponse::BadRequest().json(json!({"errors": [{"message": "Authentication required, not authenticated", "extensions": {"code": "AUTHENTICATION_ERROR", "type": "authentication error"}}]}));
        }
        return linear(&double, &json);
    }
    if header("authorization") != format!("Bearer {GITHUB_TOKEN}") {
        return HttpResponse::Unauthorized().json(json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}));
    }
    if header("accept") != "application/vnd.github+json"
        || header("x-github-api-version") != "2022-11-28"
        || header("user-agent").is_empty()
    {
        return double.refuse(format!(
            "GitHub: Accept {:?}, X-GitHub-Api-Version {:?}, User-Agent {:?}",
            header("accept"),
            header("x-github-api-version"),
            header("user-agent")
        ));
    }
    github(&double, req.method().as_str(), &path, &query, &json)
}

/// The answer, or a 504 instead when it made an issue and the answer is to be lost.
fn maybe_lost(double: &Double, made: bool, answer: HttpResponse) -> HttpResponse {
    if made && double.lose_next_answer.swap(false, Ordering::Relaxed) {
        return HttpResponse::GatewayTimeout().body("the answer was lost");
    }
    answer
}

/// The strings of a JSON array (none when it is not one).
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|l| {
            l.iter()
                .filter_map(|x| x.as_str().map(Into::into))
                .collect()
        })
        .unwrap_or_default()
}

fn param(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn date_ok(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok())
}

/// Atlassian Document Format: a `doc` of version 1 whose blocks are paragraphs of
/// text nodes (links as a `link` mark with an `href`).
fn adf_ok(doc: &Value) -> bool {
    doc["type"] == "doc"
        && doc["version"] == 1
        && doc["content"].as_array().is_some_and(|blocks| {
            blocks.iter().all(|b| {
                b["type"] == "paragraph"
                    && b["content"].as_array().is_some_and(|inline| {
                        inline.iter().all(|t| {
                            t["type"] == "text"
                                && t["text"].as_str().is_some_and(|s| !s.is_empty())
                                && t["marks"].as_array().is_none_or(|marks| {
                                    marks.iter().all(|m| {
                                        m["type"] == "link" && m["attrs"]["href"].is_string()
                                    })
                                })
                        })
                    })
            })
        })
}

const JIRA_STATUSES: [(&str, &str, &str, Option<&str>); 4] = [
    ("11", "To Do", "new", None),
    ("21", "In Progress", "indeterminate", None),
    ("31", "Done", "done", Some("Done")),
    ("41", "Won't Do", "done", Some("Won't Do")),
];

fn jira_issue(i: &Issue) -> Value {
    json!({"id": i.id, "key": i.key, "fields": {
        "status": {"name": i.status, "statusCategory": {"key": i.category}},
        "resolution": i.reason.as_ref().map(|r| json!({"name": r})),
    }})
}

fn jira(double: &Double, method: &str, path: &str, query: &str, body: &Value) -> HttpResponse {
    let parts: Vec<&str> = path.trim_start_matches("/rest/api/3/").split('/').collect();
    let not_found = || {
        HttpResponse::NotFound().json(json!({"errorMessages": ["Issue does not exist or you do not have permission to see it."], "errors": {}}))
    };
    match (method, parts.as_slice()) {
        ("POST", ["issue"]) => {
            let f = &body["fields"];
            let summary = f["summary"].as_str().unwrap_or_default();
            if f["project"]["key"].as_str() != Some("OPS") {
                return double.refuse(format!("Jira: project {}", f["project"]));
            }
            if summary.is_empty() || summary.chars().count() > 255 || summary.contains('\n') {
                return double.refuse(format!("Jira: summary {summary:?}"));
            }
            if !adf_ok(&f["description"]) {
                return double.refuse(format!(
                    "Jira: description is not ADF: {}",
                    f["description"]
                ));
            }
            if !date_ok(&f["duedate"]) {
                return double.refuse(format!("Jira: duedate {}", f["duedate"]));
            }
            let priority = f["priority"]["name"].as_str().unwrap_or_default();
            if !["Highest", "High", "Medium", "Low", "Lowest"].contains(&priority) {
                return double.refuse(format!("Jira: priority {}", f["priority"]));
            }
            let labels = strings(&f["labels"]);
            if labels
                .iter()
                .any(|l: &String| l.contains(' ') || l.len() > 255)
            {
                return double.refuse(format!("Jira: labels {labels:?}"));
            }
            let assignee = f["assignee"]["accountId"].as_str().map(Into::into);
            if assignee
                .as_deref()
                .is_some_and(|a| !PEOPLE.iter().any(|p| p.1 == a))
            {
                return double.refuse(format!("Jira: assignee {assignee:?}"));
            }
            let mut all = double.issues.lock().expect("lock");
            let n = all.iter().filter(|i| i.platform == "jira").count() + 1;
            let issue = Issue {
                platform: "jira",
                key: format!("OPS-{n}"),
                id: format!("{}", 10_000 + n),
                place: "OPS".into(),
                title: summary.into(),
                description: f["description"].clone(),
                due: f["duedate"].as_str().map(Into::into),
                priority: json!(priority),
                assignee,
                labels,
                issue_type: f["issuetype"]["name"].as_str().unwrap_or_default().into(),
                status: "To Do".into(),
                category: "new".into(),
                ..Issue::default()
            };
            let answer = json!({"id": issue.id, "key": issue.key, "self": format!("/rest/api/3/issue/{}", issue.id)});
            all.push(issue);
            maybe_lost(double, true, HttpResponse::Created().json(answer))
        }
        ("GET", ["issue", key]) => match double.issues("jira").iter().find(|i| i.key == *key) {
            Some(i) => HttpResponse::Ok().json(jira_issue(i)),
            None => not_found(),
        },
        ("PUT", ["issue", key]) => {
            let mut all = double.issues.lock().expect("lock");
            let Some(i) = all.iter_mut().find(|i| i.key == *key) else {
                return not_found();
            };
            let f = &body["fields"];
            if !f.is_object()
                || f.as_object()
                    .is_some_and(|o| o.keys().any(|k| k != "duedate"))
            {
                drop(all);
                return double.refuse(format!("Jira: fields {f}"));
            }
            if !date_ok(&f["duedate"]) {
                drop(all);
                return double.refuse(format!("Jira: duedate {}", f["duedate"]));
            }
            i.due = f["duedate"].as_str().map(Into::into);
            HttpResponse::NoContent().finish()
        }
        ("PUT", ["issue", key, "assignee"]) => {
            let mut all = double.issues.lock().expect("lock");
            let Some(i) = all.iter_mut().find(|i| i.key == *key) else {
                return not_found();
            };
            if !(body["accountId"].is_null() || body["accountId"].is_string()) {
                drop(all);
                return double.refuse(format!("Jira: assignee {body}"));
            }
            i.assignee = body["accountId"].as_str().map(Into::into);
            HttpResponse::NoContent().finish()
        }
        ("POST", ["issue", key, "comment"]) => {
            if !adf_ok(&body["body"]) {
                return double.refuse(format!("Jira: comment is not ADF: {body}"));
            }
            let mut all = double.issues.lock().expect("lock");
            let Some(i) = all.iter_mut().find(|i| i.key == *key) else {
                return not_found();
            };
            let text: Vec<String> = body["body"]["content"][0]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["text"].as_str().map(Into::into))
                .collect();
            i.comments.push(text.concat());
            HttpResponse::Created().json(json!({"id": "1"}))
        }
        ("GET", ["issue", key, "transitions"]) => {
            let Some(i) = double.issues("jira").into_iter().find(|i| i.key == *key) else {
                return not_found();
            };
            let offered: Vec<Value> = JIRA_STATUSES
                .iter()
                .filter(|(_, name, _, _)| *name != i.status)
                .map(|(id, name, cat, _)| {
                    json!({"id": id, "name": name, "to": {"name": name, "statusCategory": {"key": cat}}})
                })
                .collect();
            HttpResponse::Ok().json(json!({"transitions": offered}))
        }
        ("POST", ["issue", key, "transitions"]) => {
            let id = body["transition"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut all = double.issues.lock().expect("lock");
            let Some(i) = all.iter_mut().find(|i| i.key == *key) else {
                return not_found();
            };
            let to = JIRA_STATUSES.iter().find(|s| s.0 == id && s.1 != i.status);
            match to {
                Some((_, name, cat, reason)) if !double.refuse_moves.load(Ordering::Relaxed) => {
                    i.status = (*name).into();
                    i.category = (*cat).into();
                    i.reason = reason.map(Into::into);
                    HttpResponse::NoContent().finish()
                }
                _ => HttpResponse::BadRequest().json(json!({"errorMessages": [format!("Transition id '{id}' is not valid for this issue.")], "errors": {}})),
            }
        }
        ("GET", ["user", "search"]) => {
            let asked = param(query, "query").unwrap_or_default();
            let found: Vec<Value> = PEOPLE
                .iter()
                .filter(|p| p.0 == asked)
                .map(|p| json!({"accountId": p.1, "accountType": "atlassian", "active": true}))
                .collect();
            HttpResponse::Ok().json(found)
        }
        ("GET", ["search", "jql"]) => {
            let jql = param(query, "jql").unwrap_or_default();
            let found: Vec<Value> = double
                .issues("jira")
                .iter()
                .filter(|i| {
                    i.labels
                        .iter()
                        .any(|l| jql.contains(&format!("labels = \"{l}\"")))
                })
                .map(jira_issue)
                .collect();
            HttpResponse::Ok().json(json!({"issues": found, "isLast": true}))
        }
        ("GET", ["project", key]) if *key == "OPS" => {
            HttpResponse::Ok().json(json!({"id": "10000", "key": "OPS", "name": "Operations"}))
        }
        ("GET", ["project", key, "statuses"]) if *key == "OPS" => {
            let statuses: Vec<Value> = JIRA_STATUSES
                .iter()
                .map(|(_, name, cat, _)| json!({"name": name, "statusCategory": {"key": cat}}))
                .chain([json!({"name": "Limbo", "statusCategory": {"key": "undefined"}})])
                .collect();
            HttpResponse::Ok().json(json!([{"name": "Task", "statuses": statuses}]))
        }
        _ => HttpResponse::NotFound()
            .json(json!({"errorMessages": ["No project could be found."], "errors": {}})),
    }
}

const LINEAR_STATES: [(&str, &str, &str); 5] = [
    ("st-backlog", "Backlog", "backlog"),
    ("st-todo", "Todo", "unstarted"),
    ("st-progress", "In Progress", "started"),
    ("st-done", "Done", "completed"),
    ("st-canceled", "Canceled", "canceled"),
];

fn linear_issue(i: &Issue) -> Value {
    json!({"id": i.id, "identifier": i.key, "url": format!("https://linear.app/acme/issue/{}", i.key),
           "state": {"name": i.status, "type": i.category}})
}

fn gql_error(message: &str, code: &str) -> HttpResponse {
    HttpResponse::BadRequest()
        .json(json!({"errors": [{"message": message, "extensions": {"code": code}}]}))
}

fn linear(double: &Double, body: &Value) -> HttpResponse {
    let query = body["query"].as_str().unwrap_or_default();
    let vars = &body["variables"];
    let states: Vec<Value> = LINEAR_STATES
        .iter()
        .map(|(id, name, ty)| json!({"id": id, "name": name, "type": ty}))
        .collect();
    let find = |id: &str| {
        double
            .issues("linear")
            .into_iter()
            .find(|i| i.id == id || i.key == id)
    };
    if query.contains("teams(") {
        let teams = if vars["key"] == "ENG" {
            vec![json!({"id": "team-eng", "key": "ENG", "states": {"nodes": states}})]
        } else {
            Vec::new()
        };
        return HttpResponse::Ok().json(json!({"data": {"teams": {"nodes": teams}}}));
    }
    if query.contains("users(") {
        let asked = vars["email"].as_str().unwrap_or_default();
        let users: Vec<Value> = PEOPLE
            .iter()
            .filter(|p| p.0 == asked)
            .map(|p| json!({"id": p.2}))
            .collect();
        return HttpResponse::Ok().json(json!({"data": {"users": {"nodes": users}}}));
    }
    if query.contains("issueCreate") {
        let input = &vars["input"];
        let id = input["id"].as_str().unwrap_or_default();
        if uuid::Uuid::parse_str(id).map_or(true, |u| u.get_version_num() != 4) {
            return double.refuse(format!("Linear: id {id:?} is not a UUID v4"));
        }
        if find(id).is_some() {
            return gql_error("Entity already exists", "INVALID_INPUT");
        }
        if input["teamId"] != "team-eng" {
            return double.refuse(format!("Linear: teamId {}", input["teamId"]));
        }
        let title = input["title"].as_str().unwrap_or_default();
        if title.trim().is_empty() {
            return double.refuse("Linear: empty title".into());
        }
        if !input["priority"]
            .as_i64()
            .is_some_and(|p| (0..=4).contains(&p))
        {
            return double.refuse(format!("Linear: priority {}", input["priority"]));
        }
        if !date_ok(&input["dueDate"]) {
            return double.refuse(format!("Linear: dueDate {}", input["dueDate"]));
        }
        let mut all = double.issues.lock().expect("lock");
        let n = all.iter().filter(|i| i.platform == "linear").count() + 1;
        let issue = Issue {
            platform: "linear",
            key: format!("ENG-{n}"),
            id: id.into(),
            place: "ENG".into(),
            title: title.into(),
            description: input["description"].clone(),
            due: input["dueDate"].as_str().map(Into::into),
            priority: input["priority"].clone(),
            assignee: input["assigneeId"].as_str().map(Into::into),
            status: "Todo".into(),
            category: "unstarted".into(),
            ..Issue::default()
        };
        let answer =
            json!({"data": {"issueCreate": {"success": true, "issue": linear_issue(&issue)}}});
        all.push(issue);
        return maybe_lost(double, true, HttpResponse::Ok().json(answer));
    }
    if query.contains("issueUpdate") {
        let input = &vars["input"];
        let mut all = double.issues.lock().expect("lock");
        let Some(i) = all
            .iter_mut()
            .find(|i| i.platform == "linear" && i.id == vars["id"].as_str().unwrap_or_default())
        else {
            return gql_error("Entity not found: Issue", "INVALID_INPUT");
        };
        for (k, v) in input.as_object().into_iter().flatten() {
            match k.as_str() {
                "dueDate" if date_ok(v) => i.due = v.as_str().map(Into::into),
                "assigneeId" if v.is_null() || v.is_string() => {
                    i.assignee = v.as_str().map(Into::into)
                }
                "stateId" => {
                    let Some((_, name, ty)) = LINEAR_STATES.iter().find(|s| v == s.0) else {
                        drop(all);
                        return double.refuse(format!("Linear: stateId {v}"));
                    };
                    i.status = (*name).into();
                    i.category = (*ty).into();
                }
                _ => {
                    drop(all);
                    return double.refuse(format!("Linear: issueUpdate input {k}: {v}"));
                }
            }
        }
        return HttpResponse::Ok().json(json!({"data": {"issueUpdate": {"success": true}}}));
    }
    if query.contains("commentCreate") {
        let input = &vars["input"];
        let mut all = double.issues.lock().expect("lock");
        let Some(i) = all.iter_mut().find(|i| {
            i.platform == "linear" && i.id == input["issueId"].as_str().unwrap_or_default()
        }) else {
            return gql_error("Entity not found: Issue", "INVALID_INPUT");
        };
        i.comments
            .push(input["body"].as_str().unwrap_or_default().into());
        return HttpResponse::Ok().json(json!({"data": {"commentCreate": {"success": true}}}));
    }
    if query.contains("issue(id") {
        let Some(i) = find(vars["id"].as_str().unwrap_or_default()) else {
            return gql_error("Entity not found: Issue", "INVALID_INPUT");
        };
        let mut issue = linear_issue(&i);
        issue["team"] = json!({"states": {"nodes": states}});
        return HttpResponse::Ok().json(json!({"data": {"issue": issue}}));
    }
    double.refuse(format!("Linear: a query the double does not know: {query}"))
}

fn github_issue(i: &Issue) -> Value {
    json!({"number": i.number, "node_id": format!("I_{}", i.number),
           "html_url": format!("https://github.com/{}/issues/{}", i.place, i.number),
           "state": i.category, "state_reason": i.reason, "title": i.title,
           "labels": i.labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>()})
}

fn github(double: &Double, method: &str, path: &str, query: &str, body: &Value) -> HttpResponse {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let not_found = || {
        HttpResponse::NotFound().json(
            json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
        )
    };
    match (method, parts.as_slice()) {
        ("GET", ["repos", "acme", "api"]) => {
            HttpResponse::Ok().json(json!({"full_name": "acme/api", "has_issues": true}))
        }
        ("POST", ["repos", "acme", "api", "issues"]) => {
            let title = body["title"].as_str().unwrap_or_default();
            if title.is_empty() || title.chars().count() > 256 {
                return double.refuse(format!("GitHub: title {title:?}"));
            }
            let labels = strings(&body["labels"]);
            let assignee = body["assignees"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(|a| a.as_str())
                .map(Into::into);
            let mut all = double.issues.lock().expect("lock");
            let n = all.iter().filter(|i| i.platform == "github").count() as u64 + 1;
            let issue = Issue {
                platform: "github",
                key: format!("acme/api#{n}"),
                id: n.to_string(),
                number: n,
                place: "acme/api".into(),
                title: title.into(),
                description: body["body"].clone(),
                assignee,
                labels,
                status: "open".into(),
                category: "open".into(),
                ..Issue::default()
            };
            let answer = github_issue(&issue);
            all.push(issue);
            maybe_lost(double, true, HttpResponse::Created().json(answer))
        }
        ("GET", ["repos", "acme", "api", "issues"]) => {
            let label = param(query, "labels").unwrap_or_default();
            let found: Vec<Value> = double
                .issues("github")
                .iter()
                .filter(|i| i.labels.contains(&label))
                .map(github_issue)
                .collect();
            HttpResponse::Ok().json(found)
        }
        ("GET", ["repos", "acme", "api", "issues", n]) => {
            match double.issues("github").iter().find(|i| i.id == *n) {
                Some(i) => HttpResponse::Ok().json(github_issue(i)),
                None => not_found(),
            }
        }
        ("PATCH", ["repos", "acme", "api", "issues", n]) => {
            let mut all = double.issues.lock().expect("lock");
            let Some(i) = all
                .iter_mut()
                .find(|i| i.platform == "github" && i.id == *n)
            else {
                return not_found();
            };
            if let Some(state) = body.get("state") {
                let reason = body.get("state_reason").cloned().unwrap_or(Value::Null);
                let ok = match state.as_str() {
                    Some("closed") => reason == "completed" || reason == "not_planned",
                    Some("open") => reason == "reopened" || reason.is_null(),
                    _ => false,
                };
                if !ok {
                    drop(all);
                    return HttpResponse::UnprocessableEntity().json(json!({"message": "Validation Failed", "errors": [{"field": "state_reason", "code": "invalid"}]}));
                }
                i.category = state.as_str().unwrap_or_default().into();
                i.status = i.category.clone();
                i.reason = reason.as_str().map(Into::into);
            }
            if let Some(assignees) = body.get("assignees") {
                i.assignee = assignees
                    .as_array()
                    .and_then(|a| a.first())
                    .and_then(|a| a.as_str())
                    .map(Into::into);
            }
            HttpResponse::Ok().json(github_issue(i))
        }
        ("POST", ["repos", "acme", "api", "issues", n, "comments"]) => {
            let mut all = double.issues.lock().expect("lock");
            let Some(i) = all
                .iter_mut()
                .find(|i| i.platform == "github" && i.id == *n)
            else {
                return not_found();
            };
            i.comments
                .push(body["body"].as_str().unwrap_or_default().into());
            HttpResponse::Created().json(json!({"id": 1}))
        }
        ("GET", ["search", "users"]) => {
            let q = param(query, "q").unwrap_or_default();
            // Only Ana's email is public.
            let items: Vec<Value> = PEOPLE
                .iter()
                .take(1)
                .filter(|p| q == format!("{} in:email", p.0))
                .map(|p| json!({"login": p.3}))
                .collect();
            HttpResponse::Ok().json(json!({"total_count": items.len(), "items": items}))
        }
        ("GET", ["users", login]) => match PEOPLE.iter().find(|p| p.3 == *login) {
            Some(p) => HttpResponse::Ok().json(json!({"login": p.3, "email": p.0})),
            None => not_found(),
        },
        _ => not_found(),
    }
}
