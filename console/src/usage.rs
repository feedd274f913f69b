//! The usage page: what the workspace used per day, drawn as stacked bar
//! charts (inline SVG, no script) with the numbers in a table beside
//! them for screen readers and copying.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::{FilterField, filter_form};

/// What the workspace used from `since` to `until` (days, `YYYY-MM-DD`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub since: String,
    pub until: String,
    /// Every day of the range, oldest first.
    pub days: Vec<UsageDay>,
    /// The range's sums (its `day` is empty).
    pub totals: UsageDay,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageDay {
    pub day: String,
    pub turns: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub tool_calls: u64,
    /// (limit, how many it turned away), the limits that did.
    pub refusals: Vec<(String, u64)>,
}

impl UsageDay {
    fn refused(&self, limit: &str) -> u64 {
        self.refusals.iter().find(|(l, _)| l == limit).map_or(0, |(_, n)| *n)
    }
}

/// What a limit is, in words.
pub fn limit_label(limit: &str) -> String {
    match limit {
        "turns_per_user" => "Turns per user a minute".into(),
        "turns_per_ip" => "Turns per address a minute".into(),
        "turns_per_workspace" => "Turns per workspace a minute".into(),
        "component_calls" => "Component calls".into(),
        "daily_tokens" => "Daily token budget".into(),
        "concurrent_turns" => "Turns at once (server)".into(),
        "open_streams" => "Open streams (server)".into(),
        "turn_iterations" => "Steps in a turn".into(),
        "turn_time" => "Time for a turn".into(),
        "turn_tokens" => "Tokens in a turn".into(),
        other => other.replace('_', " "),
    }
}

/// One stacked part of a chart's bars.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub values: Vec<u64>,
}

/// A number short enough for an axis (`1.2k`, `3.4M`).
pub fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => trimmed(n as f64 / 1e3, "k"),
        _ => trimmed(n as f64 / 1e6, "M"),
    }
}

fn trimmed(value: f64, unit: &str) -> String {
    let text = if value < 10.0 { format!("{value:.1}") } else { format!("{value:.0}") };
    format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
}

/// The axis' top: a round number at or above `max` (1, 2 or 5 times a
/// power of ten).
pub fn axis_top(max: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            let top = step.saturating_mul(m);
            if top >= max || top == u64::MAX {
                return top.max(1);
            }
        }
        step = step.saturating_mul(10);
    }
}

/// Each day's slot in the plot's own units (the plot stretches to the
/// width; its labels are HTML text, at the page's size).
const SLOT: f64 = 10.0;
const BAR: f64 = 7.0;
const PLOT_HEIGHT: f64 = 100.0;

/// A stacked bar chart of `series` over `days`, with its title and a
/// sentence for screen readers; "None" instead when all are zero.
#[component]
pub fn Chart(
    id: &'static str,
    title: String,
    unit: &'static str,
    days: Vec<String>,
    series: Vec<Series>,
) -> impl IntoView {
    let n = days.len().max(1);
    let totals: Vec<u64> = (0..n)
        .map(|i| series.iter().map(|s| s.values.get(i).copied().unwrap_or(0)).fold(0u64, u64::saturating_add))
        .collect();
    let top = axis_top(totals.iter().copied().max().unwrap_or(0));
    let sum = totals.iter().copied().fold(0u64, u64::saturating_add);
    let title_id = format!("{id}-title");
    let caption_id = title_id.clone();
    if sum == 0 {
        return view! {
            <figure class="chart" aria-labelledby=title_id>
                <figcaption id=caption_id>{title}</figcaption>
                <p class="hint">{format!("No {unit} in this range.")}</p>
            </figure>
        }
        .into_any();
    }
    let busiest = totals.iter().enumerate().max_by_key(|(i, t)| (**t, std::cmp::Reverse(*i))).map_or(0, |(i, _)| i);
    let (first, last) = (days.first().cloned().unwrap_or_default(), days.last().cloned().unwrap_or_default());
    let description =
        format!("{sum} {unit} from {first} to {last}; the most, {}, on {}.", totals[busiest], days[busiest]);
    let y = move |value: u64| PLOT_HEIGHT - PLOT_HEIGHT * (value as f64 / top as f64);
    let width = SLOT * n as f64;
    let grid = [0.0, PLOT_HEIGHT / 2.0, PLOT_HEIGHT]
        .into_iter()
        .map(|at| {
            let at = format!("{at:.1}");
            view! {
                <line class="grid" x1="0" x2=format!("{width:.1}") y1=at.clone() y2=at vector-effect="non-scaling-stroke"/>
            }
        })
        .collect_view();
    let bars = (0..n)
        .map(|i| {
            let x = format!("{:.1}", SLOT * i as f64 + (SLOT - BAR) / 2.0);
            let mut base = 0u64;
            let day = days.get(i).cloned().unwrap_or_default();
            series
                .iter()
                .enumerate()
                .filter_map(|(k, s)| {
                    let value = s.values.get(i).copied().unwrap_or(0);
                    if value == 0 {
                        return None;
                    }
                    let (from, to) = (y(base), y(base.saturating_add(value)));
                    base = base.saturating_add(value);
                    let tip = format!("{day}: {value} {}", s.label.to_lowercase());
                    Some(view! {
                        <rect class=format!("bar s{}", k % 6) x=x.clone() y=format!("{to:.2}")
                            width=format!("{BAR:.1}") height=format!("{:.2}", (from - to).max(0.5))>
                            <title>{tip}</title>
                        </rect>
                    })
                })
                .collect_view()
        })
        .collect_view();
    let middle = days.get((n - 1) / 2).cloned().filter(|_| n > 2).unwrap_or_default();
    let legend = (series.len() > 1).then(|| {
        view! {
            <ul class="legend">
                {series.iter().enumerate().map(|(k, s)| view! {
                    <li><span class=format!("swatch s{}", k % 6) aria-hidden="true"></span>{s.label.clone()}</li>
                }).collect_view()}
            </ul>
        }
    });
    let desc_id = format!("{id}-desc");
    let labelled_by = format!("{title_id} {desc_id}");
    view! {
        <figure class="chart" aria-labelledby=title_id>
            <figcaption id=caption_id>{title}</figcaption>
            <div class="plot">
                <div class="y-axis" aria-hidden="true"><span>{short(top)}</span><span>"0"</span></div>
                <svg viewBox=format!("0 0 {width:.1} {PLOT_HEIGHT}") preserveAspectRatio="none" role="img"
                    aria-labelledby=labelled_by>
                    <desc id=desc_id>{description}</desc>
                    {grid}
                    {bars}
                </svg>
                <div class="x-axis" aria-hidden="true"><span>{first}</span><span>{middle}</span><span>{last}</span></div>
            </div>
            {legend}
        </figure>
    }
    .into_any()
}

