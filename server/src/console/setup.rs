//! The onboarding page: the workspace and its origins, the tool server
//! (connect, check again, the checker's report), its MCP servers (connect,
//! check, disconnect, the connect report), the snippets, and the look with
//! its live preview.

use ::console::{Body as PageBody, McpServer, Notice, Onboarding, Page, Rule, Theme, ToolServer};
use axum::Json;
use axum::body::Body;
use axum::extract::{Form, Query};
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::entry::lines;
use super::shared::{InWorkspace, Signed, failure, notice, page, problem, render, segment, strings, text};
use crate::db;

/// The preview's token lives this long; the preview asks for a fresh one
/// (`POST /console/preview/token`) when it runs out.
const PREVIEW_TOKEN_SECS: i64 = 3600;
/// Who the preview chats as: its turns are real, and listed under this user.
pub const PREVIEW_USER: &str = "console-preview";

impl Signed {
    /// The onboarding page of the session's workspace, with `notice` and
    /// the checker's `report`.
    pub(super) async fn onboarding(&self, notice: Option<Notice>, report: Option<Vec<Rule>>) -> Result<Page, Response> {
        let workspace = self.workspace().await?;
        let integrations = self.call(Method::GET, "/v1/integrations", None).await?.json;
        let listed = integrations["integrations"].as_array().cloned().unwrap_or_default();
        let remote = listed.iter().find(|i| i["provider"] == crate::workspaces::PROVIDER);
        let tool_server = remote.map(|integration| ToolServer {
            base_url: text(&integration["base_url"]),
            allowed_tools: strings(&integration["allowed_tools"]).unwrap_or_default(),
            listed: None,
        });
        let mcp_servers = listed
            .iter()
            .filter(|i| i["kind"] == "mcp")
            .map(|i| McpServer {
                name: text(&i["provider"]),
                url: text(&i["base_url"]),
                headers: strings(&i["headers"]).unwrap_or_default(),
                trust_annotations: i["trust_annotations"].as_bool().unwrap_or(false),
                allowed_tools: strings(&i["allowed_tools"]).unwrap_or_default(),
                listed: None,
            })
            .collect();
        let body = PageBody::Onboarding(Onboarding {
            workspace_id: text(&workspace["id"]),
            name: text(&workspace["name"]),
            allowed_origins: strings(&workspace["allowed_origins"]).unwrap_or_default(),
            tool_server,
            report,
            mcp_servers,
            mcp_report: None,
            theme: Theme {
                mode: workspace["theme"]["mode"].as_str().map(str::to_owned),
                accent: workspace["theme"]["accent"].as_str().map(str::to_owned),
                radius: workspace["theme"]["radius"].as_u64().and_then(|r| u8::try_from(r).ok()),
                font: workspace["theme"]["font"].as_str().map(str::to_owned),
            },
            entered_base_url: None,
            assistant_origin: self.state.public_origin.to_string(),
            start_screens: start_screens(&workspace["welcome"]),
            app_permissions: strings(&workspace["app_permissions"]).unwrap_or_default(),
            attachment_types: strings(&workspace["attachment_types"]).unwrap_or_default(),
        });
        Ok(page("Set up your assistant", text(&workspace["name"]), notice, body))
    }

    /// Changes the workspace (`PATCH /v1/workspace`): back to `done` when
    /// the API took it, else the onboarding page with what it said.
    async fn patch_workspace(&self, body: Value, done: &str) -> Result<Response, Response> {
        let answer = self.call(Method::PATCH, "/v1/workspace", Some(body)).await?;
        if answer.ok() {
            return Ok(Redirect::to(done).into_response());
        }
        Ok(render(answer.status, self.onboarding(answer.problem(), None).await?))
    }
}

#[derive(Deserialize)]
pub(super) struct WorkspaceForm {
    name: String,
    #[serde(default)]
    origins: String,
}

pub(super) async fn save_workspace(
    console: InWorkspace,
    Form(form): Form<WorkspaceForm>,
) -> Result<Response, Response> {
    let body = json!({ "name": form.name, "allowed_origins": lines(&form.origins) });
    console.patch_workspace(body, "/console?done=saved").await
}

#[derive(Deserialize)]
pub(super) struct ToolServerForm {
    base_url: String,
    secret: String,
}

