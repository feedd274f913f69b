//! The console: where a host runs its workspace in a browser — sign in with
//! the workspace's api key (or the operator's admin token, to create
//! workspaces), then the onboarding on one page: the workspace and its
//! allowed origins → the tool server, with the host checker's report rule
//! by rule → the embed snippets.
//!
//! Pages are Leptos components rendered by the server from plain data
//! (`Page`); every form posts to the server and works without script. The
//! server owns sessions, cross-site protection and the calls behind each
//! form (the public API, in process). In the browser the console's own
//! WASM (`hydrate`, built apart from the widget's) hydrates the same
//! components from the page's data and adds what needs script: copy
//! buttons, and the live preview following the look's controls before
//! they are saved.

// Leptos' views are deeply nested types; a release build needs the room.
#![recursion_limit = "256"]

mod interactive;
mod knowledge;
mod test_runs;
mod usage;

use interactive::{CopyButton, LivePreview};
pub use knowledge::{Knowledge, KnowledgeGap, KnowledgeResult, KnowledgeSource};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
pub use test_runs::{CaseCell, TestCase, TestComparison, TestRun, TestRunItem, Tests};
pub use usage::{Usage, UsageDay, limit_label};

/// What a page shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Page {
    pub title: String,
    /// Who is signed in, if anyone (the header's sign-out).
    pub signed_in: Option<String>,
    /// The workspace's pages to move between (none for the operator).
    pub nav: bool,
    /// A message at the top: what just happened, or what went wrong.
    pub notice: Option<Notice>,
    pub body: Body,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    pub text: String,
    pub error: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// The sign-in form.
    #[default]
    SignIn,
    /// The operator's page: create a workspace.
    Admin(Admin),
    /// A workspace's onboarding.
    Onboarding(Onboarding),
    /// A workspace's audit trail.
    Audit(Audit),
    /// Secrets, retention and erasure.
    Operations(Operations),
    /// Knowledge sources, search and content gaps.
    Knowledge(Knowledge),
    /// The workspace's conversations.
    Conversations(Conversations),
    /// One conversation, read-only.
    Transcript(Transcript),
    /// What the workspace used per day.
    Usage(Usage),
    /// Assistant tests: the editor and the runs.
    Tests(Tests),
    /// One test run, case by case.
    TestRun(TestRun),
    /// Two test runs side by side.
    TestComparison(TestComparison),
}

/// The workspace's conversations: the filters as given, a page of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversations {
    /// The user filter, and the days (`YYYY-MM-DD`) of last activity.
    pub user: String,
    pub since: String,
    pub until: String,
    pub items: Vec<ConversationItem>,
    /// The next page's query string, if there is one.
    pub next: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationItem {
    pub id: String,
    pub user: String,
    pub title: String,
    pub updated_at: String,
}

/// One conversation as its user saw it, as plain text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// The conversation's id (Save as test names it).
    pub id: String,
    pub user: String,
    pub title: String,
    pub updated_at: String,
    pub messages: Vec<TranscriptMessage>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptMessage {
    /// `user` or `assistant`.
    pub role: String,
    pub text: String,
    /// The titles of the cards it showed.
    pub cards: Vec<String>,
    pub at: String,
}

/// Secrets, retention and erasure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Operations {
    /// The embed secret's key id (tokens may name it as `kid`).
    pub embed_secret_kid: String,
    /// Until when the previous embed secret still verifies (RFC 3339), if it does.
    pub previous_embed_secret_until: Option<String>,
    /// Until when the previous api key still works, if it does.
    pub previous_api_key_until: Option<String>,
    /// A secret just made, shown this once: (what, value).
    pub new_secret: Option<(String, String)>,
    /// Days conversations are kept; none: until erased.
    pub retention_days: Option<u64>,
    /// The counts of an erasure that just ran: (user, [(what, how many)]).
    pub erased: Option<(String, Vec<(String, u64)>)>,
}

/// The audit trail: the filters as given, a page of entries, the next page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    pub filters: AuditFilters,
    pub entries: Vec<AuditEntry>,
    /// The next page's query string (filters and cursor), if there is one.
    pub next: Option<String>,
    /// The export's query string (the filters).
    pub export: String,
}

/// The trail's filters, as the form holds them (dates as `YYYY-MM-DD`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditFilters {
    pub user: String,
    pub action: String,
    pub tool: String,
    pub outcome: String,
    pub since: String,
    pub until: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub at: String,
    pub actor: String,
    pub action: String,
    pub user: String,
    pub tool: String,
    pub outcome: String,
    /// What changed, as compact JSON.
    pub detail: String,
}

/// The operator's page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Admin {
    /// A workspace just created, with the secrets shown this once.
    pub created: Option<Created>,
    /// The workspaces on this server, the newest first.
    #[serde(default)]
    pub workspaces: Vec<WorkspaceItem>,
}

/// A workspace in the operator's list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceItem {
    pub id: String,
    pub name: String,
    /// The day it was created (`YYYY-MM-DD`, UTC).
    pub created: String,
    pub allowed_origins: Vec<String>,
    pub integrations: Vec<String>,
    pub conversations_this_month: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Created {
    pub id: String,
    pub name: String,
    pub api_key: String,
    pub embed_secret: String,
}