#[component]
pub fn UsagePage(usage: Usage) -> impl IntoView {
    let Usage { since, until, days, totals } = usage;
    let form = filter_form(
        "/console/usage",
        vec![
            FilterField { id: "since", label: "From (day)", kind: "date", value: since },
            FilterField { id: "until", label: "To (day, included)", kind: "date", value: until },
        ],
        (),
    );
    let labels: Vec<String> = days.iter().map(|d| d.day.clone()).collect();
    let column = |f: fn(&UsageDay) -> u64| days.iter().map(f).collect::<Vec<u64>>();
    let limits: Vec<String> = totals.refusals.iter().map(|(l, _)| l.clone()).collect();
    let refusal_series: Vec<Series> = limits
        .iter()
        .map(|limit| Series { label: limit_label(limit), values: days.iter().map(|d| d.refused(limit)).collect() })
        .collect();
    let refused_total: u64 = totals.refusals.iter().map(|(_, n)| *n).fold(0, u64::saturating_add);
    let summary = view! {
        <dl class="totals">
            <div><dt>"Turns"</dt><dd>{totals.turns}</dd></div>
            <div><dt>"Tokens in"</dt><dd>{totals.input_tokens}</dd></div>
            <div><dt>"Tokens out"</dt><dd>{totals.output_tokens}</dd></div>
            <div><dt>"Tool calls"</dt><dd>{totals.tool_calls}</dd></div>
            <div><dt>"Refused"</dt><dd>{refused_total}</dd></div>
        </dl>
    };
    let charts = view! {
        <Chart id="turns" title="Turns per day".into() unit="turns" days=labels.clone()
            series=vec![Series { label: "Turns".into(), values: column(|d| d.turns) }]/>
        <Chart id="tokens" title="Model tokens per day".into() unit="tokens" days=labels.clone()
            series=vec![
                Series { label: "Tokens in".into(), values: column(|d| d.input_tokens) },
                Series { label: "Tokens out".into(), values: column(|d| d.output_tokens) },
            ]/>
        <Chart id="tools" title="Tool calls per day".into() unit="tool calls" days=labels.clone()
            series=vec![Series { label: "Tool calls".into(), values: column(|d| d.tool_calls) }]/>
        <Chart id="refusals" title="Refused per day, by limit".into() unit="refusals" days=labels.clone()
            series=refusal_series/>
    }
    .into_any();
    let rows = days
        .iter()
        .rev()
        .map(|d| {
            let refused = d
                .refusals
                .iter()
                .map(|(limit, n)| format!("{}: {n}", limit_label(limit)))
                .collect::<Vec<_>>()
                .join(", ");
            let refused = if refused.is_empty() { "0".to_owned() } else { refused };
            view! {
                <tr>
                    <th scope="row">{d.day.clone()}</th><td>{d.turns}</td><td>{d.input_tokens}</td>
                    <td>{d.output_tokens}</td><td>{d.tool_calls}</td><td>{refused}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        {form}
        <section class="card" aria-labelledby="usage-title">
            <h2 id="usage-title">"In this range"</h2>
            {summary}
            <p class="hint">"Days are UTC. Another server's counts of the last few seconds may still be on their way."</p>
            {charts}
        </section>
        <section class="card" aria-labelledby="numbers-title">
            <h2 id="numbers-title">"Day by day, newest first"</h2>
            <div class="report usage-days" tabindex="0" role="region" aria-label="Usage by day">
                <table>
                    <thead><tr>
                        <th scope="col">"Day"</th><th scope="col">"Turns"</th><th scope="col">"Tokens in"</th>
                        <th scope="col">"Tokens out"</th><th scope="col">"Tool calls"</th><th scope="col">"Refused"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_round_and_numbers_short() {
        assert_eq!(axis_top(0), 1);
        assert_eq!(axis_top(7), 10);
        assert_eq!(axis_top(11), 20);
        assert_eq!(axis_top(4_100), 5_000);
        assert_eq!(axis_top(u64::MAX), u64::MAX);
        assert_eq!(short(999), "999");
        assert_eq!(short(1_500), "1.5k");
        assert_eq!(short(20_000), "20k");
        assert_eq!(short(2_000_000), "2M");
    }
}