pub(super) async fn connect(console: InWorkspace, Form(form): Form<ToolServerForm>) -> Result<Response, Response> {
    tool_server(console, form, "/v1/integrations/generic-rest/connect").await
}

pub(super) async fn check(console: InWorkspace, Form(form): Form<ToolServerForm>) -> Result<Response, Response> {
    tool_server(console, form, "/v1/integrations/generic-rest/check").await
}

/// Connects or checks a tool server; the page shows the checker's report.
async fn tool_server(console: InWorkspace, form: ToolServerForm, path: &str) -> Result<Response, Response> {
    let base_url = form.base_url.trim();
    let answer = console.call(Method::POST, path, Some(json!({ "base_url": base_url, "secret": form.secret }))).await?;
    let connecting = path.ends_with("/connect");
    let (said, report) = if answer.ok() {
        // Connect answers `{…, "report"}`, check the report itself.
        let rules = answer.json.get("report").unwrap_or(&answer.json)["rules"].as_array().cloned().unwrap_or_default();
        let report = rules
            .iter()
            .map(|r| Rule { id: text(&r["id"]), status: text(&r["status"]), detail: text(&r["detail"]) })
            .collect();
        let said = if connecting { "Connected. The checker's report is below." } else { "Checked." };
        (notice(said), Some(report))
    } else {
        (answer.problem(), None)
    };
    let mut page = console.onboarding(said, report).await?;
    // The form keeps what was typed (never the secret).
    if let PageBody::Onboarding(onboarding) = &mut page.body {
        onboarding.entered_base_url = Some(base_url.to_owned());
        if let (true, Some(server)) = (connecting && answer.ok(), &mut onboarding.tool_server) {
            server.listed = strings(&answer.json["tools"]);
        }
    }
    Ok(render(answer.status, page))
}

#[derive(Deserialize)]
pub(super) struct McpForm {
    name: String,
    url: String,
    #[serde(default)]
    authorization: String,
    #[serde(default)]
    trust_annotations: Option<String>,
}

pub(super) async fn connect_mcp(console: InWorkspace, Form(form): Form<McpForm>) -> Result<Response, Response> {
    mcp_server(console, form, true).await
}

pub(super) async fn check_mcp(console: InWorkspace, Form(form): Form<McpForm>) -> Result<Response, Response> {
    mcp_server(console, form, false).await
}

/// Connects or checks an MCP server; the page shows its connect report.
async fn mcp_server(console: InWorkspace, form: McpForm, connecting: bool) -> Result<Response, Response> {
    let authorization = form.authorization.trim();
    let headers = if authorization.is_empty() { json!({}) } else { json!({ "Authorization": authorization }) };
    let trust = form.trust_annotations.is_some();
    let mut body = json!({ "url": form.url.trim(), "headers": headers, "trust_annotations": trust });
    let path = if connecting {
        body["name"] = json!(form.name.trim());
        "/v1/integrations/mcp/connect"
    } else {
        "/v1/integrations/mcp/check"
    };
    let answer = console.call(Method::POST, path, Some(body)).await?;
    let (said, rules) = if answer.ok() {
        let rules = answer.json.get("report").unwrap_or(&answer.json)["rules"].as_array().cloned().unwrap_or_default();
        let rules: Vec<Rule> = rules
            .iter()
            .map(|r| Rule { id: text(&r["id"]), status: text(&r["status"]), detail: text(&r["detail"]) })
            .collect();
        let said = if connecting { "Connected. Its connect report is below." } else { "Checked." };
        (notice(said), Some(rules))
    } else {
        (answer.problem(), None)
    };
    let mut page = console.onboarding(said, None).await?;
    if let PageBody::Onboarding(onboarding) = &mut page.body {
        onboarding.mcp_report = rules;
        if connecting && answer.ok() {
            let name = form.name.trim();
            let tools: Vec<String> = answer.json["tools"]
                .as_array()
                .map(|tools| tools.iter().map(|t| format!("{} ({})", text(&t["name"]), text(&t["verb"]))).collect())
                .unwrap_or_default();
            if let Some(server) = onboarding.mcp_servers.iter_mut().find(|s| s.name == name) {
                server.listed = Some(tools);
            }
        }
    }
    Ok(render(answer.status, page))
}

#[derive(Deserialize)]
pub(super) struct McpDisconnectForm {
    name: String,
}