/// A workspace's onboarding, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Onboarding {
    pub workspace_id: String,
    pub name: String,
    pub allowed_origins: Vec<String>,
    /// The connected tool server, if any.
    pub tool_server: Option<ToolServer>,
    /// The host checker's report from the last connect or check.
    pub report: Option<Vec<Rule>>,
    /// The connected MCP servers, in the order they were connected.
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
    /// The connect report of the MCP server just connected or checked.
    #[serde(default)]
    pub mcp_report: Option<Vec<Rule>>,
    /// The widget's look for this workspace's visitors (a page's own options win).
    pub theme: Theme,
    /// The base URL just typed into the tool server's form, kept for the next try.
    pub entered_base_url: Option<String>,
    /// The assistant's own origin (the snippets' script source).
    pub assistant_origin: String,
    /// The empty chat's greeting and suggested prompts, per language the
    /// widget speaks (all of them, in order; empty where none is set).
    pub start_screens: Vec<StartScreen>,
    /// The browser features its MCP Apps may have (`camera`, …).
    #[serde(default)]
    pub app_permissions: Vec<String>,
    /// The kinds of file its visitors may attach, by media type.
    #[serde(default)]
    pub attachment_types: Vec<String>,
}

/// What the empty chat says in one language.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StartScreen {
    /// `en`, `es`, …
    pub lang: String,
    /// The language's name, in itself.
    pub name: String,
    pub greeting: String,
    pub prompts: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolServer {
    pub base_url: String,
    /// The tools the workspace allows (empty: every tool the server lists).
    pub allowed_tools: Vec<String>,
    /// The tools the server listed, when it was just connected.
    pub listed: Option<Vec<String>>,
}

/// An MCP server the workspace takes tools from (never a header's value).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpServer {
    pub name: String,
    pub url: String,
    /// The names of the headers sent to it.
    pub headers: Vec<String>,
    pub trust_annotations: bool,
    /// The tools the workspace allows (empty: every tool it lists).
    pub allowed_tools: Vec<String>,
    /// Its tools as classified (`name: verb`), when it was just connected.
    pub listed: Option<Vec<String>>,
}

/// The workspace's default look: each value optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Theme {
    /// `light` or `dark`; none follows the visitor's preference.
    pub mode: Option<String>,
    /// `#rrggbb`.
    pub accent: Option<String>,
    /// Corner radius in pixels, 0 to 32.
    pub radius: Option<u8>,
    /// A CSS font-family list.
    pub font: Option<String>,
}

/// One rule of the host checker's report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub id: String,
    /// `pass`, `warn` or `fail`.
    pub status: String,
    pub detail: String,
}

/// The console's stylesheet (served by the server at this path).
pub const STYLESHEET: &str = "/console.css";
/// The script that loads the console's WASM and hydrates the page.
pub const BOOT_SCRIPT: &str = "/console-boot.js";
/// The id of the page's data, for hydration.
const PAGE_DATA: &str = "console-page";

/// `page` as JSON that is safe inside a `<script>` element (no `<`, `>`
/// or `&` left to end it or be read as markup).
pub fn page_data(page: &Page) -> String {
    serde_json::to_string(page)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The browser entry point (`console-boot.js`): hydrates the page the
/// server rendered, from the data it left beside it.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    let data = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(PAGE_DATA))
        .and_then(|e| e.text_content())
        .unwrap_or_default();
    // A page without its data stays as the server sent it: every form works.
    let Ok(page) = serde_json::from_str::<Page>(&data) else { return };
    leptos::mount::hydrate_body(move || view! { <Console page/> });
    // Said for tests and benchmarks: the page now answers to script.
    if let Some(window) = web_sys::window() {
        if let Some(performance) = window.performance() {
            let _ = performance.mark("console-hydrated");
        }
        if let Some(body) = window.document().and_then(|d| d.body()) {
            let _ = body.set_attribute("data-hydrated", "");
        }
    }
}

/// A whole page.
pub fn document(page: Page) -> impl IntoView {
    let title = format!("{} · Context Assistant console", page.title);
    let data = page_data(&page);
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <title>{title}</title>
                <link rel="stylesheet" href=STYLESHEET/>
                <script type="application/json" id=PAGE_DATA inner_html=data></script>
                <script type="module" src=BOOT_SCRIPT></script>
            </head>
            <body>
                <Console page/>
            </body>
        </html>
    }
}

