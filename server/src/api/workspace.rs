//! The workspace itself (api key auth): `GET /v1/workspace` shows its
//! name, allowed origins and limits; `PATCH /v1/workspace` changes any of
//! them. The widget page's `frame-ancestors` and the limits follow at once
//! (both are read with the workspace on every request).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::{WorkspaceKey, parse_origin, valid_name};
use super::state::ApiState;
use widget::wire::{Theme, Welcome};

use crate::config::{RateLimits, WorkspaceLimits};
use crate::db;
use crate::http::{ApiError, ApiJson};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(show_workspace, update_workspace))
}

/// A workspace as its host sees it: never its secrets.
#[derive(Serialize, utoipa::ToSchema)]
struct ShownWorkspace {
    id: String,
    name: String,
    /// The origins whose pages may embed the widget.
    allowed_origins: Vec<String>,
    /// The limits it set itself (null: the operator's holds).
    limits: WorkspaceLimits,
    /// The limits that hold: its own, never above the operator's.
    effective_limits: EffectiveLimits,
    /// Its default widget look (a host page's `init` options win).
    theme: ShownTheme,
    /// Days its conversations are kept after their last message; null keeps them.
    retention_days: Option<i64>,
    /// The empty chat's greeting and suggested prompts, per language
    /// (`en`, `es`, `fr`, `de`, `ja`, `ar`): a visitor sees their
    /// language's, else the widget's neutral greeting.
    welcome: Welcome,
    /// The browser features its MCP Apps may have (each app gets those its
    /// resource asks for in `_meta.ui.permissions` and this list holds).
    app_permissions: Vec<AppPermission>,
    /// The kinds of file its visitors may attach, by media type (each
    /// judged by its bytes): by default every one the server takes.
    attachment_types: Vec<AttachmentType>,
    /// The current embed secret's key id (`kid` in a token's header).
    embed_secret_kid: String,
    /// While a rotated embed secret still verifies tokens: until when (RFC 3339).
    previous_embed_secret_valid_until: Option<String>,
    /// While a rotated api key still works: until when (RFC 3339).
    previous_api_key_valid_until: Option<String>,
    /// Whether questions about the host are answered only from its
    /// knowledge sources and tools (the assistant says it does not know
    /// when they do not cover one).
    knowledge_only: bool,
    /// How its knowledge is searched.
    knowledge: KnowledgeRetrieval,
}

/// How a workspace's knowledge is searched: full text (BM25) always; with
/// an embeddings model (the workspace's own, set with its model, or the
/// server's `CA_EMBEDDINGS_MODEL`), vectors too, the two rankings fused.
#[derive(Serialize, utoipa::ToSchema)]
struct KnowledgeRetrieval {
    /// `full_text`, or `hybrid` (full text and embeddings).
    retrieval: &'static str,
    /// The embeddings model, when there is one.
    embeddings_model: Option<String>,
}

/// The limits that hold for a workspace.
#[derive(Serialize, utoipa::ToSchema)]
struct EffectiveLimits {
    turns_per_user_per_minute: u64,
    turns_per_workspace_per_minute: u64,
    /// The operator's alone: a client address may use several workspaces.
    turns_per_ip_per_minute: u64,
    component_calls_per_10s: u64,
    /// Null: no budget.
    daily_tokens: Option<u64>,
    /// Null: no budget.
    user_daily_tokens: Option<u64>,
}

impl EffectiveLimits {
    fn of(limits: &RateLimits) -> Self {
        let budget = |n: u64| (n > 0).then_some(n);
        Self {
            turns_per_user_per_minute: limits.turns_per_user,
            turns_per_workspace_per_minute: limits.turns_per_workspace,
            turns_per_ip_per_minute: limits.turns_per_ip,
            component_calls_per_10s: limits.component_calls,
            daily_tokens: budget(limits.workspace_daily_tokens),
            user_daily_tokens: budget(limits.user_daily_tokens),
        }
    }
}

