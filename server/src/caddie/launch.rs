//! The launch hand-off (caddie-tool-contract-ct1.md §3, §4): `GET
//! /launch?lt=` verifies and burns the token and 303s to a token-free URL;
//! `GET /caddie/open?cctx=` signs the user in and provisions a grant when
//! every condition of §4 holds.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::error::CaddieError;
use super::pages::{self, Surface};
use super::state::{Caddie, CaddieState, DEFAULT_LEVEL, PARTICIPANTS_FRESH_MS, see_other, signed_in, to_login};
use super::token;
use crate::db::caddie as store;
use crate::ids::{now_ms, now_secs};

#[derive(Deserialize)]
pub(super) struct LaunchQuery {
    lt: Option<String>,
    tour: Option<String>,
}

/// `GET /launch?lt=` (§3): verify, then burn the `jti` before any other
/// work, then a launch context, then 303 to a token-free URL. This URL
/// never renders content of its own; the request log carries no query.
pub(super) async fn redeem_launch(
    State(state): State<CaddieState>,
    Query(q): Query<LaunchQuery>,
) -> Result<Response, CaddieError> {
    let hub = &state.caddie.config.hub_origin;
    let Some(lt) = q.lt else { return Ok(pages::invalid_link(hub)) };
    let ctx = match accept(&state, &lt).await? {
        Ok(ctx) => ctx,
        Err(Refusal::Invalid) => return Ok(pages::invalid_link(hub)),
        Err(Refusal::Version) => return Ok(pages::version_mismatch(hub)),
        Err(Refusal::Expired { asg }) => return Ok(pages::link_expired(hub, &asg)),
    };
    let tour = if q.tour.as_deref() == Some("1") { "&tour=1" } else { "" };
    Ok(see_other(&format!("/caddie/open?cctx={ctx}{tour}")))
}

/// Why a launch token was not taken.
pub(super) enum Refusal {
    /// Forged, malformed or not for us: nothing in it is trusted, nothing burnt.
    Invalid,
    /// For another contract version.
    Version,
    /// Past `exp`, or already used: the hub can mint a fresh one for `asg`.
    Expired { asg: String },
}

/// Takes a launch token, for `/launch` and the embed's redeem alike:
/// verified, then its `jti` burnt before any other work (a second use is
/// refused, and a redeem that fails later still leaves it dead), then a
/// launch context whose id is answered.
pub(super) async fn accept(state: &CaddieState, lt: &str) -> anyhow::Result<Result<String, Refusal>> {
    let caddie = &state.caddie;
    let hub = &caddie.config.hub_origin;
    let claims = match token::verify(lt, &caddie.keys, &caddie.config.slug, hub, now_secs()) {
        Ok(claims) => claims,
        Err(token::LaunchError::Invalid(why)) => {
            tracing::info!(why, "caddie: launch token refused");
            return Ok(Err(Refusal::Invalid));
        }
        Err(token::LaunchError::Version) => {
            tracing::warn!("caddie: launch token for another contract version");
            return Ok(Err(Refusal::Version));
        }
        Err(token::LaunchError::Expired { asg }) => {
            tracing::info!(assignment_id = %asg, "caddie: expired launch token");
            return Ok(Err(Refusal::Expired { asg }));
        }
    };
    if !store::burn_jti(&state.pool, &claims.jti, claims.exp).await? {
        tracing::info!(assignment_id = %claims.asg, "caddie: replayed launch token");
        return Ok(Err(Refusal::Expired { asg: claims.asg }));
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
    .await?;
    store::set_return_url(&state.pool, &claims.asg, &claims.ret).await?;
    tracing::info!(assignment_id = %claims.asg, "caddie: launch accepted");
    Ok(Ok(ctx))
}

#[derive(Deserialize)]
pub(super) struct OpenQuery {
    cctx: Option<String>,
    tour: Option<String>,
    /// `1`: inside the hub's frame (embed mode, §9).
    embed: Option<String>,
}

/// Identity, then provisioning (§4), then the space.
pub(super) async fn open_launch(
    State(state): State<CaddieState>,
    client: Option<axum::Extension<crate::client_addr::ClientAddr>>,
    headers: HeaderMap,
    Query(q): Query<OpenQuery>,
) -> Result<Response, CaddieError> {
    let caddie = &state.caddie;
    let hub = &caddie.config.hub_origin;
    let embed = q.embed.as_deref() == Some("1");
    let surface = if embed { Surface::Embed(hub) } else { Surface::Page(hub) };
    let Some(ctx_id) = q.cctx.filter(|c| c.len() == 32 && c.bytes().all(|b| b.is_ascii_hexdigit())) else {
        return Ok(surface.invalid_link());
    };
    let tour = if q.tour.as_deref() == Some("1") { "&tour=1" } else { "" };
    let framed = if embed { "&embed=1" } else { "" };
    let here = format!("/caddie/open?cctx={ctx_id}{tour}{framed}");
    let Some(user) = signed_in(&state, &headers, client.as_deref()).await? else { return Ok(to_login(&here)) };
    let Some(ctx) = store::ctx(&state.pool, &ctx_id).await? else { return Ok(surface.invalid_link()) };
    let Some(link) = store::link_by_assignment(&state.pool, &ctx.assignment_id).await? else {
        return Ok(surface.not_ready(&ctx.return_url));
    };
    let space = format!("/caddie/spaces/{}?cctx={ctx_id}{tour}{framed}", link.workspace_id);
    // Someone who holds a grant of their own proceeds as themselves.
    if store::has_grant(&state.pool, &link.workspace_id, &user).await? {
        return Ok(see_other(&space));
    }
    if user != ctx.sub {
        tracing::info!(assignment_id = %ctx.assignment_id, "caddie: link opened by a different user");
        let idp = caddie.config.oidc.issuer.origin().ascii_serialization();
        return Ok(surface.different_user(&ctx.return_url, &here, &idp));
    }
    // Only the redeem flow provisions: the token itself must still be valid.
    if now_secs() > ctx.token_exp + token::SKEW_SECS {
        return Ok(surface.link_expired(&ctx.assignment_id));
    }
    let participants = match current_participants(&state, caddie, &link).await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "caddie: cannot confirm the participants with the hub");
            return Ok(surface.no_access(&ctx.return_url));
        }
    };
    if !participants.contains(&user) {
        tracing::info!(assignment_id = %ctx.assignment_id, "caddie: launch by a non-participant; nothing provisioned");
        return Ok(surface.no_access(&ctx.return_url));
    }
    if store::grant_from_launch(&state.pool, &link.workspace_id, &user, DEFAULT_LEVEL, &ctx.assignment_id).await? {
        let detail = json!({ "jti": ctx.jti, "assignment_id": ctx.assignment_id, "level": DEFAULT_LEVEL });
        crate::db::audit::record(&state.pool, "caddie-launch", "grant", Some(&link.workspace_id), Some(&user), &detail)
            .await?;
        tracing::info!(assignment_id = %ctx.assignment_id, "caddie: launch-provisioned grant");
    }
    Ok(see_other(&space))
}

/// The assignment's participants, confirmed with the hub when the local
/// copy is older than 15 minutes (a signed `GET /api/tool/assignments/{asg}`).
async fn current_participants(
    state: &CaddieState,
    caddie: &Caddie,
    link: &store::LinkRow,
) -> anyhow::Result<Vec<String>> {
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
