//! What a tool call comes to, and the one place it goes: the cards are
//! admitted (each link once per turn, within the turn's share), the result
//! is saved for the model, and the cards and component are shown.

use serde_json::{Value, json};
use widget::wire::{ComponentEvent, DisplayCards};

use super::context::Turn;
use super::events::TurnEvent;
use crate::component::HostComponent;
use crate::db::{self, NewMessage};
use crate::display::cards_from_output;

/// Characters of one tool result handed to the model, at most.
pub const MAX_TOOL_RESULT_CHARS: usize = 16_000;

/// What a tool call comes to: what the model is told, and what the user sees.
#[derive(Debug, Default)]
pub(super) struct ToolOutcome {
    pub content: String,
    pub cards: Vec<widget::wire::DisplayCard>,
    pub component: Option<HostComponent>,
    /// An MCP App to show with the result (the sandbox is configured).
    pub app: Option<Box<AppShown>>,
}

/// An MCP App's tool ran: what its app is shown with.
#[derive(Debug)]
pub(super) struct AppShown {
    /// The app already shown when its tool was called ([`Turn::start_app`]),
    /// if it was.
    pub component_id: Option<String>,
    pub integration: String,
    pub version: i64,
    /// The tool's own name on its server, and what the user reads.
    pub tool: String,
    pub title: String,
    pub resource_uri: String,
    pub input: Value,
    /// The whole `CallToolResult`, for the app alone.
    pub result: Value,
}

impl ToolOutcome {
    /// An answer to the model alone (a refusal, a mistake, a decline).
    pub fn answer(content: String) -> Self {
        Self { content, ..Self::default() }
    }

    pub fn error(message: &str, code: &str) -> Self {
        Self::answer(tool_error(message, code))
    }

    /// A host's output: the model sees it without what is only shown.
    pub fn output(output: Value) -> Self {
        let cards = cards_from_output(&output);
        let component = crate::component::from_output(&output);
        Self { content: for_model(output), cards, component, app: None }
    }
}