/// What to change; whatever is absent stays as it is.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct WorkspacePatch {
    /// 1 to 200 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    name: Option<String>,
    /// Replaces the origins whose pages may embed the widget.
    #[schema(value_type = Option<Vec<super::setup::Origin>>)]
    allowed_origins: Option<Vec<String>>,
    /// Limits to set (a number from 1) or to give back to the operator's
    /// (null); absent ones stay. The operator's stay a ceiling:
    /// `effective_limits` shows what holds.
    #[serde(default, deserialize_with = "crate::http::object_only")]
    limits: Option<LimitsPatch>,
    /// Replaces the default widget look; `{}` clears it. Every value is
    /// checked: one out of shape refuses the change.
    #[serde(default, deserialize_with = "crate::http::object_only")]
    theme: Option<ShownTheme>,
    /// Days to keep conversations after their last message (1 to 3650;
    /// older ones are deleted within the hour), or null to keep them.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 3650)]
    retention_days: Option<Option<u64>>,
    /// Replaces the start screen per language (`{}` clears it): each a
    /// `greeting` (1 to 300 characters) and up to four `prompts` (1 to 100).
    #[serde(default, deserialize_with = "crate::http::object_only")]
    welcome: Option<Welcome>,
    /// Replaces the browser features MCP Apps may have (`[]`: none, the default).
    app_permissions: Option<Vec<AppPermission>>,
    /// Narrows the kinds of file visitors may attach (`[]`: none; null:
    /// every one the server takes, the default).
    #[serde(default, deserialize_with = "present_or_null")]
    #[schema(value_type = Option<Vec<AttachmentType>>)]
    attachment_types: Option<Option<Vec<AttachmentType>>>,
    /// Answer questions about the host only from its knowledge sources and
    /// tools, and say so plainly when they do not cover one.
    knowledge_only: Option<bool>,
}

/// A kind of file a visitor may attach, by its media type (what its bytes
/// are, never its name).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, utoipa::ToSchema)]
enum AttachmentType {
    #[serde(rename = "image/png")]
    Png,
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[serde(rename = "image/webp")]
    Webp,
    #[serde(rename = "image/gif")]
    Gif,
    #[serde(rename = "application/pdf")]
    Pdf,
    #[serde(rename = "text/plain")]
    Text,
}

impl AttachmentType {
    const ALL: [AttachmentType; 6] = [Self::Png, Self::Jpeg, Self::Webp, Self::Gif, Self::Pdf, Self::Text];

    fn media_type(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    }

    fn of(media_type: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::from(media_type)).ok()
    }
}

/// A browser feature an MCP App may be granted (a Permissions Policy
/// feature; MCP Apps' `_meta.ui.permissions` asks for it as `camera`,
/// `microphone`, `geolocation` or `clipboardWrite`). A host page must
/// delegate it to the widget too (`data-app-permissions`).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
enum AppPermission {
    Camera,
    Microphone,
    Geolocation,
    ClipboardWrite,
}

impl AppPermission {
    /// Its Permissions Policy feature: its name on the wire.
    fn feature(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    }

    fn of(feature: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::from(feature)).ok()
    }
}

/// A widget look: each value optional.
#[derive(Serialize, Deserialize, Default, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ShownTheme {
    /// `light` or `dark`; none follows the visitor's preference.
    #[schema(pattern = "^(light|dark)$")]
    mode: Option<String>,
    /// `#rrggbb`.
    #[schema(pattern = "^#[0-9A-Fa-f]{6}$")]
    accent: Option<String>,
    /// Corner radius in pixels.
    #[serde(default, deserialize_with = "small_whole")]
    #[schema(minimum = 0, maximum = 32)]
    radius: Option<u8>,
    /// A CSS font-family list: letters, digits, spaces, commas, quotes and hyphens.
    #[schema(min_length = 1, max_length = 120, pattern = "^[A-Za-z0-9 ,\"'-]+$")]
    font: Option<String>,
}

/// A whole number up to 255 as JSON Schema allows one (`4` or `4.0`).
fn small_whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u8>, D::Error> {
    crate::http::optional_whole(deserializer)?
        .map(|n| u8::try_from(n).map_err(|_| serde::de::Error::custom(format!("{n} is too large"))))
        .transpose()
}

impl ShownTheme {
    /// The theme, if every value given is valid.
    fn checked(&self) -> Result<Theme, ApiError> {
        let radius = self.radius.map(|r| r.to_string());
        let theme = Theme::parse(self.mode.as_deref(), self.accent.as_deref(), radius.as_deref(), self.font.as_deref());
        let kept = ShownTheme::from(theme.clone());
        if kept != *self {
            return Err(ApiError::BadRequest(
                "theme: mode is light or dark, accent #rrggbb, radius 0 to 32, font a CSS font-family list".into(),
            ));
        }
        Ok(theme)
    }
}