/// Disconnects an MCP server.
pub(super) async fn disconnect_mcp(
    console: InWorkspace,
    Form(form): Form<McpDisconnectForm>,
) -> Result<Response, Response> {
    let name = form.name.trim();
    let valid = !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !valid || name == crate::workspaces::PROVIDER {
        return Ok(render(StatusCode::BAD_REQUEST, console.onboarding(problem("No such MCP server."), None).await?));
    }
    let answer = console.call(Method::DELETE, &format!("/v1/integrations/{}", segment(name)), None).await?;
    if answer.status == StatusCode::NO_CONTENT {
        return Ok(Redirect::to("/console?done=disconnected").into_response());
    }
    Ok(render(answer.status, console.onboarding(answer.problem(), None).await?))
}

/// The browser features MCP Apps may have: a box ticked per feature.
#[derive(Deserialize)]
pub(super) struct AppPermissionsForm {
    #[serde(default)]
    camera: Option<String>,
    #[serde(default)]
    microphone: Option<String>,
    #[serde(default)]
    geolocation: Option<String>,
    #[serde(default, rename = "clipboard-write")]
    clipboard_write: Option<String>,
}

/// Sets the browser features the workspace's MCP Apps may have.
pub(super) async fn save_app_permissions(
    console: InWorkspace,
    Form(form): Form<AppPermissionsForm>,
) -> Result<Response, Response> {
    let ticked = [
        ("camera", &form.camera),
        ("microphone", &form.microphone),
        ("geolocation", &form.geolocation),
        ("clipboard-write", &form.clipboard_write),
    ];
    let features: Vec<&str> = ticked.iter().filter(|(_, box_)| box_.is_some()).map(|(f, _)| *f).collect();
    console.patch_workspace(json!({ "app_permissions": features }), "/console?done=saved").await
}

/// Sets the kinds of file the workspace's visitors may attach (the form's
/// ticked `kind`s; all of them: every kind the server takes, now and later).
pub(super) async fn save_attachment_types(
    console: InWorkspace,
    axum::extract::RawForm(form): axum::extract::RawForm,
) -> Result<Response, Response> {
    let ticked: Vec<String> =
        url::form_urlencoded::parse(&form).filter(|(k, _)| k == "kind").map(|(_, v)| v.into_owned()).collect();
    let every = ::console::ATTACHMENT_KINDS.iter().all(|(kind, _)| ticked.iter().any(|t| t == kind));
    let types = if every { Value::Null } else { json!(ticked) };
    console.patch_workspace(json!({ "attachment_types": types }), "/console?done=saved").await
}

#[derive(Deserialize)]
pub(super) struct ThemeForm {
    #[serde(default)]
    mode: String,
    #[serde(default)]
    accent: String,
    #[serde(default)]
    radius: String,
    #[serde(default)]
    font: String,
}

/// Saves the workspace's default look; an empty field is the default.
pub(super) async fn save_theme(console: InWorkspace, Form(form): Form<ThemeForm>) -> Result<Response, Response> {
    let given = |value: &str| Some(value.trim()).filter(|v| !v.is_empty()).map(str::to_owned);
    let mut theme = serde_json::Map::new();
    for (key, value) in [("mode", given(&form.mode)), ("accent", given(&form.accent)), ("font", given(&form.font))] {
        if let Some(value) = value {
            theme.insert(key.to_owned(), json!(value));
        }
    }
    if let Some(radius) = given(&form.radius) {
        // Passed on as written when it is no number: the API names what is wrong with it.
        theme.insert("radius".to_owned(), radius.parse::<u8>().map_or_else(|_| json!(radius), |r| json!(r)));
    }
    console.patch_workspace(json!({ "theme": theme }), "/console?done=saved").await
}

/// Each language's start screen as the API shows it (`welcome`), every
/// language listed.
fn start_screens(welcome: &Value) -> Vec<::console::StartScreen> {
    const NAMES: [&str; 6] = ["English", "Español", "Français", "Deutsch", "日本語", "العربية"];
    widget::wire::i18n::LANGUAGES
        .iter()
        .zip(NAMES)
        .map(|(lang, name)| ::console::StartScreen {
            lang: (*lang).to_owned(),
            name: name.to_owned(),
            greeting: text(&welcome[lang]["greeting"]),
            prompts: strings(&welcome[lang]["prompts"]).unwrap_or_default(),
        })
        .collect()
}

