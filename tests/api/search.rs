//! Search people can trust (issue 51, item 7), on both databases: the COEs holding the
//! words together rank first (as typed, then near each other), quoted phrases match
//! exactly, highlights fall on whole words and their forms, corrective actions are
//! found with their COE, and a search that finds nothing says so and offers the word
//! a typo was meant as.

use serde_json::{json, Value};

use crate::actions::World;
use crate::pages::{get_page, sign_in};

/// A COE titled `title` whose Summary reads `summary`: its id.
async fn coe_saying(w: &World, title: &str, summary: &str) -> String {
    let (status, doc) = w
        .send(
            &w.owner,
            "POST",
            "/api/v1/coes",
            None,
            Some(json!({"title": title, "owner": "owner@example.com"})),
        )
        .await;
    assert_eq!(status, 201, "{doc}");
    let id = doc["id"].as_str().expect("id").to_owned();
    let (status, doc) = w
        .send(
            &w.owner,
            "PUT",
            &format!("/api/v1/coes/{id}/sections/summary"),
            doc["version"].as_i64(),
            Some(json!({ "body": summary })),
        )
        .await;
    assert_eq!(status, 200, "{doc}");
    id
}

/// The ids the API's search answers for `q`, best first, and the total.
async fn found(w: &World, q: &str) -> (Vec<String>, i64) {
    let query: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
    let page: Value = w
        .app
        .get_json(&format!("/api/v1/coes?q={query}"), &w.owner)
        .await;
    let ids = page["coes"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect();
    (ids, page["total"].as_i64().expect("total"))
}

async fn search_page(w: &World, cookie: &str, q: &str) -> String {
    let query: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
    get_page(&w.app, &format!("/search?q={query}"), Some(cookie))
        .await
        .text()
        .await
        .expect("html")
}

#[tokio::test]
async fn the_words_together_rank_first_and_a_quoted_phrase_matches_exactly() {
    let w = World::new().await;
    // The demo's trouble: "time" and "out" far apart, "out" inside "checkout".
    let apart = coe_saying(
        &w,
        "Kubernetes nodes out of memory",
        "At the time of the deploy the checkout pods grew without a limit, and one after \
         another the nodes under them were evicted, rescheduled, evicted again and finally \
         ran out of memory.",
    )
    .await;
    let together = coe_saying(
        &w,
        "Checkout requests timed out",
        "Requests to the payments provider timed out after 30 s.",
    )
    .await;
    let near = coe_saying(
        &w,
        "Cache warm-up stalled",
        "The warm-up job timed, then hours later the queue ran out.",
    )
    .await;
    let other = coe_saying(
        &w,
        "Search index lag",
        "The timeout of the indexer was 5 s.",
    )
    .await;

    let (ids, total) = found(&w, "timed out").await;
    assert_eq!(total, 3, "{ids:?}");
    assert_eq!(
        ids,
        [together.clone(), near.clone(), apart.clone()],
        "as typed, then near, then apart"
    );
    assert!(!ids.contains(&other), "\"timeout\" is not \"timed\"");
    // Quoted: only the words standing together, as typed.
    let (ids, total) = found(&w, "\"timed out\"").await;
    assert_eq!((ids, total), (vec![together.clone()], 1));
    let (ids, _) = found(&w, "\"out timed\"").await;
    assert!(ids.is_empty(), "{ids:?}");
    // A phrase and a word: both must match.
    let (ids, _) = found(&w, "\"ran out\" memory").await;
    assert_eq!(ids, std::slice::from_ref(&apart));

    // The page: the same order, and marks on whole words only.
    let cookie = sign_in(&w.app, "owner@example.com").await;
    let html = search_page(&w, &cookie, "timed out").await;
    let at = |id: &str| html.find(&format!("/coes/{id}\"")).expect("listed");
    assert!(
        at(&together) < at(&near) && at(&near) < at(&apart),
        "{html}"
    );
    assert!(
        html.contains("Checkout requests <mark>timed</mark> <mark>out</mark>"),
        "{html}"
    );
    assert!(
        html.contains("Kubernetes nodes <mark>out</mark> of memory"),
        "{html}"
    );
    assert!(!html.contains("check<mark>"), "{html}");
    assert!(!html.contains("Check<mark>"), "{html}");
    assert!(
        html.contains("those holding the words together come first"),
        "{html}"
    );
}

#[tokio::test]
async fn corrective_actions_are_found_with_their_coe() {
    let w = World::new().await;
    let id = coe_saying(&w, "Ledger writes failed", "The ledger refused writes.").await;
    let action = w
        .action(
            &id,
            "Put a circuit breaker in the ledger client",
            "dev@example.com",
        )
        .await;
    let action_id = action["id"].as_str().expect("id").to_owned();
    let (ids, _) = found(&w, "circuit breaker").await;
    assert_eq!(
        ids,
        std::slice::from_ref(&id),
        "found by its action's title"
    );
    let (ids, _) = found(&w, "\"fails CI\"").await;
    assert_eq!(ids, std::slice::from_ref(&id), "by its success criteria");

    // Its closing note too, once it is done.
    let dev = crate::actions::person_token(&w.app, "dev", "dev@example.com");
    let (status, body) = w
        .send(
            &dev,
            "POST",
            &format!("/api/v1/actions/{action_id}/complete"),
            None,
            Some(json!({"note": "Shipped the bulkhead with the breaker",
                        "evidence_url": "https://grafana.example.com/d/breaker"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (ids, _) = found(&w, "bulkhead").await;
    assert_eq!(ids, std::slice::from_ref(&id));

    // The page shows the COE, and the action it was found by.
    let cookie = sign_in(&w.app, "owner@example.com").await;
    let html = search_page(&w, &cookie, "bulkhead").await;
    assert!(html.contains(&format!("/coes/{id}\"")), "{html}");
    assert!(
        html.contains(&format!("/actions/{action_id}\"")) && html.contains("Corrective action"),
        "{html}"
    );
    assert!(html.contains("<mark>bulkhead</mark>"), "{html}");
    // Found by its title: the title, marked, and no passage repeating it.
    let html = search_page(&w, &cookie, "circuit").await;
    assert!(
        html.contains("Put a <mark>circuit</mark> breaker in the ledger client</a></p>"),
        "{html}"
    );
}

#[tokio::test]
async fn a_search_that_finds_nothing_says_so_and_offers_the_word_meant() {
    let w = World::new().await;
    let id = coe_saying(
        &w,
        "Kubernetes nodes out of memory",
        "The pods had no memory limit.",
    )
    .await;
    let (ids, total) = found(&w, "memroy").await;
    assert_eq!((ids.len(), total), (0, 0));

    let cookie = sign_in(&w.app, "owner@example.com").await;
    let html = search_page(&w, &cookie, "memroy").await;
    assert!(html.contains("No COE matches “memroy”."), "{html}");
    assert!(
        html.contains("Did you mean <a href=\"/search?q=memory\">memory</a>?"),
        "{html}"
    );
    // With the other words and filters kept.
    let html = get_page(
        &w.app,
        "/search?q=kubernetes+memroy&state=draft",
        Some(&cookie),
    )
    .await
    .text()
    .await
    .expect("html");
    assert!(
        html.contains("Did you mean <a href=\"/search?q=kubernetes+memory&amp;state=draft\">"),
        "{html}"
    );
    let html = search_page(&w, &cookie, "kubernetes memory").await;
    assert!(html.contains(&format!("/coes/{id}\"")), "{html}");
    // Nothing near: no suggestion, still said in words.
    let html = search_page(&w, &cookie, "zebra").await;
    assert!(html.contains("No COE matches “zebra”."), "{html}");
    assert!(!html.contains("Did you mean"), "{html}");
    // A known word that simply is not in any COE with the others: no suggestion.
    let html = search_page(&w, &cookie, "memory zebra").await;
    assert!(!html.contains("Did you mean"), "{html}");
}

/// COEs written before this search (their index entry without their actions, no
/// exact text, no vocabulary) are found as new ones are once the migration ran.
#[tokio::test]
async fn the_migration_indexes_what_was_written_before() {
    use diesel::RunQueryDsl;
    let w = World::new().await;
    let id = coe_saying(&w, "Ledger writes failed", "The ledger refused writes.").await;
    w.action(
        &id,
        "Put a circuit breaker in the ledger client",
        "dev@example.com",
    )
    .await;
    {
        let mut conn = w.app.pool.get().expect("conn");
        crate::migrations::revert_to_before(&mut conn, "20261218000041");
        // As the version before indexed it: the writeup alone.
        diesel::sql_query("UPDATE coe_search SET body = 'The ledger refused writes.'")
            .execute(&mut conn)
            .expect("the index as it was");
        coe::db::migrate(&mut conn).expect("migrate");
    }
    let (ids, _) = found(&w, "circuit breaker").await;
    assert_eq!(ids, std::slice::from_ref(&id), "its action's words");
    let (ids, _) = found(&w, "\"refused writes\"").await;
    assert_eq!(ids, std::slice::from_ref(&id), "a phrase, exactly");
    let cookie = sign_in(&w.app, "owner@example.com").await;
    let html = search_page(&w, &cookie, "ledgr").await;
    assert!(
        html.contains("Did you mean <a href=\"/search?q=ledger\">ledger</a>?"),
        "the vocabulary: {html}"
    );
}

/// A quoted search quotes the sentence holding the phrase, not the first place one of
/// its words appears (issue 63 item 7).
#[tokio::test]
async fn a_quoted_search_shows_the_sentence_that_matches() {
    let w = World::new().await;
    coe_saying(
        &w,
        "Workers starved",
        "The queue was fine at first and nothing ran slow. The deploy went out at noon. \
         Hours later the queue ran out of workers.",
    )
    .await;
    let cookie = sign_in(&w.app, "owner@example.com").await;
    let html = search_page(&w, &cookie, "\"ran out\"").await;
    assert!(
        html.contains("<p>Hours later the queue <mark>ran</mark> <mark>out</mark> of workers.</p>"),
        "{html}"
    );
}
