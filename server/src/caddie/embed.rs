//! Embed mode (caddie-tool-contract-ct1.md §9): the hub frames
//! `{base_url}/embed#lt=…`; the page's script reads the token from the
//! fragment (never sent to a server, never in a Referer) and redeems it
//! with `POST /api/embed/redeem` — the same verification and burn-first
//! rule as `/launch` — then goes on, in the frame, to
//! `/caddie/open?cctx=…&embed=1`: the same sign-in (silent first, framed)
//! and provisioning, ending on the space rendered chrome-less for the frame.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::error::CaddieError;
use super::launch::{Refusal, accept};
use super::pages;
use super::state::CaddieState;

/// `GET /embed`: the page the hub frames.
pub(super) async fn entry(State(state): State<CaddieState>) -> Response {
    pages::embed_entry(&state.caddie.config.hub_origin)
}

#[derive(Deserialize)]
struct RedeemBody {
    lt: String,
    #[serde(default)]
    tour: bool,
}

/// `POST /api/embed/redeem {lt, tour?}`: `200 {open}` (where the frame goes
/// next), `401 link_expired` (used or too old: ask the hub to relaunch),
/// `401 invalid_link` (forged or not for us: nothing was burnt),
/// `409 contract_mismatch`, `400 bad_request`.
pub(super) async fn redeem(State(state): State<CaddieState>, body: Bytes) -> Result<Response, CaddieError> {
    let Ok(body) = serde_json::from_slice::<RedeemBody>(&body) else {
        return Ok(refusal(StatusCode::BAD_REQUEST, "bad_request", "the body must be {\"lt\": \"<launch token>\"}"));
    };
    let answer = match accept(&state, &body.lt).await? {
        Ok(ctx) => {
            let tour = if body.tour { "&tour=1" } else { "" };
            pages::no_store(Json(json!({ "open": format!("/caddie/open?cctx={ctx}&embed=1{tour}") })).into_response())
        }
        Err(Refusal::Expired { .. }) => {
            refusal(StatusCode::UNAUTHORIZED, "link_expired", "this link was already used or is too old")
        }
        Err(Refusal::Invalid) => refusal(StatusCode::UNAUTHORIZED, "invalid_link", "this link is not valid"),
        Err(Refusal::Version) => {
            refusal(StatusCode::CONFLICT, "contract_mismatch", "this link is for another contract version")
        }
    };
    Ok(answer)
}

fn refusal(status: StatusCode, code: &str, message: &str) -> Response {
    pages::no_store((status, Json(json!({ "error": message, "code": code }))).into_response())
}

/// `GET /caddie/embed/signed-in`: where the popup's sign-in ends.
pub(super) async fn signed_in_popup() -> Response {
    pages::popup_signed_in()
}

/// Whether a sign-in's destination is an embedded page (`embed=1` in its query).
pub(super) fn is_embed_path(path: &str) -> bool {
    path.split_once('?')
        .is_some_and(|(_, query)| url::form_urlencoded::parse(query.as_bytes()).any(|(k, v)| k == "embed" && v == "1"))
}