impl From<Theme> for ShownTheme {
    fn from(t: Theme) -> Self {
        Self { mode: t.mode, accent: t.accent, radius: t.radius, font: t.font }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct LimitsPatch {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 1_000_000_000_000_u64)]
    turns_per_user_per_minute: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 1_000_000_000_000_u64)]
    turns_per_workspace_per_minute: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 1_000_000_000_000_u64)]
    component_calls_per_10s: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 1_000_000_000_000_u64)]
    daily_tokens: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 1_000_000_000_000_u64)]
    user_daily_tokens: Option<Option<u64>>,
}

/// A field that is present, null or not: `Some(None)` for null, and
/// (with `default`) `None` when absent. A whole number may be written as
/// JSON Schema allows (`60` or `60.0`).
/// A field that is present, as its value or null (absent: `None`, by `default`).
fn present_or_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<u64>>, D::Error> {
    crate::http::optional_whole(deserializer).map(Some)
}

impl LimitsPatch {
    fn apply(self, own: &mut WorkspaceLimits) {
        let set = |field: &mut Option<u64>, change: Option<Option<u64>>| {
            if let Some(value) = change {
                *field = value;
            }
        };
        set(&mut own.turns_per_user_per_minute, self.turns_per_user_per_minute);
        set(&mut own.turns_per_workspace_per_minute, self.turns_per_workspace_per_minute);
        set(&mut own.component_calls_per_10s, self.component_calls_per_10s);
        set(&mut own.daily_tokens, self.daily_tokens);
        set(&mut own.user_daily_tokens, self.user_daily_tokens);
    }
}

/// The workspace: name, allowed origins and limits.
#[utoipa::path(
    get,
    path = "/v1/workspace",
    tag = "setup",
    security(("api_key" = [])),
    responses((status = 200, description = "The workspace's settings", body = ShownWorkspace)),
)]
async fn show_workspace(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
) -> Result<Json<ShownWorkspace>, ApiError> {
    let row = db::workspace(&state.pool, &workspace.id).await?.ok_or(ApiError::Unauthorized)?;
    Ok(Json(shown(&state, row).await?))
}

/// Changes the workspace's name, allowed origins or limits.
///
/// A limit above the operator's is kept but does not hold while the
/// operator's is lower (`effective_limits`).
#[utoipa::path(
    patch,
    path = "/v1/workspace",
    tag = "setup",
    security(("api_key" = [])),
    request_body = WorkspacePatch,
    responses((status = 200, description = "The settings as saved", body = ShownWorkspace)),
)]
async fn update_workspace(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(patch): ApiJson<WorkspacePatch>,
) -> Result<Json<ShownWorkspace>, ApiError> {
    let mut row = db::workspace(&state.pool, &workspace.id).await?.ok_or(ApiError::Unauthorized)?;
    let name = match &patch.name {
        Some(name) => valid_name(name)?.to_owned(),
        None => row.name.clone(),
    };
    let origins = match &patch.allowed_origins {
        Some(origins) => origins.iter().map(|o| parse_origin(o)).collect::<Result<Vec<_>, _>>()?,
        None => row.allowed_origins(),
    };
    let mut limits = row.limits();
    if let Some(change) = patch.limits {
        change.apply(&mut limits);
    }
    if let Some(reason) = limits.refusal() {
        return Err(ApiError::BadRequest(reason));
    }
    let theme = match &patch.theme {
        Some(theme) => theme.checked()?,
        None => row.theme(),
    };
    let retention_days = match patch.retention_days {
        Some(Some(days)) if (1..=3650).contains(&days) => Some(days as i64),
        Some(Some(_)) => return Err(ApiError::BadRequest("retention_days must be 1 to 3650, or null".into())),
        Some(None) => None,
        None => row.retention_days,
    };
    let welcome = match patch.welcome {
        Some(welcome) => match welcome.refusal() {
            Some(reason) => return Err(ApiError::BadRequest(reason)),
            None => welcome,
        },
        None => row.welcome(),
    };
    let app_permissions: Vec<String> = match patch.app_permissions {
        Some(mut permissions) => {
            permissions.sort();
            permissions.dedup();
            permissions.into_iter().map(AppPermission::feature).collect()
        }
        None => row.app_permissions(),
    };
    let attachment_types: Option<Vec<String>> = match patch.attachment_types {
        Some(Some(mut types)) => {
            types.sort();
            types.dedup();
            Some(types.into_iter().map(AttachmentType::media_type).collect())
        }
        Some(None) => None,
        None => row.attachment_types(),
    };
    let settings = db::WorkspaceSettings {
        name: &name,
        origins: &origins,
        limits: &limits,
        theme: &theme,
        retention_days,
        welcome: &welcome,
        app_permissions: &app_permissions,
        attachment_types: attachment_types.as_deref(),
        knowledge_only: patch.knowledge_only.unwrap_or(row.knowledge_only != 0),
    };
    let settings_knowledge_only = settings.knowledge_only;
    db::set_workspace_settings(&state.pool, &row.id, settings).await?;
    tracing::info!(workspace_id = %row.id, "workspace settings changed");
    let mut changed = serde_json::Map::new();
    let mut note = |field: &str, from: serde_json::Value, to: serde_json::Value| {
        if from != to {
            changed.insert(field.to_owned(), serde_json::json!({ "from": from, "to": to }));
        }
    };
    note("name", row.name.clone().into(), name.clone().into());
    note("allowed_origins", row.allowed_origins().into(), origins.clone().into());
    note(
        "limits",
        serde_json::to_value(row.limits()).unwrap_or_default(),
        serde_json::to_value(&limits).unwrap_or_default(),
    );
    note(
        "theme",
        serde_json::to_value(row.theme()).unwrap_or_default(),
        serde_json::to_value(&theme).unwrap_or_default(),
    );
    note("retention_days", row.retention_days.into(), retention_days.into());
    note(
        "welcome",
        serde_json::to_value(row.welcome()).unwrap_or_default(),
        serde_json::to_value(&welcome).unwrap_or_default(),
    );
    note("app_permissions", row.app_permissions().into(), app_permissions.clone().into());
    note("attachment_types", row.attachment_types().into(), attachment_types.clone().into());
    note("knowledge_only", (row.knowledge_only != 0).into(), settings_knowledge_only.into());
    if !changed.is_empty() {
        let detail = serde_json::Value::Object(changed);
        db::audit::record(&state.pool, "api-key", "workspace.updated", Some(&row.id), None, &detail).await?;
    }
    row.name = name;
    row.allowed_origins = serde_json::to_string(&origins).map_err(anyhow::Error::from)?;
    row.limits = serde_json::to_string(&limits).map_err(anyhow::Error::from)?;
    row.theme = serde_json::to_string(&theme).map_err(anyhow::Error::from)?;
    row.retention_days = retention_days;
    row.welcome = serde_json::to_string(&welcome).map_err(anyhow::Error::from)?;
    row.app_permissions = serde_json::to_string(&app_permissions).map_err(anyhow::Error::from)?;
    row.attachment_types =
        attachment_types.map(|t| serde_json::to_string(&t)).transpose().map_err(anyhow::Error::from)?;
    row.knowledge_only = i64::from(settings_knowledge_only);
    Ok(Json(shown(&state, row).await?))
}

