//! Provisioning a space for an assignment (caddie-tool-contract-ct1.md §2).

use super::state::CaddieState;
use crate::db::caddie as store;

/// Provisioning (§2), idempotent on `assignment_id`: the first call makes
/// the assistant space (a workspace of its own) and its link; later calls
/// refresh the participants and return the same space. The space's data is
/// the assistant's own and survives the hub forgetting it.
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
    let name: String = project_name.chars().take(200).collect();
    let workspace = state.workspaces.create(&name, &[]).await?;
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