/// Saves the start screens: per language `greeting_{lang}` and
/// `prompts_{lang}` (one per line); a language with neither has none.
pub(super) async fn save_welcome(
    console: InWorkspace,
    Form(form): Form<std::collections::HashMap<String, String>>,
) -> Result<Response, Response> {
    let mut welcome = serde_json::Map::new();
    for lang in widget::wire::i18n::LANGUAGES {
        let greeting = form.get(&format!("greeting_{lang}")).map(|g| g.trim()).filter(|g| !g.is_empty());
        let prompts = form.get(&format!("prompts_{lang}")).map(|p| lines(p)).unwrap_or_default();
        if greeting.is_none() && prompts.is_empty() {
            continue;
        }
        let mut screen = json!({ "prompts": prompts });
        if let Some(greeting) = greeting {
            screen["greeting"] = json!(greeting);
        }
        welcome.insert(lang.to_owned(), screen);
    }
    console.patch_workspace(json!({ "welcome": welcome }), "/console?done=saved").await
}

/// A token for the preview to chat with, as `console-preview`.
async fn preview_token_of(console: &InWorkspace) -> Result<(db::WorkspaceRow, String), Response> {
    let workspace_id = console.session.workspace_id.clone().unwrap_or_default();
    let workspace = match db::workspace(&console.state.pool, &workspace_id).await {
        Ok(Some(workspace)) => workspace,
        Ok(None) => return Err(console.signed_out("This workspace no longer exists.")),
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "console: cannot load the workspace for the preview");
            return Err(failure("The preview could not be made. Try again."));
        }
    };
    match console.state.vault.open(&workspace.embed_secret_enc) {
        Ok(secret) => {
            let token = crate::auth::mint(&workspace.id, secret.expose(), PREVIEW_USER, &[], PREVIEW_TOKEN_SECS);
            Ok((workspace, token))
        }
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "console: cannot open the embed secret for the preview");
            Err(failure("The preview could not be made. Try again."))
        }
    }
}

/// A look to preview before it is saved (`look=1`: exactly these values,
/// each checked as the widget's own options are; an empty or wrong one is
/// the default).
#[derive(Deserialize, Default)]
pub(super) struct PreviewLook {
    look: Option<String>,
    theme: Option<String>,
    accent: Option<String>,
    radius: Option<String>,
    font: Option<String>,
}

impl PreviewLook {
    fn theme(&self) -> Option<widget::wire::Theme> {
        let given = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
        (self.look.as_deref() == Some("1")).then(|| {
            let (mode, accent, radius, font) =
                (given(&self.theme), given(&self.accent), given(&self.radius), given(&self.font));
            widget::wire::Theme::parse(mode.as_deref(), accent.as_deref(), radius.as_deref(), font.as_deref())
        })
    }
}

/// The live preview: the widget page as the workspace's visitors get it
/// (its default look, or the look the console's controls hold), chatting
/// as `console-preview`, framed only by the console's own pages.
pub(super) async fn preview(
    console: InWorkspace,
    Query(look): Query<PreviewLook>,
    request: Request<Body>,
) -> Result<Response, Response> {
    let (workspace, token) = preview_token_of(&console).await?;
    let boot = widget::wire::WidgetBoot {
        workspace_id: workspace.id.clone(),
        allowed_origins: Vec::new(),
        demo_model: console.state.pages.demo_model,
        title: workspace.name.clone(),
        theme: look.theme().unwrap_or_else(|| workspace.theme()),
        token: Some(token),
        renew_path: Some("/console/preview/token".into()),
        caddie: None,
        accept: crate::attachments::accept(workspace.attachment_types().as_deref()),
        ..widget::wire::WidgetBoot::default()
    };
    // No other ancestor: the widget page is framed by our own origin only.
    let mut response = console.state.pages.render(boot, &workspace.welcome(), &[], request).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    Ok(response)
}

/// A fresh token for the preview once its own runs out (`{"token"}`):
/// the preview's widget asks with the console's session cookie, from our
/// own origin.
pub(super) async fn preview_token(console: InWorkspace) -> Result<Response, Response> {
    let (_, token) = preview_token_of(&console).await?;
    let mut response = (StatusCode::OK, Json(json!({ "token": token }))).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
