//! One connection per integration per process, reused across turns (not a
//! handshake per turn), and its tool list kept while the server says
//! nothing changed (`notifications/tools/list_changed`). A connection that
//! closed is replaced on its next use; one of an older version of the
//! integration (it was connected anew) is closed when the new one opens;
//! one no turn used for a while (`CA_MCP_IDLE_SECS`) is closed, so many
//! workspaces × replicas do not hold sessions for ever, and opened again
//! on its next use. The open ones are the `ca_mcp_connections` gauge; each
//! closed is counted by why (`ca_mcp_connections_closed_total`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::{Endpoint, McpError, Server, connect};

/// Which integration a connection is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub workspace_id: String,
    pub name: String,
    /// Changes on every (re)connection of the integration.
    pub version: i64,
}

/// A live connection, the tools it last listed and the UI resources it read.
pub struct Connection {
    pub server: Server,
    tools: tokio::sync::Mutex<Option<Arc<Vec<Value>>>>,
    /// The names of the tools, as last listed, that ship an MCP App's UI.
    app_tools: Mutex<HashSet<String>>,
    apps: tokio::sync::Mutex<HashMap<String, Arc<super::apps::AppResource>>>,
    /// When a turn last took it.
    used: Mutex<Instant>,
}

impl Connection {
    fn touch(&self) {
        *self.used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.used.lock().unwrap_or_else(PoisonError::into_inner).elapsed()
    }

    /// The server's tools: listed once, then kept until the server says
    /// they changed.
    pub async fn tools(&self) -> Result<Arc<Vec<Value>>, McpError> {
        let mut kept = self.tools.lock().await;
        if let Some(tools) = kept.as_ref()
            && !self.server.tools_changed()
        {
            return Ok(tools.clone());
        }
        Ok(self.listed(self.server.tools().await?, &mut kept))
    }

    /// Keeps the tools just listed, and which of them are apps.
    fn listed(&self, tools: Vec<Value>, kept: &mut Option<Arc<Vec<Value>>>) -> Arc<Vec<Value>> {
        let apps = tools
            .iter()
            .filter(|t| super::apps::resource_uri(t).is_some())
            .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
        *self.app_tools.lock().unwrap_or_else(PoisonError::into_inner) = apps;
        let tools = Arc::new(tools);
        *kept = Some(tools.clone());
        tools
    }

    /// Whether the tool `name`, as last listed, ships an MCP App's UI
    /// (nothing is listed for this: a tool not listed yet has none).
    pub fn has_app(&self, name: &str) -> bool {
        self.app_tools.lock().unwrap_or_else(PoisonError::into_inner).contains(name)
    }

    /// The UI resource `uri` (an MCP App's), read once per connection, so
    /// per integration and version.
    pub async fn app(&self, uri: &str) -> Result<Arc<super::apps::AppResource>, McpError> {
        let mut kept = self.apps.lock().await;
        if let Some(app) = kept.get(uri) {
            return Ok(app.clone());
        }
        let result = self.server.read_resource(uri).await?;
        let app = Arc::new(super::apps::ui_resource(uri, &result).map_err(McpError::Protocol)?);
        // A bounded cache: a server cannot make the assistant keep every URI it names.
        if kept.len() < 64 {
            kept.insert(uri.to_owned(), app.clone());
        }
        Ok(app)
    }

    /// The server's tools listed now, whatever was kept (and kept after).
    pub async fn fresh_tools(&self) -> Result<Arc<Vec<Value>>, McpError> {
        let mut kept = self.tools.lock().await;
        Ok(self.listed(self.server.tools().await?, &mut kept))
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

/// The process's connections.
#[derive(Clone, Default)]
pub struct Connections {
    slots: Arc<Mutex<HashMap<Key, Slot>>>,
}

impl Connections {
    /// The open connection for `key`, or a new one to `endpoint()`. Two
    /// turns asking at once share one handshake.
    pub async fn get(&self, key: &Key, endpoint: impl FnOnce() -> Endpoint) -> Result<Arc<Connection>, McpError> {
        let (slot, older) = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            let older: Vec<Slot> = slots
                .extract_if(|k, _| k.workspace_id == key.workspace_id && k.name == key.name && k.version != key.version)
                .map(|(_, slot)| slot)
                .collect();
            (slots.entry(key.clone()).or_default().clone(), older)
        };
        for old in older {
            close(old, "replaced");
        }
        let mut open = slot.lock().await;
        if let Some(connection) = open.as_ref() {
            if connection.server.is_open() {
                connection.touch();
                return Ok(connection.clone());
            }
            // The server ended it: replaced below.
            crate::metrics::mcp_connection_closed("lost");
            *open = None;
        }
        let connection = Arc::new(Connection {
            server: connect(endpoint()).await?,
            tools: Default::default(),
            app_tools: Default::default(),
            apps: Default::default(),
            used: Mutex::new(Instant::now()),
        });
        crate::metrics::mcp_connection_opened();
        *open = Some(connection.clone());
        Ok(connection)
    }

    /// Closes the connections no turn took for `idle` or longer (none
    /// that a call holds now); how many.
    pub fn close_idle(&self, idle: Duration) -> usize {
        let slots: Vec<Slot> = self.slots.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        let mut closed = 0;
        for slot in slots {
            // A slot being opened or taken right now is not idle.
            let Ok(mut open) = slot.try_lock() else { continue };
            let idle_one = open.as_ref().is_some_and(|c| c.idle_for() >= idle && Arc::strong_count(c) == 1);
            if !idle_one {
                continue;
            }
            // The slot stays (empty): a turn already waiting on it opens a
            // connection there, found by the next as usual.
            let connection = open.take().expect("checked above");
            drop(open);
            crate::metrics::mcp_connection_closed("idle");
            tokio::spawn(async move {
                if let Ok(connection) = Arc::try_unwrap(connection) {
                    connection.server.close().await;
                }
            });
            closed += 1;
        }
        closed
    }

    /// Closes idle connections every so often, for as long as the process runs.
    pub fn spawn_idle_closing(&self, idle: Duration) {
        let connections = self.clone();
        let every = (idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let closed = connections.close_idle(idle);
                if closed > 0 {
                    tracing::debug!(closed, "idle MCP connections closed");
                }
            }
        });
    }

    /// How many connections are open (tests).
    pub fn open(&self) -> usize {
        let slots: Vec<Slot> = self.slots.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        slots.iter().filter(|s| s.try_lock().map_or(true, |open| open.is_some())).count()
    }

    /// Closes and forgets every connection of an integration (it was
    /// removed or replaced).
    pub fn forget(&self, workspace_id: &str, name: &str) {
        let gone: Vec<Slot> = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            slots.extract_if(|k, _| k.workspace_id == workspace_id && k.name == name).map(|(_, slot)| slot).collect()
        };
        for slot in gone {
            close(slot, "removed");
        }
    }

    /// How many connections are kept (metrics, tests).
    pub fn len(&self) -> usize {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Ends a connection's session in the background, once no call holds it.
fn close(slot: Slot, reason: &'static str) {
    tokio::spawn(async move {
        let Some(connection) = slot.lock().await.take() else { return };
        crate::metrics::mcp_connection_closed(reason);
        if let Ok(connection) = Arc::try_unwrap(connection) {
            connection.server.close().await;
        }
        // Still held by a call: it closes when the last holder drops it.
    });
}
