//! The usage page: turns, tokens, tool calls and refusals by limit per
//! day (`GET /v1/workspace/usage`), drawn as charts.

use ::console::{Body as PageBody, Usage, UsageDay};
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;

use super::records::read_list;
use super::shared::{InWorkspace, page, query_of, render, text};

/// The usage page's range (either day optional, empty when absent).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct UsageForm {
    since: String,
    until: String,
}

fn counts(value: &Value) -> UsageDay {
    let number = |key: &str| value[key].as_u64().unwrap_or(0);
    UsageDay {
        day: text(&value["day"]),
        turns: number("turns"),
        input_tokens: number("input_tokens"),
        output_tokens: number("output_tokens"),
        tool_calls: number("tool_calls"),
        refusals: value["refusals"]
            .as_object()
            .map(|r| r.iter().map(|(limit, n)| (limit.clone(), n.as_u64().unwrap_or(0))).collect())
            .unwrap_or_default(),
    }
}

/// What the workspace used from one day to another (by default the last
/// 30 days), in charts and a table.
pub(super) async fn usage(console: InWorkspace, Query(form): Query<UsageForm>) -> Result<Response, Response> {
    let (since, until) = (form.since.trim(), form.until.trim());
    let usage = Usage { since: since.into(), until: until.into(), ..Usage::default() };
    let mut page = page("Usage", "Your workspace".into(), None, PageBody::Usage(usage));
    let path = format!("/v1/workspace/usage?{}", query_of(&[("since", since), ("until", until)]));
    let json = read_list(&console, &mut page, Ok(path)).await?;
    page.body = PageBody::Usage(Usage {
        since: text(&json["since"]),
        until: text(&json["until"]),
        days: json["days"].as_array().map(|days| days.iter().map(counts).collect()).unwrap_or_default(),
        totals: counts(&json["totals"]),
    });
    Ok(render(StatusCode::OK, page))
}