async fn shown(state: &ApiState, row: db::WorkspaceRow) -> Result<ShownWorkspace, ApiError> {
    let limits = row.limits();
    let now = crate::ids::now_ms();
    let while_valid = |until: Option<i64>| until.filter(|u| *u > now).map(crate::ids::rfc3339);
    Ok(ShownWorkspace {
        theme: row.theme().into(),
        retention_days: row.retention_days,
        welcome: row.welcome(),
        app_permissions: row.app_permissions().iter().filter_map(|f| AppPermission::of(f)).collect(),
        attachment_types: match row.attachment_types() {
            Some(types) => types.iter().filter_map(|t| AttachmentType::of(t)).collect(),
            None => AttachmentType::ALL.to_vec(),
        },
        embed_secret_kid: crate::auth::kid(state.vault.open(&row.embed_secret_enc)?.expose()),
        previous_embed_secret_valid_until: while_valid(row.embed_secret_prev_until),
        previous_api_key_valid_until: while_valid(row.api_key_prev_until),
        effective_limits: EffectiveLimits::of(&state.limits.config.for_workspace(&limits)),
        knowledge_only: row.knowledge_only != 0,
        knowledge: {
            let model = state.engine.knowledge.embeddings_model(&row.id).await;
            KnowledgeRetrieval {
                retrieval: if model.is_some() { "hybrid" } else { "full_text" },
                embeddings_model: model,
            }
        },
        allowed_origins: row.allowed_origins(),
        limits,
        id: row.id,
        name: row.name,
    })
}

#[cfg(test)]
mod tests {
    use super::AppPermission;

    #[test]
    fn the_settings_app_permissions_are_the_features_an_app_may_be_granted() {
        for (_, feature) in crate::mcp::apps::PERMISSIONS {
            assert_eq!(AppPermission::of(feature).map(AppPermission::feature).as_deref(), Some(feature));
        }
        assert!(AppPermission::of("clipboardWrite").is_none() && AppPermission::of("usb").is_none());
    }
}