#[component]
fn Console(page: Page) -> impl IntoView {
    let Page { title, signed_in, nav, notice, body } = page;
    view! {
        <header class="console-header">
            <p class="console-brand">"Context Assistant console"</p>
            {nav.then(|| view! {
                <nav aria-label="Console" class="console-nav">
                    <a href="/console">"Set up"</a>
                    <a href="/console/conversations">"Conversations"</a>
                    <a href="/console/knowledge">"Knowledge"</a>
                    <a href="/console/tests">"Tests"</a>
                    <a href="/console/usage">"Usage"</a>
                    <a href="/console/audit">"Audit trail"</a>
                    <a href="/console/operations">"Secrets and data"</a>
                </nav>
            })}
            {signed_in.map(|who| view! {
                <form method="post" action="/console/sign-out" class="console-signout">
                    <span>{who}</span>
                    <button type="submit" class="button secondary">"Sign out"</button>
                </form>
            })}
        </header>
        <main class="console-main" id="main">
            <h1>{title}</h1>
            {notice.map(|n| {
                let class = if n.error { "notice error" } else { "notice" };
                let role = if n.error { "alert" } else { "status" };
                view! { <p class=class role=role>{n.text}</p> }
            })}
            {match body {
                Body::SignIn => view! { <SignIn/> }.into_any(),
                Body::Admin(admin) => view! { <AdminPage admin/> }.into_any(),
                Body::Onboarding(onboarding) => view! { <OnboardingPage onboarding/> }.into_any(),
                Body::Audit(audit) => view! { <AuditPage audit/> }.into_any(),
                Body::Operations(operations) => view! { <OperationsPage operations/> }.into_any(),
                Body::Conversations(list) => view! { <ConversationsPage list/> }.into_any(),
                Body::Transcript(transcript) => view! { <TranscriptPage transcript/> }.into_any(),
                Body::Usage(usage) => view! { <usage::UsagePage usage/> }.into_any(),
                Body::Knowledge(knowledge) => view! { <knowledge::KnowledgePage knowledge/> }.into_any(),
                Body::Tests(tests) => view! { <test_runs::TestsPage tests/> }.into_any(),
                Body::TestRun(run) => view! { <test_runs::TestRunPage run/> }.into_any(),
                Body::TestComparison(comparison) => view! { <test_runs::TestComparisonPage comparison/> }.into_any(),
            }}
        </main>
    }
}

#[component]
fn SignIn() -> impl IntoView {
    view! {
        <form method="post" action="/console/sign-in" class="card">
            <label for="key">"Workspace api key, or the operator's admin token"</label>
            <input id="key" name="key" type="password" autocomplete="current-password" required spellcheck="false"/>
            <p class="hint">
                "The api key was shown once when the workspace was created. It is kept on the server for "
                "this session only; it never reaches this page's scripts."
            </p>
            <button type="submit" class="button">"Sign in"</button>
        </form>
    }
}