impl Turn<'_> {
    /// Saves and shows `outcome` as the answer to `call_id`; returns what
    /// the model is told.
    pub(super) async fn deliver(&self, call_id: &str, outcome: ToolOutcome) -> anyhow::Result<String> {
        let ToolOutcome { content, cards, component, app } = outcome;
        let admitted = self.progress.lock().cards.admit(cards);
        let saved = NewMessage::tool_result(call_id, &content, &admitted);
        let message_id = db::append_message(&self.engine.pool, &self.input.conversation_id, saved).await?;
        self.show_outcome(call_id, &message_id, admitted, component, app).await;
        Ok(content)
    }

    /// Shows `outcome` as the answer to `call_id` and holds it to be saved
    /// with the turn's next write (the next step's message, or the turn's
    /// end: issue #47, one call to the database fewer per tool step);
    /// returns what the model is told. A process that dies before then
    /// loses it with the turn, as it would lose a result still running.
    pub(super) async fn deliver_held(&self, call_id: &str, outcome: ToolOutcome) -> String {
        let ToolOutcome { content, cards, component, app } = outcome;
        let (message_id, admitted) = {
            let mut progress = self.progress.lock();
            let admitted = progress.cards.admit(cards);
            let held = db::HeldResult::new(call_id, &content, &admitted);
            let id = held.id.clone();
            progress.held_results.push(held);
            (id, admitted)
        };
        self.show_outcome(call_id, &message_id, admitted, component, app).await;
        content
    }

    /// Shows what came with a tool's result, saved (or held) as `message_id`.
    async fn show_outcome(
        &self,
        call_id: &str,
        message_id: &str,
        admitted: Vec<widget::wire::DisplayCard>,
        component: Option<HostComponent>,
        app: Option<Box<AppShown>>,
    ) {
        if !admitted.is_empty() {
            self.events.send(TurnEvent::Display(DisplayCards { call_id: call_id.to_owned(), cards: admitted }));
        }
        // Boxed: only some results have them, and a turn's future holds
        // room for its largest part while it waits on a tool.
        if let Some(component) = component {
            Box::pin(self.show_component(call_id, message_id, component)).await;
        }
        if let Some(app) = app {
            Box::pin(self.show_app(call_id, message_id, app)).await;
        }
    }

    /// Shows an MCP App as its tool is called: its view is saved
    /// `running` (the app gets the tool's input at once) and its component
    /// shown; [`Turn::show_app`] gives it the result, and the turn's close
    /// cancels it if the tool never answered. Nothing without a sandbox
    /// origin, or when the view cannot be saved (it is shown when the tool
    /// answers instead).
    pub(super) async fn start_app(
        &self,
        call_id: &str,
        tool: &crate::host::ToolSpec,
        source: &crate::sources::Source,
        arguments: &Value,
    ) -> Option<String> {
        self.engine.apps.as_ref()?;
        let resource_uri = tool.origin.app.as_ref()?;
        let title = tool.origin.title.clone().unwrap_or_else(|| tool.origin.name.clone());
        let app = AppShown {
            component_id: None,
            integration: source.name.clone(),
            version: source.version,
            tool: tool.origin.name.clone(),
            title,
            resource_uri: resource_uri.clone(),
            input: arguments.clone(),
            result: Value::Null,
        };
        let component_id = self.save_app(call_id, "", &app, None).await?;
        self.progress.lock().running_apps.push(component_id.clone());
        self.emit_app(call_id, &component_id, &app.title);
        Some(component_id)
    }

    /// Gives an MCP App its tool's result: the app shown when its tool was
    /// called, or a new one. Nothing is shown without a sandbox origin, or
    /// when the view cannot be saved (the reply goes on without it).
    async fn show_app(&self, call_id: &str, message_id: &str, app: Box<AppShown>) {
        if self.engine.apps.is_none() {
            return;
        }
        if let Some(component_id) = &app.component_id {
            self.progress.lock().running_apps.retain(|running| running != component_id);
            let now = self.engine.clock.now_ms();
            if let Err(error) = db::apps::finish(&self.engine.pool, component_id, message_id, &app.result, now).await {
                tracing::error!(error = format!("{error:#}"), "cannot save an app's result");
            }
            return;
        }
        if let Some(component_id) = self.save_app(call_id, message_id, &app, Some(&app.result)).await {
            self.emit_app(call_id, &component_id, &app.title);
        }
    }

    /// Saves an app's view (`running` without a result); its component id.
    async fn save_app(
        &self,
        call_id: &str,
        message_id: &str,
        app: &AppShown,
        result: Option<&Value>,
    ) -> Option<String> {
        let caller = &self.input.caller;
        let data = serde_json::json!({ "title": app.title });
        let view = db::apps::NewView {
            conversation_id: &self.input.conversation_id,
            workspace_id: &caller.workspace_id,
            external_user_id: &caller.external_user_id,
            message_id,
            call_id,
            data: &data,
            integration: &app.integration,
            integration_version: app.version,
            tool: &app.tool,
            resource_uri: &app.resource_uri,
            input: &app.input,
            result,
        };
        db::apps::show(&self.engine.pool, view, self.engine.clock.now_ms())
            .await
            .map_err(|error| tracing::error!(error = format!("{error:#}"), "cannot save an app's view"))
            .ok()
    }

    /// The `component` event of an app: the widget frames our bridge page,
    /// which fetches the app's HTML, input and result with the app token
    /// in its address.
    fn emit_app(&self, call_id: &str, component_id: &str, title: &str) {
        let Some(frames) = &self.engine.apps else { return };
        let src = frames.src(component_id, &self.input.caller, self.engine.clock.now_ms() / 1000);
        self.events.send(TurnEvent::Component(ComponentEvent {
            call_id: call_id.to_owned(),
            kind: db::apps::KIND.to_owned(),
            data: serde_json::json!({ "title": title, "src": src }),
            component_id: component_id.to_owned(),
            update: false,
        }));
    }

    /// Saves a result's component and shows it: a new one, or fresh data
    /// for the ones of its kind already shown. A component that cannot be
    /// saved is not shown (the reply goes on without it).
    async fn show_component(&self, call_id: &str, message_id: &str, component: HostComponent) {
        let shown = db::components::show(
            &self.engine.pool,
            &self.input.conversation_id,
            message_id,
            call_id,
            &component.kind,
            &component.data,
            &component.tools,
            component.update,
        )
        .await;
        let (component_id, update) = match shown {
            Ok(db::components::Shown::New(id)) => (id, false),
            Ok(db::components::Shown::Updated(id)) => (id, true),
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot save a component");
                return;
            }
        };
        self.events.send(TurnEvent::Component(ComponentEvent {
            call_id: call_id.to_owned(),
            kind: component.kind,
            data: component.data,
            component_id,
            update,
        }));
    }
}

/// A tool result that tells the model why nothing ran.
pub(super) fn tool_error(message: &str, code: &str) -> String {
    json!({ "error": message, "code": code }).to_string()
}

/// The output as the model sees it: without `display` and `component`
/// (the user sees those) and bounded in size.
fn for_model(mut output: Value) -> String {
    if let Some(map) = output.as_object_mut() {
        map.remove("display");
        map.remove("component");
    }
    let text = output.to_string();
    if text.chars().count() <= MAX_TOOL_RESULT_CHARS {
        return text;
    }
    let partial: String = text.chars().take(MAX_TOOL_RESULT_CHARS).collect();
    json!({ "truncated": true, "partial": partial }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_does_not_see_display_and_long_output_is_bounded() {
        let text = for_model(json!({"status": "ok", "display": [{"title": "x"}], "component": {"kind": "k"}}));
        assert_eq!(text, r#"{"status":"ok"}"#);
        let long = for_model(json!({"blob": "x".repeat(MAX_TOOL_RESULT_CHARS * 2)}));
        let parsed: Value = serde_json::from_str(&long).unwrap();
        assert_eq!(parsed["truncated"], true);
        assert!(long.len() < MAX_TOOL_RESULT_CHARS + 100);
    }
}
