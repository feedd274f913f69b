//! The Knowledge page (issue #45): the workspace's knowledge sources with
//! their status, pages, errors and next sync; forms to add a sitemap, a
//! page, a file or a snippet, to sync one now or remove it; whether answers
//! come only from the sources; a search box showing what the assistant
//! would read; and the questions the knowledge did not answer.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the page shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Knowledge {
    pub sources: Vec<KnowledgeSource>,
    pub knowledge_only: bool,
    /// `full_text` or `hybrid`.
    pub retrieval: String,
    /// The search asked for, and what it found.
    pub query: String,
    pub results: Option<Vec<KnowledgeResult>>,
    pub gaps: Vec<KnowledgeGap>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeSource {
    pub id: String,
    pub kind: String,
    pub name: String,
    pub url: Option<String>,
    pub status: String,
    pub pages: i64,
    pub chunks: i64,
    pub last_synced_at: Option<String>,
    pub next_sync_at: Option<String>,
    /// Why the last sync failed as a whole.
    pub error: Option<String>,
    /// Pages not read: (address, why).
    pub errors: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeResult {
    pub url: String,
    pub title: String,
    pub section: String,
    pub snippet: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeGap {
    pub question: String,
    pub count: u64,
    pub also_asked: Vec<String>,
    pub last_asked_at: String,
}

/// A status as a host reads it.
fn status_label(status: &str) -> &'static str {
    match status {
        "pending" => "Waiting for its first sync",
        "syncing" => "Syncing…",
        "ready" => "Ready",
        "failed" => "Last sync failed",
        _ => "Unknown",
    }
}

#[component]
pub fn KnowledgePage(knowledge: Knowledge) -> impl IntoView {
    let Knowledge { sources, knowledge_only, retrieval, query, results, gaps } = knowledge;
    let busy = sources.iter().any(|s| matches!(s.status.as_str(), "pending" | "syncing"));
    let listed = if sources.is_empty() {
        view! { <p>"No source yet: add your help center's sitemap, a page, a file or a snippet below."</p> }.into_any()
    } else {
        view! {
            <ul class="sources">
                {sources.into_iter().map(|s| {
                    let sync_action = format!("/console/knowledge/{}/sync", s.id);
                    let remove_action = format!("/console/knowledge/{}/remove", s.id);
                    let counts = format!("{} pages, {} passages", s.pages, s.chunks);
                    let when = match (&s.last_synced_at, &s.next_sync_at) {
                        (Some(last), Some(next)) => format!("Synced {last}; next {next}."),
                        (Some(last), None) => format!("Synced {last}; syncs again only when asked."),
                        (None, _) => "Not synced yet.".to_owned(),
                    };
                    let failed = s.errors.len();
                    view! {
                        <li class="source" data-status=s.status.clone()>
                            <h3>{s.name.clone()} " " <small>{format!("({})", s.kind)}</small></h3>
                            {s.url.clone().map(|u| view! { <p><code>{u}</code></p> })}
                            <p class="source-status" role="status">
                                <strong>{status_label(&s.status)}</strong> " · " {counts} " · " {when}
                            </p>
                            {s.error.clone().map(|e| view! { <p class="notice error">{e}</p> })}
                            {(failed > 0).then(|| view! {
                                <details>
                                    <summary>{format!("{failed} pages not read")}</summary>
                                    <ul>{s.errors.into_iter().map(|(url, why)| view! {
                                        <li><code>{url}</code> ": " {why}</li>
                                    }).collect_view()}</ul>
                                </details>
                            })}
                            <form method="post" action=sync_action class="inline">
                                <button type="submit" class="button secondary">"Sync now"</button>
                            </form>
                            <form method="post" action=remove_action class="inline">
                                <button type="submit" class="button secondary">"Remove"</button>
                            </form>
                        </li>
                    }
                }).collect_view()}
            </ul>
        }
        .into_any()
    };
    view! {
        <section class="card" aria-labelledby="sources-title">
            <h2 id="sources-title">"Sources"</h2>
            <p>"What the assistant answers from: each source syncs in the background and again every day (robots.txt obeyed; unchanged pages cost nothing)."
                {busy.then(|| view! { " " <a href="/console/knowledge">"Refresh"</a> " to see a sync's progress." })}</p>
            {listed}
        </section>
        <section class="card" aria-labelledby="add-title">
            <h2 id="add-title">"Add a source"</h2>
            <form method="post" action="/console/knowledge/sources">
                <label for="kind">"What"</label>
                <select id="kind" name="kind">
                    <option value="sitemap">"A sitemap (every page it lists)"</option>
                    <option value="url">"A page"</option>
                    <option value="crawl">"A page and the pages it links to under its folder"</option>
                </select>
                <label for="source-url">"Address"</label>
                <input id="source-url" name="url" type="url" required placeholder="https://help.example.com/sitemap.xml"/>
                <button type="submit" class="button">"Add"</button>
            </form>
            <form method="post" action="/console/knowledge/files" enctype="multipart/form-data">
                <label for="knowledge-file">"A file (PDF, text, Markdown or HTML)"</label>
                <input id="knowledge-file" name="file" type="file" required accept=".pdf,.txt,.md,.markdown,.html,.htm"/>
                <button type="submit" class="button">"Upload and add"</button>
            </form>
            <form method="post" action="/console/knowledge/snippets">
                <label for="snippet-title">"A snippet: its title (a question)"</label>
                <input id="snippet-title" name="title" required maxlength="200"/>
                <label for="snippet-text">"Its answer"</label>
                <textarea id="snippet-text" name="text" required rows="4"></textarea>
                <label for="snippet-url">"A page it links to (optional)"</label>
                <input id="snippet-url" name="url" type="url"/>
                <button type="submit" class="button">"Add the snippet"</button>
            </form>
        </section>
        <section class="card" aria-labelledby="only-title">
            <h2 id="only-title">"Answers"</h2>
            <form method="post" action="/console/knowledge/only">
                <label>
                    <input type="checkbox" name="knowledge_only" value="yes" checked=knowledge_only/>
                    " Answer questions about us only from these sources and our tools; say so when they do not cover a question"
                </label>
                <button type="submit" class="button">"Save"</button>
            </form>
            <p>{if retrieval == "hybrid" { "Search: full text and embeddings." } else { "Search: full text." }}</p>
        </section>
        <section class="card" aria-labelledby="search-title">
            <h2 id="search-title">"Try a search"</h2>
            <form method="get" action="/console/knowledge">
                <label for="knowledge-query">"A visitor's question"</label>
                <input id="knowledge-query" name="q" value=query maxlength="500"/>
                <button type="submit" class="button">"Search"</button>
            </form>
            {results.map(|results| if results.is_empty() {
                view! { <p role="status">"Nothing found: the assistant would say it does not know."</p> }.into_any()
            } else {
                view! {
                    <ol class="results" aria-label="What the assistant would read">
                        {results.into_iter().map(|r| view! {
                            <li>
                                <p><strong>{r.title}</strong>
                                    {(!r.section.is_empty()).then(|| format!(" · {}", r.section))}</p>
                                {(!r.url.is_empty()).then(|| view! { <p><code>{r.url}</code></p> })}
                                <p>{r.snippet}</p>
                            </li>
                        }).collect_view()}
                    </ol>
                }
                .into_any()
            })}
        </section>
        <section class="card" aria-labelledby="gaps-title">
            <h2 id="gaps-title">"Questions not answered (last 30 days)"</h2>
            {if gaps.is_empty() {
                view! { <p>"None: every question that searched found something to cite."</p> }.into_any()
            } else {
                view! {
                    <table class="gaps">
                        <thead><tr><th scope="col">"Question"</th><th scope="col">"Asked"</th><th scope="col">"Last asked"</th></tr></thead>
                        <tbody>{gaps.into_iter().map(|g| view! {
                            <tr>
                                <td>{g.question}
                                    {(!g.also_asked.is_empty()).then(|| view! { <br/><small>{format!("Also: {}", g.also_asked.join(" · "))}</small> })}</td>
                                <td>{g.count}</td>
                                <td>{g.last_asked_at}</td>
                            </tr>
                        }).collect_view()}</tbody>
                    </table>
                }
                .into_any()
            }}
        </section>
    }
}
