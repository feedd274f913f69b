//! The launch hand-off (caddie-tool-contract-ct1.md §3, §4): `GET
//! /launch?lt=` verifies and burns the token and 303s to a token-free URL;
//! `GET /caddie/open?cctx=` signs the user in and provisions a grant when
//! every condition of §4 holds.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::{
    Caddie, DEFAULT_LEVEL, PARTICIPANTS_FRESH_MS, caddie, internal, pages, see_other, signed_in, store, to_login,
    token, urlencode,
};
use crate::ids::{now_ms, now_secs};
use crate::state::AppState;

#[derive(Deserialize)]
pub(super) struct LaunchQuery {
    lt: Option<String>,
    tour: Option<String>,
}

/// `GET /launch?lt=` (§3): verify, then burn the `jti` before any other
/// work, then a launch context, then 303 to a token-free URL. This URL
/// never renders content of its own; the request log carries no query.
pub(super) async fn redeem_launch(State(state): State<AppState>, Query(q): Query<LaunchQuery>) -> Response {
    let caddie = caddie(&state);
    let hub = &caddie.config.hub_origin;
    let Some(lt) = q.lt else { return pages::invalid_link(hub) };
    let claims = match token::verify(&lt, &caddie.keys, &caddie.config.slug, hub, now_secs()) {
        Ok(claims) => claims,
        Err(token::LaunchError::Invalid(why)) => {
            tracing::info!(why, "caddie: launch token refused");
            return pages::invalid_link(hub);
        }
        Err(token::LaunchError::Version) => {
            tracing::warn!("caddie: launch token for another contract version");
            return pages::version_mismatch(hub);
        }
        Err(token::LaunchError::Expired { asg }) => {
            tracing::info!(assignment_id = %asg, "caddie: expired launch token");
            return pages::link_expired(hub, &asg);
        }
    };
    match store::burn_jti(&state.pool, &claims.jti, claims.exp).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(assignment_id = %claims.asg, "caddie: replayed launch token");
            return pages::link_expired(hub, &claims.asg);
        }
        Err(e) => return internal(e),
    }
    let ctx = store::insert_ctx(
        &state.pool,
        store::NewCtx {
            assignment_id: &claims.asg,
            project_slug: &claims.prj,
            project_name: &claims.pnm,
            stage_label: &claims.stg,
            return_url: &claims.ret,
            sub: &claims.sub,
            jti: &claims.jti,
            token_exp: claims.exp,
        },
    )
    .await;
    let ctx = match ctx {
        Ok(ctx) => ctx,
        Err(e) => return internal(e),
    };
    if let Err(e) = store::set_return_url(&state.pool, &claims.asg, &claims.ret).await {
        return internal(e);
    }
    let tour = if q.tour.as_deref() == Some("1") { "&tour=1" } else { "" };
    tracing::info!(assignment_id = %claims.asg, "caddie: launch accepted");
    see_other(&format!("/caddie/open?cctx={ctx}{tour}"))
}

#[derive(Deserialize)]
pub(super) struct OpenQuery {
    cctx: Option<String>,
    tour: Option<String>,
}

/// Identity, then provisioning (§4), then the space.
pub(super) async fn open_launch(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<OpenQuery>,
) -> Response {
    let caddie = caddie(&state);
    let Some(ctx_id) = q.cctx.filter(|c| c.len() == 32 && c.bytes().all(|b| b.is_ascii_hexdigit())) else {
        return pages::invalid_link(&caddie.config.hub_origin);
    };
    let tour = if q.tour.as_deref() == Some("1") { "&tour=1" } else { "" };
    let here = format!("/caddie/open?cctx={ctx_id}{tour}");
    let user = match signed_in(&state, &headers).await {
        Ok(Some(user)) => user,
        Ok(None) => return to_login(&here),
        Err(e) => return internal(e),
    };
    let ctx = match store::ctx(&state.pool, &ctx_id).await {
        Ok(Some(ctx)) => ctx,
        Ok(None) => return pages::invalid_link(&caddie.config.hub_origin),
        Err(e) => return internal(e),
    };
    let link = match store::link_by_assignment(&state.pool, &ctx.assignment_id).await {
        Ok(Some(link)) => link,
        Ok(None) => return pages::not_ready(&ctx.return_url),
        Err(e) => return internal(e),
    };
    let space = format!("/caddie/spaces/{}?cctx={ctx_id}{tour}", link.workspace_id);
    match store::has_grant(&state.pool, &link.workspace_id, &user).await {
        // Someone who holds a grant of their own proceeds as themselves.
        Ok(true) => return see_other(&space),
        Ok(false) => {}
        Err(e) => return internal(e),
    }
    if user != ctx.sub {
        tracing::info!(assignment_id = %ctx.assignment_id, "caddie: link opened by a different user");
        let switch = format!("/caddie/login?switch=1&next={}", urlencode(&here));
        return pages::different_user(&ctx.return_url, &switch);
    }
    // Only the redeem flow provisions: the token itself must still be valid.
    if now_secs() > ctx.token_exp + token::SKEW_SECS {
        return pages::link_expired(&caddie.config.hub_origin, &ctx.assignment_id);
    }
    let participants = match current_participants(&state, caddie, &link).await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "caddie: cannot confirm the participants with the hub");
            return pages::no_access(&ctx.return_url);
        }
    };
    if !participants.contains(&user) {
        tracing::info!(assignment_id = %ctx.assignment_id, "caddie: launch by a non-participant; nothing provisioned");
        return pages::no_access(&ctx.return_url);
    }
    let granted =
        store::grant_from_launch(&state.pool, &link.workspace_id, &user, DEFAULT_LEVEL, &ctx.assignment_id).await;
    match granted {
        Ok(true) => {
            let detail = json!({ "jti": ctx.jti, "assignment_id": ctx.assignment_id, "level": DEFAULT_LEVEL });
            if let Err(e) =
                store::audit(&state.pool, "caddie-launch", "grant", Some(&link.workspace_id), Some(&user), &detail)
                    .await
            {
                return internal(e);
            }
            tracing::info!(assignment_id = %ctx.assignment_id, "caddie: launch-provisioned grant");
        }
        Ok(false) => {}
        Err(e) => return internal(e),
    }
    see_other(&space)
}

/// The assignment's participants, confirmed with the hub when the local
/// copy is older than 15 minutes (a signed `GET /api/tool/assignments/{asg}`).
async fn current_participants(state: &AppState, caddie: &Caddie, link: &store::LinkRow) -> anyhow::Result<Vec<String>> {
    if now_ms() - link.participants_at <= PARTICIPANTS_FRESH_MS {
        return Ok(link.participants());
    }
    let path = format!("/api/tool/assignments/{}", link.assignment_id);
    let url = caddie.config.hub_origin.join(&path)?;
    let answer = caddie.signed(caddie.hub.get(url), b"").send().await?.error_for_status()?;
    #[derive(Deserialize)]
    struct Assignment {
        participants: Vec<String>,
    }
    let assignment: Assignment = answer.json().await?;
    store::set_participants(&state.pool, &link.assignment_id, &assignment.participants).await?;
    Ok(assignment.participants)
}
