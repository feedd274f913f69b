//! What the workspace used per UTC day, for the host (api key): turns,
//! model tokens, calls to its tool server, and what each limit turned
//! away. Every day of the range is listed, the quiet ones with zeros.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::http::{ApiError, ApiQuery};
use crate::usage::REFUSED;

/// Days shown when no range is given (ending today).
const DEFAULT_DAYS: i64 = 30;
/// The longest range, in days.
const MAX_DAYS: i64 = 366;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(workspace_usage))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct UsageQuery {
    /// The first day (`YYYY-MM-DD`, UTC; default: 29 days before `until`).
    #[param(format = Date)]
    since: Option<String>,
    /// The last day, included (`YYYY-MM-DD`, UTC; default: today). At most
    /// 366 days after `since`.
    #[param(format = Date)]
    until: Option<String>,
}

/// What was used in a day (or a range).
#[derive(Serialize, Default, Clone, PartialEq, Debug, utoipa::ToSchema)]
pub struct UsageCounts {
    /// Turns that finished, however they ended.
    pub turns: u64,
    /// Model tokens sent.
    pub input_tokens: u64,
    /// Model tokens received.
    pub output_tokens: u64,
    /// Requests to the tool server to run or preview a tool.
    pub tool_calls: u64,
    /// Turns of assistant test runs (`/v1/tests/runs`, `context-assistant
    /// test`): not in `turns`, and counted against no limit or budget.
    pub test_turns: u64,
    /// Model tokens of assistant test runs (sent and received), not in
    /// `input_tokens` or `output_tokens`.
    pub test_tokens: u64,
    /// What each limit turned away (only the limits that did): requests
    /// refused with `429` or `503` (`turns_per_user`, `turns_per_ip`,
    /// `turns_per_workspace`, `component_calls`, `concurrent_turns`,
    /// `open_streams`) and turns cut short (`daily_tokens`,
    /// `turn_iterations`, `turn_time`, `turn_tokens`).
    pub refusals: BTreeMap<String, u64>,
}

impl UsageCounts {
    fn add(&mut self, metric: &str, count: u64) {
        let field = match metric {
            "turns" => &mut self.turns,
            "input_tokens" => &mut self.input_tokens,
            "output_tokens" => &mut self.output_tokens,
            "tool_calls" => &mut self.tool_calls,
            "test_turns" => &mut self.test_turns,
            "test_tokens" => &mut self.test_tokens,
            other => match other.strip_prefix(REFUSED) {
                Some(limit) => self.refusals.entry(limit.to_owned()).or_default(),
                None => return,
            },
        };
        *field = field.saturating_add(count);
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct UsageDay {
    /// `YYYY-MM-DD` (UTC).
    day: String,
    #[serde(flatten)]
    counts: UsageCounts,
}

#[derive(Serialize, utoipa::ToSchema)]
struct Usage {
    since: String,
    until: String,
    /// Every day of the range, oldest first.
    days: Vec<UsageDay>,
    /// The whole range's sums.
    totals: UsageCounts,
}

/// The Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i64 = 2_440_588;

/// A `YYYY-MM-DD` day as days since 1970-01-01.
fn day_number(name: &str, value: &str) -> Result<i64, ApiError> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(value, &format)
        .map_err(|_| ApiError::BadRequest(format!("{name} must be a day, YYYY-MM-DD")))?;
    Ok(i64::from(date.to_julian_day()) - UNIX_EPOCH_JULIAN_DAY)
}

/// Days since 1970-01-01 as `YYYY-MM-DD`.
fn day_text(day: i64) -> String {
    let julian = i32::try_from(day + UNIX_EPOCH_JULIAN_DAY).unwrap_or(i32::MAX);
    time::Date::from_julian_day(julian).map(|d| d.to_string()).unwrap_or_default()
}

/// What the workspace used, day by day (UTC): turns, tokens, tool calls
/// and refusals by limit. The counts of the last few seconds may still be
/// on their way from another replica.
#[utoipa::path(
    get,
    path = "/v1/workspace/usage",
    tag = "setup",
    security(("api_key" = [])),
    params(UsageQuery),
    responses((status = 200, description = "What the workspace used, per day", body = Usage)),
)]
async fn workspace_usage(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiQuery(query): ApiQuery<UsageQuery>,
) -> Result<Json<Usage>, ApiError> {
    let usage = &state.limits.usage;
    let last = query.until.as_deref().map(|d| day_number("until", d)).transpose()?.unwrap_or_else(|| usage.today());
    let first =
        query.since.as_deref().map(|d| day_number("since", d)).transpose()?.unwrap_or(last - (DEFAULT_DAYS - 1));
    if first > last {
        return Err(ApiError::BadRequest("since must not be after until".into()));
    }
    if last - first >= MAX_DAYS {
        return Err(ApiError::BadRequest(format!("the range may span at most {MAX_DAYS} days")));
    }
    let rows = usage.days(&workspace.id, first, last).await?;
    let mut days: Vec<UsageDay> =
        (first..=last).map(|day| UsageDay { day: day_text(day), counts: UsageCounts::default() }).collect();
    let mut totals = UsageCounts::default();
    for (day, metric, count) in rows {
        let count = u64::try_from(count).unwrap_or(0);
        if let Some(entry) = usize::try_from(day - first).ok().and_then(|i| days.get_mut(i)) {
            entry.counts.add(&metric, count);
            totals.add(&metric, count);
        }
    }
    Ok(Json(Usage { since: day_text(first), until: day_text(last), days, totals }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_count_from_1970_and_back() {
        assert_eq!(day_number("d", "1970-01-01").unwrap(), 0);
        assert_eq!(day_number("d", "2026-12-01").unwrap(), 20_788);
        assert_eq!(day_text(20_788), "2026-12-01");
        assert!(day_number("d", "2026-02-30").is_err());
    }

    #[test]
    fn counts_add_by_metric_and_refusals_by_limit() {
        let mut counts = UsageCounts::default();
        counts.add("turns", 2);
        counts.add("refused:turns_per_user", 3);
        counts.add("refused:turns_per_user", 1);
        counts.add("something_new", 9);
        assert_eq!(counts.turns, 2);
        assert_eq!(counts.refusals["turns_per_user"], 4);
        assert_eq!(counts.refusals.len(), 1);
    }
}