#[component]
fn AdminPage(admin: Admin) -> impl IntoView {
    view! {
        {admin.created.map(|c| view! {
            <section class="card created" aria-labelledby="created-title">
                <h2 id="created-title">{format!("Workspace “{}” created", c.name)}</h2>
                <p>"Keep these now: they are not shown again."</p>
                <dl>
                    <dt>"Workspace id"</dt>
                    <dd><code>{c.id.clone()}</code> <CopyButton text=c.id what="the id"/></dd>
                    <dt>"Api key (sign in to the console with it)"</dt>
                    <dd><code>{c.api_key.clone()}</code> <CopyButton text=c.api_key what="the api key"/></dd>
                    <dt>"Embed secret (your backend signs visitors' tokens with it)"</dt>
                    <dd><code>{c.embed_secret.clone()}</code> <CopyButton text=c.embed_secret what="the embed secret"/></dd>
                </dl>
            </section>
        })}
        <section class="card" aria-labelledby="workspaces-title">
            <h2 id="workspaces-title">"Workspaces"</h2>
            {if admin.workspaces.is_empty() {
                view! { <p>"No workspace yet: create the first below."</p> }.into_any()
            } else {
                view! {
                    <table>
                        <thead><tr>
                            <th scope="col">"Name"</th>
                            <th scope="col">"Id"</th>
                            <th scope="col">"Created"</th>
                            <th scope="col">"Conversations this month"</th>
                        </tr></thead>
                        <tbody>
                            {admin.workspaces.into_iter().map(|w| view! {
                                <tr>
                                    <td>
                                        <details>
                                            <summary>{w.name}</summary>
                                            <dl>
                                                <dt>"Allowed origins"</dt>
                                                <dd>{if w.allowed_origins.is_empty() { "none".to_owned() } else { w.allowed_origins.join(", ") }}</dd>
                                                <dt>"Tool sources"</dt>
                                                <dd>{if w.integrations.is_empty() { "none".to_owned() } else { w.integrations.join(", ") }}</dd>
                                            </dl>
                                            <p class="hint">"To change it, sign in with its api key (the console's other pages)."</p>
                                        </details>
                                    </td>
                                    <td><code>{w.id}</code></td>
                                    <td>{w.created}</td>
                                    <td>{w.conversations_this_month}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
        <form method="post" action="/console/workspaces" class="card">
            <h2>"Create a workspace"</h2>
            <label for="name">"Name"</label>
            <input id="name" name="name" type="text" required maxlength="100"/>
            <label for="origins">"Allowed origins (one per line)"</label>
            <textarea id="origins" name="origins" rows="3" placeholder="https://shop.example"></textarea>
            <button type="submit" class="button">"Create"</button>
        </form>
    }
}

#[component]
fn OnboardingPage(onboarding: Onboarding) -> impl IntoView {
    let Onboarding {
        workspace_id,
        name,
        allowed_origins,
        tool_server,
        report,
        mcp_servers,
        mcp_report,
        theme,
        entered_base_url,
        assistant_origin,
        start_screens,
        app_permissions,
        attachment_types,
    } = onboarding;
    let origins = allowed_origins.join("\n");
    let connected = tool_server.is_some();
    let base_url = entered_base_url.or_else(|| tool_server.as_ref().map(|t| t.base_url.clone())).unwrap_or_default();
    let snippet_url = format!(
        "<script src=\"{assistant_origin}/embed.js\" data-workspace=\"{workspace_id}\" \
         data-token-url=\"/assistant/token\" async></script>"
    );
    let snippet_init = format!(
        "<script src=\"{assistant_origin}/embed.js\"></script>\n<script>\n  ContextAssistant.init({{\n    \
         workspace: \"{workspace_id}\",\n    getToken: async () => (await fetch(\"/assistant/token\")).text(),\n  \
         }});\n</script>"
    );
    let workspace = view! {
        <li class="card">
            <h2>"1. Your workspace"</h2>
            <form method="post" action="/console/workspace">
                <label for="name">"Name"</label>
                <input id="name" name="name" type="text" required maxlength="100" value=name/>
                <label for="origins">"Allowed origins: the sites that embed the assistant (one per line)"</label>
                <textarea id="origins" name="origins" rows="3" placeholder="https://shop.example">{origins}</textarea>
                <button type="submit" class="button">"Save"</button>
            </form>
        </li>
    }
    .into_any();
    let tools = view! {
        <li class="card">
            <h2>"2. Your tool server"</h2>
            {tool_server.map(|t| {
                let tools = match (&t.listed, t.allowed_tools.is_empty()) {
                    (Some(listed), _) => format!("It lists {} tools: {}.", listed.len(), listed.join(", ")),
                    (None, true) => "The assistant may use every tool it lists.".to_owned(),
                    (None, false) => format!("The assistant may use: {}.", t.allowed_tools.join(", ")),
                };
                view! { <p>"Connected to " <code>{t.base_url}</code> ". " {tools}</p> }
            })}
            <form method="post" action="/console/connect">
                <label for="base_url">"Base URL (the Remote Tools endpoints live under it)"</label>
                <input id="base_url" name="base_url" type="url" required value=base_url
                    placeholder="https://shop.example/internal/assistant"/>
                <label for="secret">"Secret (the bearer the assistant sends it)"</label>
                <input id="secret" name="secret" type="password" required autocomplete="off"/>
                <div class="buttons">
                    <button type="submit" class="button">{if connected { "Connect again" } else { "Connect" }}</button>
                    <button type="submit" class="button secondary" formaction="/console/check">"Check again"</button>
                </div>
            </form>
            {report.map(|rules| view! { <Report rules/> })}
            <h3 id="mcp-title">"MCP servers"</h3>
            <p>"Tools of the MCP servers you already run, beside or instead of the tool server. Reads run by \
                themselves only when you trust a server's annotations; every other tool waits for Apply."</p>
            <ul class="mcp-servers" aria-labelledby="mcp-title">
                {mcp_servers.into_iter().map(|server| {
                    let headers = if server.headers.is_empty() {
                        "no headers".to_owned()
                    } else {
                        format!("headers: {}", server.headers.join(", "))
                    };
                    let trust = if server.trust_annotations { "annotations trusted" } else { "annotations not trusted" };
                    let tools = match (&server.listed, server.allowed_tools.is_empty()) {
                        (Some(listed), _) => format!("{} tools: {}.", listed.len(), listed.join(", ")),
                        (None, true) => "Every tool it lists.".to_owned(),
                        (None, false) => format!("Only: {}.", server.allowed_tools.join(", ")),
                    };
                    let label = format!("Disconnect {}", server.name);
                    view! {
                        <li>
                            <strong>{server.name.clone()}</strong> " — " <code>{server.url}</code>
                            " (" {headers} ", " {trust} "). " {tools}
                            <form method="post" action="/console/mcp/disconnect" class="inline">
                                <input type="hidden" name="name" value=server.name/>
                                <button type="submit" class="button secondary" aria-label=label>"Disconnect"</button>
                            </form>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <form method="post" action="/console/mcp/connect">
                <label for="mcp_name">"Name (a-z, 0-9 and -, a letter first)"</label>
                <input id="mcp_name" name="name" type="text" required maxlength="32" pattern=r"[a-z][a-z0-9\-]{0,31}"
                    placeholder="crm"/>
                <label for="mcp_url">"URL of its Streamable HTTP endpoint"</label>
                <input id="mcp_url" name="url" type="url" required placeholder="https://crm.example/mcp"/>
                <label for="mcp_authorization">"Authorization header, if it needs one (kept sealed, never shown)"</label>
                <input id="mcp_authorization" name="authorization" type="password" autocomplete="off"
                    placeholder="Bearer …"/>
                <label class="check">
                    <input name="trust_annotations" type="checkbox" value="1"/>
                    " Trust its annotations: tools it marks read-only run without Apply"
                </label>
                <div class="buttons">
                    <button type="submit" class="button">"Connect the MCP server"</button>
                    <button type="submit" class="button secondary" formaction="/console/mcp/check">"Check it"</button>
                </div>
            </form>
            {mcp_report.map(|rules| view! { <Report rules/> })}
            <AppPermissionsForm granted=app_permissions/>
        </li>
    }
    .into_any();
    let minting = snippets::all(&workspace_id)
        .into_iter()
        .map(|(language, file, source)| {
            view! {
                <details>
                    <summary>{language} " — " <code>{file}</code></summary>
                    <pre tabindex="0"><code>{source.clone()}</code></pre>
                    <CopyButton text=source what="the snippet"/>
                </details>
            }
        })
        .collect_view();
    let embed = view! {
        <li class="card">
            <h2>"3. Put it on your site"</h2>
            <p>"With a token endpoint on your site (same origin, answering a fresh token as text):"</p>
            <pre tabindex="0"><code>{snippet_url.clone()}</code></pre>
            <CopyButton text=snippet_url what="the snippet"/>
            <p>"Or from your own script:"</p>
            <pre tabindex="0"><code>{snippet_init.clone()}</code></pre>
            <CopyButton text=snippet_init what="the snippet"/>
            <h3>"Your backend mints each visitor's token"</h3>
            <p>
                "With the embed secret (in " <code>"CA_EMBED_SECRET"</code> ", never in a page): HS256, audience "
                <code>"context-assistant"</code> ", your workspace in " <code>"ws"</code> ", the visitor's id in "
                <code>"sub"</code> ", at most 24 hours."
            </p>
            {minting}
        </li>
    }
    .into_any();
    let look = view! { <ThemeStep theme/> }.into_any();
    let start = view! { <StartStep start_screens attachment_types/> }.into_any();
    view! { <ol class="steps">{workspace}{tools}{embed}{look}{start}</ol> }
}

/// The browser features an MCP App may ask for, and how the console names them.
const APP_FEATURES: [(&str, &str); 4] = [
    ("camera", "Camera"),
    ("microphone", "Microphone"),
    ("geolocation", "Location"),
    ("clipboard-write", "Writing to the clipboard"),
];

/// What the MCP Apps of the workspace may use, when their UI asks: none by default.
#[component]
fn AppPermissionsForm(granted: Vec<String>) -> impl IntoView {
    view! {
        <h3 id="app-permissions-title">"What MCP Apps may use"</h3>
        <p>"An MCP App (a tool's own UI, shown in the chat) gets a browser feature only if its UI asks for it             and you allow it here. Camera, microphone and location also need your page to lend them to the             widget: " <code>r#"data-app-permissions="camera; microphone; geolocation""#</code> "."</p>
        <form method="post" action="/console/mcp/app-permissions" aria-labelledby="app-permissions-title">
            {APP_FEATURES.into_iter().map(|(feature, label)| {
                let checked = granted.iter().any(|g| g == feature);
                view! {
                    <label class="check"><input name=feature type="checkbox" value="1" checked=checked/> " " {label}</label>
                }
            }).collect_view()}
            <button type="submit" class="button">"Save"</button>
        </form>
    }
}

/// The empty chat's greeting and prompts, per language: a visitor sees
/// their language's, else a neutral greeting in their language.
#[component]
fn StartStep(start_screens: Vec<StartScreen>, attachment_types: Vec<String>) -> impl IntoView {
    view! {
        <li class="card">
            <h2>"5. What it says first"</h2>
            <p class="hint">
                "The empty chat's greeting and up to four suggested prompts a visitor sends with one click, in "
                "each language you write them for. A visitor whose language has none sees a neutral greeting in "
                "their language, and no prompts."
            </p>
            <form method="post" action="/console/welcome">
                {start_screens.into_iter().map(|s| {
                    let (greeting_id, prompts_id) = (format!("greeting_{}", s.lang), format!("prompts_{}", s.lang));
                    let open = s.lang == "en" || !s.greeting.is_empty() || !s.prompts.is_empty();
                    view! {
                        <details open=open>
                            <summary lang=s.lang.clone()>{s.name}</summary>
                            <label for=greeting_id.clone()>"Greeting"</label>
                            <input id=greeting_id.clone() name=greeting_id lang=s.lang.clone() type="text" maxlength="300"
                                value=s.greeting/>
                            <label for=prompts_id.clone()>"Suggested prompts (one per line, at most four)"</label>
                            <textarea id=prompts_id.clone() name=prompts_id lang=s.lang rows="4">{s.prompts.join("\n")}</textarea>
                        </details>
                    }
                }).collect_view()}
                <button type="submit" class="button">"Save what it says first"</button>
            </form>
            <AttachmentsForm taken=attachment_types/>
        </li>
    }
}

/// The kinds of file a visitor may attach, and how the console names them.
pub const ATTACHMENT_KINDS: [(&str, &str); 6] = [
    ("image/png", "PNG images"),
    ("image/jpeg", "JPEG photos"),
    ("image/webp", "WebP images"),
    ("image/gif", "GIF images"),
    ("application/pdf", "PDF documents"),
    ("text/plain", "Plain text files"),
];

/// What a visitor may attach with the chat's paperclip: every kind by
/// default; none hides the paperclip.
#[component]
fn AttachmentsForm(taken: Vec<String>) -> impl IntoView {
    view! {
        <h3 id="attachments-title">"What visitors may attach"</h3>
        <p class="hint">
            "Files a visitor sends with a message (the chat's paperclip, a drop or a paste). Each is judged by its "
            "bytes, not its name; images are stored without their metadata. Tick none to have no paperclip."
        </p>
        <form method="post" action="/console/attachments" aria-labelledby="attachments-title">
            {ATTACHMENT_KINDS.into_iter().map(|(kind, label)| {
                let checked = taken.iter().any(|t| t == kind);
                view! {
                    <label class="check"><input name="kind" type="checkbox" value=kind checked=checked/> " " {label}</label>
                }
            }).collect_view()}
            <button type="submit" class="button">"Save what visitors may attach"</button>
        </form>
    }
}

#[component]
fn ThemeStep(theme: Theme) -> impl IntoView {
    // What the controls hold now (the preview follows them before they are saved).
    let look = interactive::Look::new(&theme);
    let mode = theme.mode.unwrap_or_default();
    let option = move |value: &'static str, label: &'static str| {
        view! { <option value=value selected=mode == value>{label}</option> }
    };
    view! {
        <li class="card">
            <h2>"4. How it looks"</h2>
            <p class="hint">"Your visitors see these unless your page's own options say otherwise. Empty: the default."</p>
            <form method="post" action="/console/theme">
                <label for="mode">"Light or dark"</label>
                <select id="mode" name="mode" on:change=move |ev| look.set_mode(event_target_value(&ev))>
                    {option("", "Follow the visitor's setting")}
                    {option("light", "Light")}
                    {option("dark", "Dark")}
                </select>
                <label for="accent">"Accent colour (#rrggbb)"</label>
                <input id="accent" name="accent" type="text" inputmode="text" maxlength="7" pattern="#[0-9A-Fa-f]{6}"
                    placeholder="#1f6f5c" value=theme.accent.unwrap_or_default()
                    on:input=move |ev| look.set_accent(event_target_value(&ev))/>
                <label for="radius">"Corner radius (0 to 32 pixels)"</label>
                <input id="radius" name="radius" type="number" min="0" max="32" step="1"
                    value=theme.radius.map(|r| r.to_string()).unwrap_or_default()
                    on:input=move |ev| look.set_radius(event_target_value(&ev))/>
                <label for="font">"Font (a CSS font-family list)"</label>
                <input id="font" name="font" type="text" maxlength="120" placeholder="Inter, system-ui, sans-serif"
                    value=theme.font.unwrap_or_default()
                    on:input=move |ev| look.set_font(event_target_value(&ev))/>
                <button type="submit" class="button">"Save the look"</button>
            </form>
            <h3>"Live preview"</h3>
            <p class="hint">
                "The assistant as your visitors see it, in the saved look. Its chats are real: they are listed "
                "under the user console-preview."
            </p>
            <LivePreview look/>
        </li>
    }
}

/// A field of a list's filters.
pub(crate) struct FilterField {
    pub id: &'static str,
    pub label: &'static str,
    /// The input's type (`text`, `date`).
    pub kind: &'static str,
    pub value: String,
}

/// A list's filters: a form that GETs `action` with the fields, "Show",
/// and `extra` beside it.
pub(crate) fn filter_form(action: &'static str, fields: Vec<FilterField>, extra: impl IntoView + 'static) -> AnyView {
    view! {
        <form method="get" action=action class="card filters">
            <h2>"Filters"</h2>
            <div class="fields">
                {fields.into_iter().map(|f| view! {
                    <div class="field">
                        <label for=f.id>{f.label}</label>
                        <input id=f.id name=f.id type=f.kind value=f.value/>
                    </div>
                }).collect_view()}
            </div>
            <div class="buttons">
                <button type="submit" class="button">"Show"</button>
                {extra}
            </div>
        </form>
    }
    .into_any()
}

/// A page of a list under its filters: a titled card with the rows'
/// table (or `empty` when none matches) and the link to older rows.
struct ListCard {
    id: &'static str,
    title: &'static str,
    /// The scrolling region's name.
    region: &'static str,
    empty: &'static str,
    /// The older rows' address and the link's words, if there are any.
    older: Option<(String, &'static str)>,
}

impl ListCard {
    /// The card around `table` (its head and body; none: no row).
    fn view(self, table: Option<AnyView>) -> AnyView {
        let ListCard { id, title, region, empty, older } = self;
        let rows = match table {
            Some(table) => view! {
                <div class="report" tabindex="0" role="region" aria-label=region><table>{table}</table></div>
            }
            .into_any(),
            None => view! { <p>{empty}</p> }.into_any(),
        };
        view! {
            <section class="card" aria-labelledby=id>
                <h2 id=id>{title}</h2>
                {rows}
                {older.map(|(href, words)| view! { <p><a class="button secondary" href=href>{words}</a></p> })}
            </section>
        }
        .into_any()
    }
}

#[component]
fn AuditPage(audit: Audit) -> impl IntoView {
    let Audit { filters, entries, next, export } = audit;
    let export = view! {
        <a class="button secondary" href=format!("/console/audit/export?{export}") download="audit.jsonl">
            "Export as JSON Lines"
        </a>
    };
    let form = filter_form(
        "/console/audit",
        vec![
            FilterField { id: "user", label: "User", kind: "text", value: filters.user },
            FilterField { id: "action", label: "Kind (e.g. action.applied)", kind: "text", value: filters.action },
            FilterField { id: "tool", label: "Tool", kind: "text", value: filters.tool },
            FilterField { id: "outcome", label: "Outcome", kind: "text", value: filters.outcome },
            FilterField { id: "since", label: "From (day)", kind: "date", value: filters.since },
            FilterField { id: "until", label: "To (day, included)", kind: "date", value: filters.until },
        ],
        export,
    );
    let table = (!entries.is_empty()).then(|| {
        view! {
            <thead><tr>
                <th scope="col">"When"</th><th scope="col">"Who"</th><th scope="col">"What"</th>
                <th scope="col">"User"</th><th scope="col">"Tool"</th><th scope="col">"Outcome"</th>
                <th scope="col">"Detail"</th>
            </tr></thead>
            <tbody>
                {entries.into_iter().map(|e| view! {
                    <tr>
                        <td>{e.at}</td><td>{e.actor}</td><td><code>{e.action}</code></td><td>{e.user}</td>
                        <td>{e.tool}</td><td>{e.outcome}</td><td><code>{e.detail}</code></td>
                    </tr>
                }).collect_view()}
            </tbody>
        }
        .into_any()
    });
    let list = ListCard {
        id: "entries-title",
        title: "Entries, newest first",
        region: "Entries",
        empty: "No entry matches.",
        older: next.map(|q| (format!("/console/audit?{q}"), "Older entries")),
    };
    view! { {form}{list.view(table)} }
}

#[component]
fn ConversationsPage(list: Conversations) -> impl IntoView {
    let Conversations { user, since, until, items, next } = list;
    let form = filter_form(
        "/console/conversations",
        vec![
            FilterField { id: "user", label: "User", kind: "text", value: user },
            FilterField { id: "since", label: "Active from (day)", kind: "date", value: since },
            FilterField { id: "until", label: "Active to (day, included)", kind: "date", value: until },
        ],
        (),
    );
    let table = (!items.is_empty()).then(|| {
        view! {
            <thead><tr><th scope="col">"Last active"</th><th scope="col">"User"</th><th scope="col">"Conversation"</th></tr></thead>
            <tbody>
                {items.into_iter().map(|c| view! {
                    <tr>
                        <td>{c.updated_at}</td><td>{c.user}</td>
                        <td><a href=format!("/console/conversations/{}", c.id)>{c.title}</a></td>
                    </tr>
                }).collect_view()}
            </tbody>
        }
        .into_any()
    });
    let list = ListCard {
        id: "list-title",
        title: "Most recently active first",
        region: "Conversations",
        empty: "No conversation matches.",
        older: next.map(|q| (format!("/console/conversations?{q}"), "Older conversations")),
    };
    view! { {form}{list.view(table)} }
}

#[component]
fn TranscriptPage(transcript: Transcript) -> impl IntoView {
    let Transcript { id, user, title, updated_at, messages } = transcript;
    let save = format!("/console/conversations/{id}/save-as-test");
    view! {
        <p><a href="/console/conversations">"All conversations"</a></p>
        <form method="post" action=save class="inline">
            <button type="submit" class="button secondary">"Save as test"</button>
        </form>
        <section class="card" aria-labelledby="transcript-title">
            <h2 id="transcript-title">{title}</h2>
            <p class="hint">{format!("{user} · last active {updated_at} · read-only")}</p>
            <ol class="transcript">
                {messages.into_iter().map(|m| {
                    let who = if m.role == "user" { "User" } else { "Assistant" };
                    let class = format!("message {}", m.role);
                    view! {
                        <li class=class>
                            <p class="who">{who} " · " {m.at}</p>
                            <p class="text">{m.text}</p>
                            {(!m.cards.is_empty()).then(|| view! { <p class="hint">{format!("Cards: {}", m.cards.join(" · "))}</p> })}
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
}

/// The grace periods a rotation offers: (seconds, label).
const GRACES: [(&str, &str); 4] =
    [("3600", "one hour"), ("86400", "one day"), ("604800", "seven days"), ("0", "none: the old one stops at once")];

#[component]
fn OperationsPage(operations: Operations) -> impl IntoView {
    let Operations {
        embed_secret_kid,
        previous_embed_secret_until,
        previous_api_key_until,
        new_secret,
        retention_days,
        erased,
    } = operations;
    let graces = move |id: &'static str| {
        view! {
            <label for=id>"The old one keeps working for"</label>
            <select id=id name="grace_seconds">
                {GRACES.into_iter().map(|(value, label)| view! { <option value=value>{label}</option> }).collect_view()}
            </select>
        }
    };
    let secrets = view! {
        <section class="card" aria-labelledby="secrets-title">
            <h2 id="secrets-title">"Secrets"</h2>
            {new_secret.map(|(what, value)| view! {
                <div class="created" role="status">
                    <p><strong>{format!("Your new {what}")}</strong> " — keep it now, it is not shown again:"</p>
                    <p><code>{value.clone()}</code> <CopyButton text=value what=format!("the {what}")/></p>
                </div>
            })}
            <p>"Embed secret: key id " <code>{embed_secret_kid}</code> "."
                {previous_embed_secret_until.map(|u| format!(" The previous one still verifies tokens until {u}."))}</p>
            <form method="post" action="/console/rotate/embed-secret">
                {graces("embed-grace")}
                <button type="submit" class="button">"Make a new embed secret"</button>
            </form>
            <p>"Api key" {previous_api_key_until.map(|u| format!(": the previous one still works until {u}."))}</p>
            <form method="post" action="/console/rotate/api-key">
                {graces("key-grace")}
                <button type="submit" class="button">"Make a new api key"</button>
            </form>
        </section>
    }
    .into_any();
    let retention = view! {
        <section class="card" aria-labelledby="retention-title">
            <h2 id="retention-title">"Retention"</h2>
            <form method="post" action="/console/retention">
                <label for="days">"Keep conversations for (days, 1 to 3650; empty: until erased)"</label>
                <input id="days" name="days" type="number" min="1" max="3650" step="1"
                    value=retention_days.map(|d| d.to_string()).unwrap_or_default()/>
                <button type="submit" class="button">"Save"</button>
            </form>
        </section>
    }
    .into_any();
    let erasure = view! {
        <section class="card" aria-labelledby="erasure-title">
            <h2 id="erasure-title">"Erase a user"</h2>
            {erased.map(|(user, counts)| view! {
                <div role="status">
                    <p>{format!("Erased everything stored for {user}:")}</p>
                    <ul>{counts.into_iter().map(|(what, n)| view! { <li>{format!("{what}: {n}")}</li> }).collect_view()}</ul>
                </div>
            })}
            <form method="post" action="/console/erase">
                <label for="user">"The user's id (the sub of their tokens)"</label>
                <input id="user" name="user" type="text" required maxlength="256" autocomplete="off"/>
                <label class="check"><input name="confirm" type="checkbox" value="yes" required/>
                    " I understand this deletes their conversations and cannot be undone"</label>
                <button type="submit" class="button danger">"Erase"</button>
            </form>
        </section>
    }
    .into_any();
    view! { {secrets}{retention}{erasure} }
}

#[component]
fn Report(rules: Vec<Rule>) -> impl IntoView {
    let failed = rules.iter().filter(|r| r.status == "fail").count();
    let warned = rules.iter().filter(|r| r.status == "warn").count();
    let summary = match (failed, warned) {
        _ if rules.is_empty() => "The checker gave no results.".to_owned(),
        (0, 0) => "Every rule passed.".to_owned(),
        (0, w) => format!("No rule failed; {w} to look at."),
        (f, _) => format!("{f} failed: the assistant may not work with this tool server until they pass."),
    };
    view! {
        <section class="report" tabindex="0" aria-labelledby="report-title">
            <h3 id="report-title">"The host checker's report"</h3>
            <p>{summary}</p>
            <table>
                <thead><tr><th scope="col">"Result"</th><th scope="col">"Rule"</th><th scope="col">"What was seen"</th></tr></thead>
                <tbody>
                    {rules.into_iter().map(|r| {
                        let class = format!("status {}", r.status);
                        view! { <tr><td class=class>{r.status.to_uppercase()}</td><td><code>{r.id}</code></td><td>{r.detail}</td></tr> }
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

/// The token-minting snippets for a host's backend, with the workspace's
/// id filled in. Each is a file of `console/snippets/`, run by the test
/// suite with its real library: what the page shows is what was tested.
pub mod snippets {
    const PLACEHOLDER: &str = "{{WORKSPACE}}";

    /// (language, file name, source) for `workspace`.
    pub fn all(workspace: &str) -> [(&'static str, &'static str, String); 4] {
        [
            ("Node.js (jose)", "mint-token.mjs", node(workspace)),
            ("Python (PyJWT)", "mint_token.py", python(workspace)),
            ("Go (standard library)", "mint_token.go", go(workspace)),
            ("Rust (jsonwebtoken)", "mint_token.rs", rust(workspace)),
        ]
    }

    pub fn node(workspace: &str) -> String {
        include_str!("../snippets/mint-token.mjs").replace(PLACEHOLDER, workspace)
    }

    pub fn python(workspace: &str) -> String {
        include_str!("../snippets/mint_token.py").replace(PLACEHOLDER, workspace)
    }

    pub fn go(workspace: &str) -> String {
        include_str!("../snippets/mint_token.go").replace(PLACEHOLDER, workspace)
    }

    pub fn rust(workspace: &str) -> String {
        include_str!("../snippets/mint_token.rs").replace(PLACEHOLDER, workspace)
    }
}
