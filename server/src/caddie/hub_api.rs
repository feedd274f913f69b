//! What the hub calls, signed (caddie-tool-contract-ct1.md §2, §5, §7):
//! provisioning, the status reconcile with its participants diff, and
//! revocation. Every call passes `signed::check` and its nonce is
//! remembered before anything else happens.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::HubError;
use super::state::CaddieState;
use super::{signed, token};
use crate::db::caddie as store;
use crate::ids::now_secs;

/// Verifies the call and burns its nonce before anything else happens.
async fn verified(state: &CaddieState, headers: &HeaderMap, body: &[u8]) -> Result<(), HubError> {
    let caddie = &state.caddie;
    let now = now_secs();
    let (nonce, ts) = signed::check(headers, body, &caddie.keys, &caddie.config.slug, now).map_err(|refused| {
        tracing::info!(why = refused.1, "caddie: signed call refused");
        HubError::refused(refused.0, "bad_signature", "the call's signature headers are not valid")
    })?;
    if !store::remember_nonce(&state.pool, &nonce, now, ts + signed::MAX_SKEW_SECS + 1).await? {
        tracing::info!("caddie: replayed nonce");
        return Err(HubError::refused(StatusCode::UNAUTHORIZED, "replayed", "this nonce was already used"));
    }
    Ok(())
}

/// `GET /api/meta` (§8): the hub's health check before it sends anyone
/// here (it caches the answer 60 s). Fast and side-effect free: no
/// database, nothing secret.
pub async fn meta(State(state): State<CaddieState>) -> impl axum::response::IntoResponse {
    let body = json!({
        "tool": state.caddie.config.slug,
        "contract": token::CONTRACT,
        "version": env!("CARGO_PKG_VERSION"),
        "status": "ok",
    });
    ([(axum::http::header::CACHE_CONTROL, "no-store")], Json(body))
}

/// The body as `T`, or a `400` naming what is wrong.
fn body_of<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, HubError> {
    serde_json::from_slice(body).map_err(|e| HubError::bad_request(format!("invalid body: {e}")))
}

#[derive(Deserialize)]
struct ProvisionRequest {
    assignment_id: String,
    project_id: String,
    project_name: String,
    #[serde(default)]
    config: Value,
    participants: Vec<String>,
    #[serde(default)]
    stages: Value,
    #[serde(default)]
    contract: Option<String>,
}

