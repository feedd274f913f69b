//! Provisioning a space for an assignment (caddie-tool-contract-ct1.md §2).

use serde_json::Value;

use super::state::CaddieState;
use crate::db::caddie as store;
use crate::db::{self, NewIntegration};

/// Provisioning refused for what the hub sent (a `400` to the hub).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProvisionRefused(pub String);

/// The tool-host preset the frozen config names (`"assistant": {"tools":
/// "<name>"}`), if any.
fn preset_name(config: &Value) -> Result<Option<&str>, ProvisionRefused> {
    match config.get("assistant").and_then(|a| a.get("tools")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => Ok(Some(name)),
        Some(_) => Err(ProvisionRefused("config.assistant.tools must be the name of a tool-host preset".into())),
    }
}

/// Provisioning (§2), idempotent on `assignment_id`: the first call makes
/// the assistant space (a workspace of its own) and its link; later calls
/// refresh the participants and return the same space. The space's data is
/// the assistant's own and survives the hub forgetting it. A config that
/// names a tool-host preset connects the new space to it; a name no preset
/// has refuses the provisioning ([`ProvisionRefused`]) before anything is
/// made.
pub async fn provision(
    state: &CaddieState,
    assignment_id: &str,
    project_id: &str,
    project_name: &str,
    config: &serde_json::Value,
    participants: &[String],
    stages: &serde_json::Value,
) -> anyhow::Result<String> {
    if let Some(link) = store::link_by_assignment(&state.pool, assignment_id).await? {
        store::apply_participants(&state.pool, &link, participants).await?;
        store::set_stages(&state.pool, assignment_id, stages).await?;
        return Ok(link.workspace_id);
    }
    let preset = match preset_name(config)? {
        Some(name) => Some(db::preset(&state.pool, name).await?.ok_or_else(|| {
            ProvisionRefused(format!("config.assistant.tools names no tool-host preset of this assistant: `{name}`"))
        })?),
        None => None,
    };
    let name: String = project_name.chars().take(200).collect();
    let workspace = state.workspaces.create(&name, &[]).await?;
    if let Some(preset) = &preset {
        db::upsert_integration(
            &state.pool,
            NewIntegration {
                workspace_id: &workspace.id,
                provider: crate::workspaces::PROVIDER,
                base_url: &preset.base_url,
                secret_enc: &preset.secret_enc,
                allowed_tools: &preset.allowed_tools(),
                builtin: false,
                preset: Some(&preset.name),
                kind: db::KIND_REMOTE_TOOLS,
                trust_annotations: false,
                verbs: "{}",
            },
        )
        .await?;
    }
    store::insert_link(
        &state.pool,
        store::NewLink {
            assignment_id,
            workspace_id: &workspace.id,
            project_id,
            project_name: &name,
            config,
            participants,
            stages,
        },
    )
    .await?;
    tracing::info!(assignment_id, workspace_id = %workspace.id, "caddie: space provisioned");
    Ok(workspace.id)
}