/// `POST /caddie/api/assignments` (§2): idempotent on `assignment_id`.
pub async fn provision(
    State(state): State<CaddieState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, HubError> {
    verified(&state, &headers, &body).await?;
    let request: ProvisionRequest = body_of(&body)?;
    if request.contract.as_deref().is_some_and(|c| c != token::CONTRACT) {
        return Err(HubError::refused(StatusCode::CONFLICT, "contract", "this tool speaks ct1"));
    }
    let shaped = token::is_id(&request.assignment_id, 64)
        && token::is_id(&request.project_id, 128)
        && (1..=200).contains(&request.project_name.chars().count())
        && request.participants.len() <= 1000
        && request.participants.iter().all(|p| token::is_username(p));
    if !shaped {
        return Err(HubError::bad_request("assignment_id, project_id, project_name or participants out of shape"));
    }
    let stages = if request.stages.is_null() { json!([]) } else { request.stages };
    let config = if request.config.is_null() { json!({}) } else { request.config };
    let workspace_id = super::provision::provision(
        &state,
        &request.assignment_id,
        &request.project_id,
        &request.project_name,
        &config,
        &request.participants,
        &stages,
    )
    .await
    .map_err(|error| match error.downcast::<super::provision::ProvisionRefused>() {
        Ok(refused) => HubError::refused(StatusCode::BAD_REQUEST, "unknown_preset", refused.0),
        Err(error) => HubError::Internal(error),
    })?;
    Ok(Json(json!({ "status": "ready", "external_ref": workspace_id })))
}

/// The assistant's lifecycle on the six frozen states (§5): no
/// conversation yet → `not_started`; a change waiting for a user's answer
/// → `waiting_client`; the newest turn failed (the space's tool host or
/// model failing) → `needs_attention`; otherwise `in_progress`. A chat has
/// no natural end, so `done` is never inferred.
pub fn state_of(activity: &store::SpaceActivity) -> (&'static str, String) {
    if activity.conversations == 0 {
        ("not_started", "No conversation yet".to_owned())
    } else if !activity.waiting.is_empty() {
        ("waiting_client", format!("{} change(s) waiting for approval", activity.waiting.len()))
    } else if activity.failing {
        ("needs_attention", "The assistant's last answer failed".to_owned())
    } else {
        ("in_progress", format!("{} conversation(s)", activity.conversations))
    }
}

/// What a status report says about the space (§5): its state, counts,
/// waiting actors and summary — the same JSON for the same space.
pub fn status_fields(activity: &store::SpaceActivity) -> Value {
    let (state, summary) = state_of(activity);
    json!({
        "state": state,
        "counts": { "client_open": activity.waiting.len(), "agency_open": 0 },
        "summary": summary,
        "actors_waiting": activity.waiting,
    })
}

/// The body of a status report (§5), for a push and for the reconcile alike.
pub fn status_report(assignment_id: &str, fields: &Value, seq: i64) -> Value {
    let occurred_at =
        time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    let mut body = fields.clone();
    body["assignment_id"] = json!(assignment_id);
    body["seq"] = json!(seq);
    body["occurred_at"] = json!(occurred_at);
    body
}

/// `GET /caddie/api/assignments/{asg}/status` (§5): the reconcile. A
/// `participants` query is the hub's current list ([`listed_participants`]):
/// grants of anyone de-listed are dropped.
pub async fn status(
    State(state): State<CaddieState>,
    headers: HeaderMap,
    Path(assignment_id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, HubError> {
    verified(&state, &headers, b"").await?;
    let link = store::link_by_assignment(&state.pool, &assignment_id)
        .await?
        .ok_or_else(|| HubError::refused(StatusCode::NOT_FOUND, "not_found", "no such assignment"))?;
    if let Some(listed) = listed_participants(query.as_deref().unwrap_or_default())? {
        let dropped = store::apply_participants(&state.pool, &link, &listed).await?;
        if !dropped.is_empty() {
            tracing::info!(assignment_id, dropped = dropped.len(), "caddie: de-listed users lost their grants");
        }
    }
    // A space that changed since its last report answers with the next
    // `seq`: a hub that drops `seq <= last` must not keep a stale state.
    let fields = status_fields(&store::space_activity(&state.pool, &link.workspace_id).await?);
    let seq = store::status_seq_for(&state.pool, &assignment_id, &fields.to_string()).await?;
    Ok(Json(status_report(&assignment_id, &fields, seq)))
}

/// The hub's current participants on a reconcile, when it sent them:
/// `participants` repeated (`?participants=a&participants=b`), or one
/// comma-separated value (`?participants=a,b`), or both. Present but empty
/// (`?participants=`) is a real answer — nobody — and drops every
/// launch-provisioned grant; absent is no answer and changes nothing.
pub fn listed_participants(query: &str) -> Result<Option<Vec<String>>, HubError> {
    let mut present = false;
    let mut listed: Vec<String> = Vec::new();
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if key != "participants" {
            continue;
        }
        present = true;
        for name in value.split(',').filter(|n| !n.is_empty()) {
            if !token::is_username(name) {
                return Err(HubError::bad_request("participants out of shape"));
            }
            if !listed.iter().any(|l| l == name) {
                listed.push(name.to_owned());
            }
        }
    }
    if listed.len() > 1000 {
        return Err(HubError::bad_request("more than 1000 participants"));
    }
    Ok(present.then_some(listed))
}

#[derive(Deserialize)]
struct RevokeRequest {
    username: String,
    assignment_id: String,
}

/// `POST /caddie/api/revoke` (§7): drops the launch-provisioned grant, ends
/// the user's sessions, acks. Idempotent: the hub retries until acked.
pub async fn revoke(
    State(state): State<CaddieState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, HubError> {
    verified(&state, &headers, &body).await?;
    let request: RevokeRequest = body_of(&body)?;
    if !token::is_username(&request.username) || !token::is_id(&request.assignment_id, 64) {
        return Err(HubError::bad_request("username or assignment_id out of shape"));
    }
    let mut dropped = false;
    if let Some(link) = store::link_by_assignment(&state.pool, &request.assignment_id).await? {
        dropped = store::revoke_launch_grant(&state.pool, &link.workspace_id, &request.username).await?;
        if dropped {
            let detail = json!({ "assignment_id": request.assignment_id });
            let (workspace, user) = (Some(link.workspace_id.as_str()), Some(request.username.as_str()));
            crate::db::audit::record(&state.pool, "caddie-hub", "revoke", workspace, user, &detail).await?;
        }
    }
    let sessions = store::delete_sessions_of(&state.pool, &request.username).await?;
    tracing::info!(assignment_id = %request.assignment_id, dropped, sessions, "caddie: revocation acked");
    Ok(Json(json!({ "status": "revoked", "assignment_id": request.assignment_id, "username": request.username })))
}

#[cfg(test)]
mod tests {
    use super::listed_participants;

    fn listed(query: &str) -> Option<Vec<String>> {
        listed_participants(query).unwrap()
    }

    #[test]
    fn participants_come_repeated_or_comma_separated_and_empty_is_an_answer() {
        let both = Some(vec!["alice".to_string(), "bob".into(), "carol".into()]);
        assert_eq!(listed("participants=alice&participants=bob&participants=carol"), both);
        assert_eq!(listed("participants=alice,bob,carol"), both);
        assert_eq!(listed("participants=alice%2Cbob&participants=carol&participants=bob"), both);
        assert_eq!(listed("participants=alice,,bob,carol,"), both);
        // Present and empty: nobody (every launch grant goes).
        assert_eq!(listed("participants="), Some(vec![]));
        assert_eq!(listed("participants"), Some(vec![]));
        assert_eq!(listed("other=1&participants=&x=y"), Some(vec![]));
        // Absent: no answer.
        assert_eq!(listed(""), None);
        assert_eq!(listed("participant=alice&participantsx=bob"), None);
    }

    #[test]
    fn a_participant_out_of_shape_refuses_the_whole_list() {
        for query in ["participants=al ice", "participants=alice,b%3Cob", "participants=a;b", "participants=%00"] {
            assert!(listed_participants(query).is_err(), "{query}");
        }
        let many: Vec<String> = (0..1001).map(|i| format!("u{i}")).collect();
        assert!(listed_participants(&format!("participants={}", many.join(","))).is_err());
    }
}
