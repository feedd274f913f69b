//! Configuration, read once from the environment at start-up
//! (assistant-api.md §4). Every error names the variable at fault.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::secret::Secret;

/// Everything the server needs to start, validated.
#[derive(Clone, Debug)]
pub struct Config {
    /// `LEPTOS_SITE_ADDR`: where to listen. Port 0 picks a free port (tests).
    pub listen: SocketAddr,
    /// `CA_DATA_DIR`: the default SQLite file and generated keys live here.
    pub data_dir: PathBuf,
    /// `DATABASE_URL`, or an SQLite file in the data directory.
    pub database_url: String,
    /// `CA_ADMIN_TOKEN`: bearer for `POST /v1/workspaces`; none disables it.
    pub admin_token: Option<Secret>,
    pub model: ModelConfig,
    pub limits: TurnLimits,
    pub rates: RateLimits,
    /// `CA_ALLOW_PRIVATE_TOOL_HOSTS=1`: tool hosts may be loopback/private.
    pub allow_private_tool_hosts: bool,
    /// `CA_ALLOW_PRIVATE_MODEL_HOSTS=1`: a workspace's own model may be on
    /// a loopback/private address (a local Ollama or vLLM).
    pub allow_private_model_hosts: bool,
    /// `CA_TOOL_HOST_CALLS_PER_CONNECTION`: tool calls in flight on one
    /// HTTP/2 connection to a host before another is opened (default 100).
    pub tool_host_calls_per_connection: usize,
    /// `CA_TOOL_HOSTS_CA_FILE`: PEM certificates trusted for Remote Tools
    /// hosts and MCP servers beside the system's (behind a private CA), one
    /// per entry.
    pub tool_hosts_ca: Vec<Vec<u8>>,
    /// `CA_SECRET_KEY`: 64 hex digits; otherwise a key file in the data dir.
    pub secret_key: Option<Secret>,
    /// `CA_SECRET_KEY_PREVIOUS`: after a rotation's switch, the old key: it
    /// opens what it sealed, and the server re-seals that under the new key
    /// at start.
    pub secret_key_previous: Option<Secret>,
    /// `CA_SECRET_KEY_NEXT`: before a rotation's switch (several
    /// replicas), the new key: it opens what replicas already switched
    /// have sealed; nothing is sealed with it yet.
    pub secret_key_next: Option<Secret>,
    /// `CA_DEMO`: seed the Acme Bistro demo workspace (default on).
    pub demo: bool,
    /// `CA_DEMO_KNOWLEDGE`: the demo workspace reads the bistro's help
    /// center as a knowledge source (default on with the demo).
    pub demo_knowledge: bool,
    /// `CA_BISTRO_SOLD_OUT`: menu ids the demo bistro marks unavailable (comma-separated).
    pub bistro_sold_out: Vec<String>,
    /// `CA_MAX_ATTACHMENT_BYTES`: the largest attachment taken (default 10 MB).
    pub max_attachment_bytes: u64,
    /// `CA_ATTACHMENT_LINK_SECS`: how long a tool's signed link to an
    /// attachment lasts (default 900: as long as a change may wait for Apply).
    pub attachment_link_lifetime: Duration,
    /// `CA_ATTACHMENTS_URL`: where attachments are kept, `s3://bucket[/prefix]`
    /// (with the `AWS_*` variables); by default `CA_DATA_DIR/attachments`.
    pub attachments_s3: Option<S3Config>,
    /// `LEPTOS_SITE_ROOT`: where the built widget (pkg/, CSS) lives.
    pub site_root: PathBuf,
    /// `LEPTOS_OUTPUT_NAME`: the file stem of the widget's JS/WASM/CSS.
    pub output_name: String,
    /// `CA_PUBLIC_URL`: the origin browsers reach this server at (the OIDC
    /// redirect URI and secure cookies follow it); by default the listen address.
    pub public_url: Option<url::Url>,
    /// The Caddie tool settings (assistant-api.md §5); none without
    /// `CADDIE_TOOL_SECRET`, and then every Caddie route answers 404.
    pub caddie: Option<CaddieConfig>,
    /// `CA_CADDIE_RETRY_MS`: how often queued status reports are retried (default 5000).
    pub caddie_retry_every: Duration,
    /// `CA_RETENTION_SWEEP_MS`: how often conversations past their
    /// workspace's retention are deleted (default an hour).
    pub retention_every: Duration,
    /// `CA_USAGE_FLUSH_MS`: how often a replica adds its usage counts to
    /// the database (default 10 000).
    pub usage_flush_every: Duration,
    /// `CA_AUDIT_RETENTION_DAYS`: audit entries older than this are deleted (unset: kept).
    pub audit_retention_days: Option<u64>,
    /// `CA_TRUSTED_PROXIES`: the reverse proxies whose `X-Forwarded-For`
    /// and `X-Forwarded-Proto` are believed (none by default).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// `CA_MCP_IDLE_SECS`: an MCP server connection no turn used for this
    /// long is closed (opened again on its next use; default 300).
    pub mcp_idle: Duration,
    /// `CA_SHUTDOWN_GRACE_MS`: how long running turns may go on after a
    /// SIGTERM before they are stopped (default 20000).
    pub shutdown_grace: Duration,
    /// `CA_IDLE_CONNECTION_SECS`: a connection that sends no complete
    /// request head for this long — from its opening, or from the end of
    /// its last answer — is closed (default 620; 0: never). A streaming
    /// answer is never cut by it.
    pub idle_connection: Option<Duration>,
    /// `CA_METRICS_TOKEN`: `/metrics` on the main listener asks for this
    /// bearer (at least 32 characters); without it there is no `/metrics`
    /// there.
    pub metrics_token: Option<Secret>,
    /// `CA_METRICS_ADDR`: a separate listen address serving `/metrics`
    /// (a private interface the scraper reaches; the token too, if set).
    pub metrics_listen: Option<SocketAddr>,
    /// `CA_SANDBOX_URL`: the origin MCP Apps run at (docs/mcp.md): never
    /// the assistant's own. Without it (and without `CA_SANDBOX_ADDR`)
    /// apps are not shown; their tools still answer the model.
    pub sandbox_url: Option<url::Url>,
    /// `CA_SANDBOX_ADDR`: a listener of its own that serves only the
    /// sandbox page; without `CA_SANDBOX_URL`, its address is the origin.
    pub sandbox_listen: Option<SocketAddr>,
    /// The bounds of knowledge sources (`CA_KNOWLEDGE_*`).
    pub knowledge: KnowledgeSettings,
}

/// Launched from the Caddie hub (caddie-tool-contract-ct1.md).
#[derive(Clone, Debug)]
pub struct CaddieConfig {
    /// `CADDIE_TOOL_SLUG`: the launch token's `aud`, the `X-Caddie-Tool` header.
    pub slug: String,
    /// `CADDIE_TOOL_SECRET`: its bytes exactly as written are the key material.
    pub secret: Secret,
    /// `CADDIE_TOOL_SECRET_PREV`: the previous secret during a rotation.
    pub secret_prev: Option<Secret>,
    /// `CADDIE_HUB_ORIGIN`: scheme, host and port only; https unless loopback.
    pub hub_origin: url::Url,
    pub oidc: OidcConfig,
}

/// The identity provider users sign in with (`OIDC_*`).
#[derive(Clone, Debug)]
pub struct OidcConfig {
    pub issuer: url::Url,
    pub client_id: String,
    pub client_secret: Secret,
    /// `OIDC_ID_TOKEN_HS256=1`: accept ID tokens signed HS256 with the
    /// client secret (only when the provider advertises it too). Off: a
    /// leaked client secret must not mint identities.
    pub allow_hs256: bool,
}

/// Which model answers: the built-in offline demo model, or a real endpoint.
#[derive(Clone, Debug)]
pub enum ModelConfig {
    /// No `OPENAI_BASE_URL`/`OPENAI_API_KEY`: the server's own demo model.
    Demo,
    /// Any OpenAI-compatible chat-completions endpoint.
    /// `vision`: `CA_MODEL_VISION` (1 or 0), whether the model is given
    /// images; unset, known vision models are (`llm::model::known_vision`).
    Remote { base_url: String, api_key: Secret, model: String, vision: Option<bool> },
}

/// The bounds of one turn; each has a variable and a default.
#[derive(Clone, Debug)]
pub struct TurnLimits {
    /// `CA_MAX_ITERATIONS`: model steps per turn (default 8).
    pub max_iterations: u32,
    /// `CA_TURN_TIMEOUT_MS`: wall time of a turn (default 90 000).
    pub turn_timeout: Duration,
    /// `CA_MAX_TURN_TOKENS`: tokens per turn, from usage or estimated (default 60 000).
    pub max_turn_tokens: u64,
    /// `CA_TOOL_TIMEOUT_MS`: one call to a tool host (default 10 000).
    pub tool_timeout: Duration,
    /// `CA_ACTION_TTL_SECS`: how long a previewed action may be applied (default 900).
    pub action_ttl: Duration,
    /// `CA_MAX_HISTORY_TOKENS`: tokens of earlier turns sent with a step
    /// (default 16 000; the current turn is always sent whole).
    pub max_history_tokens: u64,
}

impl TurnLimits {
    /// Longer than any turn may run: a turn (or an app's tool) still
    /// unfinished after this had its process die.
    pub fn longest_turn(&self) -> Duration {
        self.turn_timeout + self.tool_timeout * 2 + Duration::from_secs(60)
    }
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self {
            max_iterations: 8,
            turn_timeout: Duration::from_millis(90_000),
            max_turn_tokens: 60_000,
            tool_timeout: Duration::from_millis(10_000),
            action_ttl: Duration::from_secs(15 * 60),
            max_history_tokens: 16_000,
        }
    }
}

/// The bounds of fetching and keeping knowledge; each has a variable.
#[derive(Clone, Debug)]
pub struct KnowledgeSettings {
    /// `CA_KNOWLEDGE_MAX_PAGE_BYTES`: one page's bytes as fetched (default 5 MB).
    pub max_page_bytes: u64,
    /// `CA_KNOWLEDGE_MAX_PAGES`: pages of one source (default 1000).
    pub max_pages: usize,
    /// `CA_KNOWLEDGE_MAX_WORKSPACE_BYTES`: the bytes of every page a
    /// workspace keeps (default 200 MB).
    pub max_workspace_bytes: u64,
    /// `CA_KNOWLEDGE_POLL_MS`: how often a replica looks for a source due
    /// for a sync (default 5000; a new source or "sync now" starts at once
    /// on the replica that took the request).
    pub poll: Duration,
    /// `CA_KNOWLEDGE_FETCH_TIMEOUT_MS`: one request to a site (default 20 000).
    pub fetch_timeout: Duration,
    /// `CA_ALLOW_PRIVATE_TOOL_HOSTS`: sources may be on private addresses.
    pub allow_private: bool,
    /// `CA_EMBEDDINGS_MODEL` and its endpoint: hybrid search; none: full text.
    pub embeddings: Option<EmbeddingsConfig>,
}

impl Default for KnowledgeSettings {
    fn default() -> Self {
        Self {
            max_page_bytes: 5 * 1024 * 1024,
            max_pages: 1000,
            max_workspace_bytes: 200 * 1024 * 1024,
            poll: Duration::from_secs(5),
            fetch_timeout: Duration::from_secs(20),
            allow_private: false,
            embeddings: None,
        }
    }
}

/// The embeddings endpoint of hybrid knowledge search (`CA_EMBEDDINGS_*`).
#[derive(Clone, Debug)]
pub struct EmbeddingsConfig {
    /// `CA_EMBEDDINGS_BASE_URL`, else `OPENAI_BASE_URL`.
    pub base_url: String,
    /// `CA_EMBEDDINGS_API_KEY`, else `OPENAI_API_KEY`.
    pub api_key: Secret,
    /// `CA_EMBEDDINGS_MODEL`.
    pub model: String,
    /// `CA_EMBEDDINGS_DIMENSIONS`: asked of the model (text-embedding-3 and later).
    pub dimensions: Option<u32>,
}

/// An S3-compatible store for attachments: `CA_ATTACHMENTS_URL` and the
/// standard `AWS_*` variables (read here like every setting; what is not
/// given, such as an instance role's credentials, the AWS defaults find).
#[derive(Clone, Debug)]
pub struct S3Config {
    /// `s3://bucket[/prefix]`.
    pub url: String,
    /// `AWS_ENDPOINT_URL`: another S3-compatible server than AWS.
    pub endpoint: Option<String>,
    /// `AWS_REGION` (or `AWS_DEFAULT_REGION`).
    pub region: Option<String>,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<Secret>,
    pub session_token: Option<Secret>,
}

/// Limits across replicas (their counts live in the database) and the
/// process's own cap; each has a variable and a default.
#[derive(Clone, Debug)]
pub struct RateLimits {
    /// `CA_TURNS_PER_USER_PER_MINUTE` (default 10).
    pub turns_per_user: u64,
    /// `CA_TURNS_PER_IP_PER_MINUTE` (default 60): the client address, as
    /// `CA_TRUSTED_PROXIES` reveal it.
    pub turns_per_ip: u64,
    /// `CA_TURNS_PER_WORKSPACE_PER_MINUTE` (default 600).
    pub turns_per_workspace: u64,
    /// `CA_COMPONENT_CALLS_PER_10S`: a component's direct tool calls per user (default 20).
    pub component_calls: u64,
    /// `CA_WORKSPACE_DAILY_TOKENS`: model tokens per workspace per UTC day
    /// (default 2 000 000; 0: no budget).
    pub workspace_daily_tokens: u64,
    /// `CA_USER_DAILY_TOKENS`: model tokens per end user per day (default 0: no budget).
    pub user_daily_tokens: u64,
    /// `CA_USER_DAILY_ATTACHMENT_BYTES`: bytes an end user may attach per
    /// UTC day (default 100 MB; 0: no quota).
    pub user_daily_attachment_bytes: u64,
    /// `CA_WORKSPACE_DAILY_ATTACHMENT_BYTES`: bytes a workspace's users may
    /// attach per UTC day (default 10 GB; 0: no quota).
    pub workspace_daily_attachment_bytes: u64,
    /// `CA_MAX_CONCURRENT_TURNS`: turns running in this process at once;
    /// beyond it new turns get `503` (default 200).
    pub max_concurrent_turns: usize,
    /// `CA_MAX_OPEN_STREAMS`: turn streams open in this process at once,
    /// turns' own and resumed ones; beyond it a resume gets `503` (default 400).
    pub max_open_streams: usize,
    /// `CA_CONSOLE_SIGN_INS_PER_MINUTE`: console sign-in attempts per
    /// client address (default 10).
    pub console_sign_ins: u64,
    /// `CA_TEST_RUNS_PER_WORKSPACE_PER_DAY`: assistant test runs a
    /// workspace may start per UTC day over the API (default 100; 0: no
    /// limit). Their turns count against no visitor's budget: this bounds
    /// what they spend.
    pub test_runs_per_day: u64,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            turns_per_user: 10,
            turns_per_ip: 60,
            turns_per_workspace: 600,
            component_calls: 20,
            workspace_daily_tokens: 2_000_000,
            user_daily_tokens: 0,
            user_daily_attachment_bytes: 100 * 1024 * 1024,
            workspace_daily_attachment_bytes: 10 * 1024 * 1024 * 1024,
            max_concurrent_turns: 200,
            max_open_streams: 400,
            console_sign_ins: 10,
            test_runs_per_day: 100,
        }
    }
}

impl RateLimits {
    /// Keeps the process's caps within `files` open files, so that what
    /// refuses first is a `503` with `Retry-After`, not a failed `accept`
    /// or a tool call that cannot open its socket: a running turn holds up
    /// to three (the visitor's stream, and a tool's or the model's
    /// connection, or two tools'), 256 are kept for the rest. Returns the
    /// caps lowered, by variable.
    pub fn fit_open_files(&mut self, files: u64) -> Vec<(&'static str, usize)> {
        let room = usize::try_from(files.saturating_sub(256) / 3).unwrap_or(usize::MAX).max(1);
        let mut lowered = Vec::new();
        if self.max_concurrent_turns > room {
            self.max_concurrent_turns = room;
            lowered.push(("CA_MAX_CONCURRENT_TURNS", room));
        }
        if self.max_open_streams > room {
            self.max_open_streams = room;
            lowered.push(("CA_MAX_OPEN_STREAMS", room));
        }
        lowered
    }

    /// The limits that hold for a workspace with these limits of its own:
    /// each its own where it set one, never above the operator's (an
    /// operator's budget of 0 is none, so the workspace's own holds).
    pub fn for_workspace(&self, own: &WorkspaceLimits) -> RateLimits {
        let at_most = |own: Option<u64>, operator: u64| own.map_or(operator, |o| o.min(operator));
        let budget = |own: Option<u64>, operator: u64| match own {
            Some(o) if operator == 0 => o,
            own => at_most(own, operator),
        };
        RateLimits {
            turns_per_user: at_most(own.turns_per_user_per_minute, self.turns_per_user),
            turns_per_workspace: at_most(own.turns_per_workspace_per_minute, self.turns_per_workspace),
            component_calls: at_most(own.component_calls_per_10s, self.component_calls),
            workspace_daily_tokens: budget(own.daily_tokens, self.workspace_daily_tokens),
            user_daily_tokens: budget(own.user_daily_tokens, self.user_daily_tokens),
            ..self.clone()
        }
    }
}

/// A workspace's own limits and budgets (`PATCH /v1/workspace`); null:
/// the operator's holds. The operator's ([`RateLimits`]) stay a ceiling.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceLimits {
    /// Turns an end user may start per minute.
    #[serde(default)]
    pub turns_per_user_per_minute: Option<u64>,
    /// Turns the whole workspace may start per minute.
    #[serde(default)]
    pub turns_per_workspace_per_minute: Option<u64>,
    /// A component's direct tool calls per end user per 10 seconds.
    #[serde(default)]
    pub component_calls_per_10s: Option<u64>,
    /// Model tokens the workspace may use per UTC day.
    #[serde(default)]
    pub daily_tokens: Option<u64>,
    /// Model tokens each end user may use per UTC day.
    #[serde(default)]
    pub user_daily_tokens: Option<u64>,
}

impl WorkspaceLimits {
    /// The largest limit a workspace may write down (a million million).
    pub const MAX: u64 = 1_000_000_000_000;

    /// Why these may not be set: each is from 1 to [`Self::MAX`].
    pub fn refusal(&self) -> Option<String> {
        let fields = [
            ("turns_per_user_per_minute", self.turns_per_user_per_minute),
            ("turns_per_workspace_per_minute", self.turns_per_workspace_per_minute),
            ("component_calls_per_10s", self.component_calls_per_10s),
            ("daily_tokens", self.daily_tokens),
            ("user_daily_tokens", self.user_daily_tokens),
        ];
        fields.into_iter().find_map(|(name, value)| match value {
            Some(n) if !(1..=Self::MAX).contains(&n) => {
                Some(format!("limits.{name} must be from 1 to {} (null: the operator's)", Self::MAX))
            }
            _ => None,
        })
    }
}

/// The shortest admin token accepted: it guards workspace creation.
pub const MIN_ADMIN_TOKEN_CHARS: usize = 32;

/// A setting that could not be used; the message names the variable.
#[derive(Debug, thiserror::Error)]
#[error("invalid {variable}: {reason}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub reason: String,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup`, so tests need not touch the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let bad = |variable: &'static str, reason: String| ConfigError { variable, reason };

        let listen = get("LEPTOS_SITE_ADDR").unwrap_or_else(|| "127.0.0.1:3000".into());
        let listen: SocketAddr = listen
            .parse()
            .map_err(|_| bad("LEPTOS_SITE_ADDR", format!("`{listen}` is not an address like 127.0.0.1:3000")))?;

        let data_dir = PathBuf::from(get("CA_DATA_DIR").unwrap_or_else(|| "./data".into()));
        let database_url = match get("DATABASE_URL") {
            Some(url) => {
                if !(url.starts_with("sqlite:") || url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err(bad(
                        "DATABASE_URL",
                        "expected sqlite://<file> or postgres://<user>@<host>/<database>".into(),
                    ));
                }
                url
            }
            None => format!("sqlite://{}?mode=rwc", data_dir.join("context-assistant.db").display()),
        };

        let flag = |variable: &'static str, default: bool| -> Result<bool, ConfigError> {
            match get(variable).as_deref() {
                None => Ok(default),
                Some("1" | "true" | "yes" | "on") => Ok(true),
                Some("0" | "false" | "no" | "off") => Ok(false),
                Some(other) => Err(bad(variable, format!("`{other}` is not 1 or 0"))),
            }
        };

        let model = match (get("OPENAI_BASE_URL"), get("OPENAI_API_KEY")) {
            (None, None) => ModelConfig::Demo,
            (base_url, api_key) => {
                let base_url = base_url.unwrap_or_else(|| "https://api.openai.com/v1".into());
                match url::Url::parse(&base_url) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                    _ => return Err(bad("OPENAI_BASE_URL", "expected an absolute http(s) URL".into())),
                }
                // Unset: decided by the model's name.
                let vision = get("CA_MODEL_VISION").map(|_| flag("CA_MODEL_VISION", false)).transpose()?;
                ModelConfig::Remote {
                    base_url: base_url.trim_end_matches('/').to_owned(),
                    api_key: Secret::new(api_key.unwrap_or_default()),
                    model: get("CA_MODEL").unwrap_or_else(|| "gpt-4o-mini".into()),
                    vision,
                }
            }
        };

        let defaults = TurnLimits::default();
        let number = |variable: &'static str, default: u64, min: u64| -> Result<u64, ConfigError> {
            match get(variable) {
                None => Ok(default),
                Some(raw) => match raw.parse::<u64>() {
                    Ok(n) if n >= min => Ok(n),
                    _ => Err(bad(variable, format!("`{raw}` is not a whole number ≥ {min}"))),
                },
            }
        };
        let limits = TurnLimits {
            max_iterations: number("CA_MAX_ITERATIONS", defaults.max_iterations.into(), 1)?
                .try_into()
                .map_err(|_| bad("CA_MAX_ITERATIONS", "too large".into()))?,
            turn_timeout: Duration::from_millis(number(
                "CA_TURN_TIMEOUT_MS",
                defaults.turn_timeout.as_millis() as u64,
                100,
            )?),
            max_turn_tokens: number("CA_MAX_TURN_TOKENS", defaults.max_turn_tokens, 1)?,
            tool_timeout: Duration::from_millis(number(
                "CA_TOOL_TIMEOUT_MS",
                defaults.tool_timeout.as_millis() as u64,
                10,
            )?),
            action_ttl: Duration::from_secs(number("CA_ACTION_TTL_SECS", defaults.action_ttl.as_secs(), 1)?),
            max_history_tokens: number("CA_MAX_HISTORY_TOKENS", defaults.max_history_tokens, 0)?,
        };

        let rate_defaults = RateLimits::default();
        let rates = RateLimits {
            turns_per_user: number("CA_TURNS_PER_USER_PER_MINUTE", rate_defaults.turns_per_user, 1)?,
            turns_per_ip: number("CA_TURNS_PER_IP_PER_MINUTE", rate_defaults.turns_per_ip, 1)?,
            turns_per_workspace: number("CA_TURNS_PER_WORKSPACE_PER_MINUTE", rate_defaults.turns_per_workspace, 1)?,
            component_calls: number("CA_COMPONENT_CALLS_PER_10S", rate_defaults.component_calls, 1)?,
            workspace_daily_tokens: number("CA_WORKSPACE_DAILY_TOKENS", rate_defaults.workspace_daily_tokens, 0)?,
            user_daily_tokens: number("CA_USER_DAILY_TOKENS", rate_defaults.user_daily_tokens, 0)?,
            user_daily_attachment_bytes: number(
                "CA_USER_DAILY_ATTACHMENT_BYTES",
                rate_defaults.user_daily_attachment_bytes,
                0,
            )?,
            workspace_daily_attachment_bytes: number(
                "CA_WORKSPACE_DAILY_ATTACHMENT_BYTES",
                rate_defaults.workspace_daily_attachment_bytes,
                0,
            )?,
            max_concurrent_turns: number("CA_MAX_CONCURRENT_TURNS", rate_defaults.max_concurrent_turns as u64, 1)?
                .try_into()
                .map_err(|_| bad("CA_MAX_CONCURRENT_TURNS", "too large".into()))?,
            max_open_streams: number("CA_MAX_OPEN_STREAMS", rate_defaults.max_open_streams as u64, 1)?
                .try_into()
                .map_err(|_| bad("CA_MAX_OPEN_STREAMS", "too large".into()))?,
            console_sign_ins: number("CA_CONSOLE_SIGN_INS_PER_MINUTE", rate_defaults.console_sign_ins, 1)?,
            test_runs_per_day: number("CA_TEST_RUNS_PER_WORKSPACE_PER_DAY", rate_defaults.test_runs_per_day, 0)?,
        };

        let hex_key = |variable: &'static str| -> Result<Option<Secret>, ConfigError> {
            let Some(key) = get(variable).map(Secret::new) else { return Ok(None) };
            if key.expose().len() != 64 || !key.expose().bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(variable, "expected 64 hex digits (32 bytes)".into()));
            }
            Ok(Some(key))
        };
        let secret_key = hex_key("CA_SECRET_KEY")?;
        let secret_key_previous = hex_key("CA_SECRET_KEY_PREVIOUS")?;
        let secret_key_next = hex_key("CA_SECRET_KEY_NEXT")?;
        for (variable, other) in
            [("CA_SECRET_KEY_PREVIOUS", &secret_key_previous), ("CA_SECRET_KEY_NEXT", &secret_key_next)]
        {
            if other.is_some() && secret_key.is_none() {
                return Err(bad(variable, "a rotation needs the current key in CA_SECRET_KEY".into()));
            }
            if other.is_some() && *other == secret_key {
                return Err(bad(variable, "is the same key as CA_SECRET_KEY".into()));
            }
        }
        if secret_key_previous.is_some() && secret_key_next.is_some() {
            return Err(bad("CA_SECRET_KEY_NEXT", "one rotation at a time: not with CA_SECRET_KEY_PREVIOUS".into()));
        }

        let public_url =
            match get("CA_PUBLIC_URL") {
                None => None,
                Some(raw) => Some(origin_of(&raw).ok_or_else(|| {
                    bad("CA_PUBLIC_URL", "expected an origin like https://assistant.example.com".into())
                })?),
            };
        // Plain http off loopback: embed tokens and session cookies would
        // cross the network in clear. Only an explicit choice allows it.
        if let Some(url) = &public_url
            && url.scheme() == "http"
            && !is_loopback_host(url)
            && !flag("CA_ALLOW_HTTP_PUBLIC_URL", false)?
        {
            return Err(bad(
                "CA_PUBLIC_URL",
                "an http:// origin off loopback sends tokens and cookies in clear: use https://, \
                 or set CA_ALLOW_HTTP_PUBLIC_URL=1 for a private network"
                    .into(),
            ));
        }
        let admin_token = get("CA_ADMIN_TOKEN").map(Secret::new);
        if admin_token.as_ref().is_some_and(|t| t.expose().chars().count() < MIN_ADMIN_TOKEN_CHARS) {
            return Err(bad(
                "CA_ADMIN_TOKEN",
                format!("must be at least {MIN_ADMIN_TOKEN_CHARS} characters (for example `openssl rand -hex 24`)"),
            ));
        }
        let metrics_token = get("CA_METRICS_TOKEN").map(Secret::new);
        if metrics_token.as_ref().is_some_and(|t| t.expose().chars().count() < MIN_ADMIN_TOKEN_CHARS) {
            return Err(bad(
                "CA_METRICS_TOKEN",
                format!("must be at least {MIN_ADMIN_TOKEN_CHARS} characters (for example `openssl rand -hex 24`)"),
            ));
        }
        let metrics_listen = match get("CA_METRICS_ADDR") {
            None => None,
            Some(raw) => Some(
                raw.parse::<SocketAddr>()
                    .map_err(|_| bad("CA_METRICS_ADDR", format!("`{raw}` is not an address like 127.0.0.1:9464")))?,
            ),
        };
        let sandbox_url = match get("CA_SANDBOX_URL") {
            None => None,
            Some(raw) => Some(origin_of(&raw).ok_or_else(|| {
                bad("CA_SANDBOX_URL", "expected an origin like https://apps.assistant-sandbox.example".into())
            })?),
        };
        if let (Some(sandbox), Some(public)) = (&sandbox_url, &public_url)
            && sandbox.origin() == public.origin()
        {
            return Err(bad(
                "CA_SANDBOX_URL",
                "is CA_PUBLIC_URL's origin: apps must run on an origin of their own".into(),
            ));
        }
        if let Some(url) = &sandbox_url
            && url.scheme() == "http"
            && !is_loopback_host(url)
            && !flag("CA_ALLOW_HTTP_PUBLIC_URL", false)?
        {
            return Err(bad("CA_SANDBOX_URL", "use https:// off loopback".into()));
        }
        let sandbox_listen = match get("CA_SANDBOX_ADDR") {
            None => None,
            Some(raw) => Some(
                raw.parse::<SocketAddr>()
                    .map_err(|_| bad("CA_SANDBOX_ADDR", format!("`{raw}` is not an address like 127.0.0.1:3001")))?,
            ),
        };
        // The demo page mints tokens for anyone: with a real model it would
        // spend the operator's key, so it is off unless asked for.
        let demo = flag("CA_DEMO", matches!(model, ModelConfig::Demo))?;
        // The secret's bytes exactly as written: never trimmed.
        let raw_secret = |name: &str| lookup(name).filter(|v| !v.is_empty()).map(Secret::new);
        let caddie = match raw_secret("CADDIE_TOOL_SECRET") {
            None => None,
            Some(secret) => {
                let required = |variable: &'static str| {
                    get(variable).ok_or_else(|| bad(variable, "required with CADDIE_TOOL_SECRET".into()))
                };
                let slug = required("CADDIE_TOOL_SLUG")?;
                if !slug.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') || slug.len() > 64 {
                    return Err(bad("CADDIE_TOOL_SLUG", "letters, digits, - and _ only".into()));
                }
                let hub = required("CADDIE_HUB_ORIGIN")?;
                let hub_origin =
                    origin_of(&hub).filter(|u| u.scheme() == "https" || is_loopback_host(u)).ok_or_else(|| {
                        bad("CADDIE_HUB_ORIGIN", "expected an https origin (http only for a loopback address)".into())
                    })?;
                let issuer = required("OIDC_ISSUER")?;
                let issuer = url::Url::parse(&issuer)
                    .ok()
                    .filter(|u| u.scheme() == "https" || (u.scheme() == "http" && is_loopback_host(u)))
                    .ok_or_else(|| {
                        bad("OIDC_ISSUER", "expected an https URL (http only for a loopback address)".into())
                    })?;
                Some(CaddieConfig {
                    slug,
                    secret,
                    secret_prev: raw_secret("CADDIE_TOOL_SECRET_PREV"),
                    hub_origin,
                    oidc: OidcConfig {
                        issuer,
                        client_id: required("OIDC_CLIENT_ID")?,
                        client_secret: Secret::new(required("OIDC_CLIENT_SECRET")?),
                        allow_hs256: flag("OIDC_ID_TOKEN_HS256", false)?,
                    },
                })
            }
        };

        Ok(Self {
            caddie_retry_every: Duration::from_millis(number("CA_CADDIE_RETRY_MS", 5000, 10)?),
            retention_every: Duration::from_millis(number("CA_RETENTION_SWEEP_MS", 3_600_000, 10)?),
            usage_flush_every: Duration::from_millis(number("CA_USAGE_FLUSH_MS", 10_000, 10)?),
            audit_retention_days: match get("CA_AUDIT_RETENTION_DAYS").filter(|v| !v.is_empty()) {
                Some(_) => Some(number("CA_AUDIT_RETENTION_DAYS", 0, 1)?),
                None => None,
            },
            shutdown_grace: Duration::from_millis(number("CA_SHUTDOWN_GRACE_MS", 20_000, 0)?),
            // Longer than the keep-alive of the load balancers that may
            // stand in front (Google's 600 s, AWS's and nginx's 60 s), so
            // none sends a request down a connection this server has just
            // closed.
            idle_connection: match number("CA_IDLE_CONNECTION_SECS", 620, 0)? {
                0 => None,
                secs => Some(Duration::from_secs(secs)),
            },
            mcp_idle: Duration::from_secs(number("CA_MCP_IDLE_SECS", 300, 1)?),
            trusted_proxies: parse_networks(&get("CA_TRUSTED_PROXIES").unwrap_or_default())
                .map_err(|reason| bad("CA_TRUSTED_PROXIES", reason))?,
            public_url,
            caddie,
            metrics_token,
            metrics_listen,
            sandbox_url,
            sandbox_listen,
            listen,
            data_dir,
            database_url,
            admin_token,
            model,
            limits,
            rates,
            allow_private_tool_hosts: flag("CA_ALLOW_PRIVATE_TOOL_HOSTS", false)?,
            allow_private_model_hosts: flag("CA_ALLOW_PRIVATE_MODEL_HOSTS", false)?,
            tool_host_calls_per_connection: usize::try_from(number("CA_TOOL_HOST_CALLS_PER_CONNECTION", 100, 1)?)
                .map_err(|_| bad("CA_TOOL_HOST_CALLS_PER_CONNECTION", "too large".into()))?,
            tool_hosts_ca: match get("CA_TOOL_HOSTS_CA_FILE") {
                Some(path) => certificates(&path).map_err(|reason| bad("CA_TOOL_HOSTS_CA_FILE", reason))?,
                None => Vec::new(),
            },
            secret_key,
            secret_key_previous,
            secret_key_next,
            demo_knowledge: demo && flag("CA_DEMO_KNOWLEDGE", true)?,
            demo,
            bistro_sold_out: get("CA_BISTRO_SOLD_OUT")
                .map(|v| v.split(',').map(|id| id.trim().to_owned()).filter(|id| !id.is_empty()).collect())
                .unwrap_or_default(),
            max_attachment_bytes: number("CA_MAX_ATTACHMENT_BYTES", 10 * 1024 * 1024, 1)?,
            attachment_link_lifetime: Duration::from_secs(number("CA_ATTACHMENT_LINK_SECS", 900, 10)?),
            attachments_s3: match get("CA_ATTACHMENTS_URL") {
                Some(url) if !url.starts_with("s3://") || url.len() <= "s3://".len() => {
                    return Err(bad("CA_ATTACHMENTS_URL", format!("`{url}` is not an s3://bucket[/prefix] URL")));
                }
                Some(url) => Some(S3Config {
                    url,
                    endpoint: get("AWS_ENDPOINT_URL").or_else(|| get("AWS_ENDPOINT")),
                    region: get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")),
                    access_key_id: get("AWS_ACCESS_KEY_ID"),
                    secret_access_key: get("AWS_SECRET_ACCESS_KEY").map(Secret::new),
                    session_token: get("AWS_SESSION_TOKEN").map(Secret::new),
                }),
                None => None,
            },
            knowledge: KnowledgeSettings {
                max_page_bytes: number("CA_KNOWLEDGE_MAX_PAGE_BYTES", 5 * 1024 * 1024, 1024)?,
                max_pages: number("CA_KNOWLEDGE_MAX_PAGES", 1000, 1)? as usize,
                max_workspace_bytes: number("CA_KNOWLEDGE_MAX_WORKSPACE_BYTES", 200 * 1024 * 1024, 1024)?,
                poll: Duration::from_millis(number("CA_KNOWLEDGE_POLL_MS", 5000, 10)?),
                fetch_timeout: Duration::from_millis(number("CA_KNOWLEDGE_FETCH_TIMEOUT_MS", 20_000, 100)?),
                allow_private: flag("CA_ALLOW_PRIVATE_TOOL_HOSTS", false)?,
                embeddings: match get("CA_EMBEDDINGS_MODEL").filter(|m| !m.trim().is_empty()) {
                    None => None,
                    Some(model) => Some(EmbeddingsConfig {
                        base_url: get("CA_EMBEDDINGS_BASE_URL").or_else(|| get("OPENAI_BASE_URL")).ok_or_else(
                            || {
                                bad(
                                    "CA_EMBEDDINGS_BASE_URL",
                                    "required with CA_EMBEDDINGS_MODEL when OPENAI_BASE_URL is unset".into(),
                                )
                            },
                        )?,
                        api_key: Secret::new(
                            get("CA_EMBEDDINGS_API_KEY").or_else(|| get("OPENAI_API_KEY")).unwrap_or_default(),
                        ),
                        model: model.trim().to_owned(),
                        dimensions: match get("CA_EMBEDDINGS_DIMENSIONS").filter(|d| !d.is_empty()) {
                            Some(_) => Some(number("CA_EMBEDDINGS_DIMENSIONS", 0, 1)? as u32),
                            None => None,
                        },
                    }),
                },
            },
            site_root: PathBuf::from(get("LEPTOS_SITE_ROOT").unwrap_or_else(|| "target/site".into())),
            output_name: get("LEPTOS_OUTPUT_NAME").unwrap_or_else(|| "context-assistant".into()),
        })
    }
}

/// Addresses or networks, comma-separated (`127.0.0.1, 10.0.0.0/8, ::1`).
pub fn parse_networks(raw: &str) -> Result<Vec<ipnet::IpNet>, String> {
    raw.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<ipnet::IpNet>()
                .or_else(|_| p.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("`{p}` is not an address or a network like 10.0.0.0/8"))
        })
        .collect()
}

/// `scheme://host[:port]` of an absolute http(s) URL with nothing else.
fn origin_of(raw: &str) -> Option<url::Url> {
    let url = url::Url::parse(raw).ok()?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    bare.then_some(url)
}

fn is_loopback_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The certificates of a PEM file, each as its own PEM block, every one
/// checked to read as X.509. Split here rather than by native-tls's
/// `Certificate::stack_from_pem`, whose error does not say which
/// certificate of a bundle is broken, nor that one was cut short.
pub fn certificates(path: &str) -> Result<Vec<Vec<u8>>, String> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let text = std::fs::read_to_string(path).map_err(|e| format!("`{path}` cannot be read: {e}"))?;
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find(BEGIN) {
        let Some(length) = rest[start..].find(END) else {
            return Err(format!("`{path}` has a certificate without its END line"));
        };
        let pem = &rest[start..start + length + END.len()];
        native_tls::Certificate::from_pem(pem.as_bytes())
            .map_err(|e| format!("certificate {} of `{path}` does not read: {e}", found.len() + 1))?;
        found.push(pem.as_bytes().to_vec());
        rest = &rest[start + length + END.len()..];
    }
    if found.is_empty() {
        return Err(format!("`{path}` holds no PEM certificate"));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caps_on_turns_and_streams_fit_the_open_files_limit() {
        let mut rates = config(&[("CA_MAX_CONCURRENT_TURNS", "10000"), ("CA_MAX_OPEN_STREAMS", "300")]).unwrap().rates;
        // The usual soft limit: three files a turn, 256 kept for the rest.
        assert_eq!(rates.fit_open_files(1024), [("CA_MAX_CONCURRENT_TURNS", 256), ("CA_MAX_OPEN_STREAMS", 256)]);
        assert_eq!((rates.max_concurrent_turns, rates.max_open_streams), (256, 256));
        let mut roomy = config(&[("CA_MAX_CONCURRENT_TURNS", "10000")]).unwrap().rates;
        assert!(roomy.fit_open_files(65_536).is_empty(), "room for 21,760: nothing lowered");
        assert_eq!(roomy.max_concurrent_turns, 10_000);
        assert_eq!(roomy.fit_open_files(20_000), [("CA_MAX_CONCURRENT_TURNS", 6_581)]);
        assert_eq!(roomy.fit_open_files(10).first(), Some(&("CA_MAX_CONCURRENT_TURNS", 1)), "never 0");
    }

    #[test]
    fn a_tool_hosts_ca_file_that_holds_no_usable_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        };
        let cases = [
            (dir.path().join("missing.pem").display().to_string(), "cannot be read"),
            (path("empty.pem", "no certificate here\n"), "holds no PEM certificate"),
            (path("cut.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n"), "without its END line"),
            (
                path(
                    "garbage.pem",
                    "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
                ),
                "certificate 1 of",
            ),
        ];
        for (file, said) in cases {
            let error = config(&[("CA_TOOL_HOSTS_CA_FILE", &file)]).unwrap_err();
            assert_eq!(error.variable, "CA_TOOL_HOSTS_CA_FILE");
            assert!(error.reason.contains(said), "{file}: {}", error.reason);
        }
        assert!(config(&[]).unwrap().tool_hosts_ca.is_empty());
        assert_eq!(config(&[]).unwrap().tool_host_calls_per_connection, 100);
        assert_eq!(
            config(&[("CA_TOOL_HOST_CALLS_PER_CONNECTION", "0")]).unwrap_err().variable,
            "CA_TOOL_HOST_CALLS_PER_CONNECTION"
        );
    }

    #[test]
    fn caddie_needs_all_its_settings_and_keeps_the_secret_as_written() {
        assert!(config(&[]).unwrap().caddie.is_none());
        let full = [
            ("CADDIE_TOOL_SECRET", " s3cret "),
            ("CADDIE_TOOL_SLUG", "assistant"),
            ("CADDIE_HUB_ORIGIN", "https://caddie.example.com"),
            ("OIDC_ISSUER", "https://auth.example.com/realms/bw"),
            ("OIDC_CLIENT_ID", "assistant"),
            ("OIDC_CLIENT_SECRET", "oidc-secret"),
        ];
        let c = config(&full).unwrap().caddie.unwrap();
        assert_eq!(c.secret.expose(), " s3cret ");
        assert_eq!(c.hub_origin.as_str(), "https://caddie.example.com/");
        for missing in ["CADDIE_TOOL_SLUG", "CADDIE_HUB_ORIGIN", "OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET"]
        {
            let vars: Vec<(&str, &str)> = full.iter().copied().filter(|(k, _)| *k != missing).collect();
            assert_eq!(config(&vars).unwrap_err().variable, missing);
        }
        for hub in [
            "http://caddie.example.com",
            "https://caddie.example.com/projects",
            "https://u@caddie.example.com",
            "caddie",
        ] {
            let mut vars = full.to_vec();
            vars[2] = ("CADDIE_HUB_ORIGIN", hub);
            assert_eq!(config(&vars).unwrap_err().variable, "CADDIE_HUB_ORIGIN", "{hub}");
        }
        let mut vars = full.to_vec();
        vars[2] = ("CADDIE_HUB_ORIGIN", "http://127.0.0.1:4000");
        assert!(config(&vars).is_ok(), "plain http is allowed on loopback");
        assert!(!format!("{c:?}").contains("s3cret") && !format!("{c:?}").contains("oidc-secret"));
    }

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_use_the_demo_model_and_an_sqlite_file_in_the_data_dir() {
        let c = config(&[]).unwrap();
        assert!(matches!(c.model, ModelConfig::Demo));
        assert_eq!(c.listen.to_string(), "127.0.0.1:3000");
        assert!(c.database_url.starts_with("sqlite://./data/"), "{}", c.database_url);
    }

    #[test]
    fn a_bad_database_url_is_refused_by_name() {
        let err = config(&[("DATABASE_URL", "mysql://x")]).unwrap_err();
        assert_eq!(err.variable, "DATABASE_URL");
        assert!(err.to_string().starts_with("invalid DATABASE_URL"));
    }

    #[test]
    fn a_bad_listen_address_is_refused_by_name() {
        assert_eq!(config(&[("LEPTOS_SITE_ADDR", "localhost")]).unwrap_err().variable, "LEPTOS_SITE_ADDR");
    }

    #[test]
    fn limits_must_be_whole_numbers() {
        assert_eq!(config(&[("CA_MAX_ITERATIONS", "0")]).unwrap_err().variable, "CA_MAX_ITERATIONS");
        assert_eq!(config(&[("CA_TOOL_TIMEOUT_MS", "-5")]).unwrap_err().variable, "CA_TOOL_TIMEOUT_MS");
        let c = config(&[("CA_MAX_TURN_TOKENS", "500")]).unwrap();
        assert_eq!(c.limits.max_turn_tokens, 500);
    }

    #[test]
    fn an_admin_token_shorter_than_32_characters_is_refused() {
        let err = config(&[("CA_ADMIN_TOKEN", "short-admin-token")]).unwrap_err();
        assert_eq!(err.variable, "CA_ADMIN_TOKEN");
        assert!(err.to_string().contains("32"), "{err}");
        let long = "a".repeat(MIN_ADMIN_TOKEN_CHARS);
        assert!(config(&[("CA_ADMIN_TOKEN", &long)]).unwrap().admin_token.is_some());
    }

    #[test]
    fn the_sandbox_is_never_the_assistants_own_origin() {
        let err =
            config(&[("CA_PUBLIC_URL", "https://a.example"), ("CA_SANDBOX_URL", "https://a.example:443")]).unwrap_err();
        assert_eq!(err.variable, "CA_SANDBOX_URL");
        for bad in ["https://apps.example/path", "javascript:alert(1)", "http://apps.example"] {
            assert_eq!(config(&[("CA_SANDBOX_URL", bad)]).unwrap_err().variable, "CA_SANDBOX_URL", "{bad}");
        }
        assert_eq!(config(&[("CA_SANDBOX_ADDR", "nowhere")]).unwrap_err().variable, "CA_SANDBOX_ADDR");
        let ok = config(&[("CA_PUBLIC_URL", "https://a.example"), ("CA_SANDBOX_URL", "https://apps.example")]).unwrap();
        assert_eq!(ok.sandbox_url.unwrap().as_str(), "https://apps.example/");
    }

    #[test]
    fn a_plain_http_public_url_off_loopback_needs_an_explicit_override() {
        let err = config(&[("CA_PUBLIC_URL", "http://assistant.example.com")]).unwrap_err();
        assert_eq!(err.variable, "CA_PUBLIC_URL");
        assert!(err.to_string().contains("CA_ALLOW_HTTP_PUBLIC_URL"), "{err}");
        for ok in [
            vec![("CA_PUBLIC_URL", "https://assistant.example.com")],
            vec![("CA_PUBLIC_URL", "http://localhost:8080")],
            vec![("CA_PUBLIC_URL", "http://127.0.0.1:3000")],
            vec![("CA_PUBLIC_URL", "http://assistant.internal"), ("CA_ALLOW_HTTP_PUBLIC_URL", "1")],
        ] {
            assert!(config(&ok).is_ok(), "{ok:?}");
        }
    }

    #[test]
    fn a_real_model_turns_the_demo_off_unless_it_is_asked_for() {
        assert!(config(&[]).unwrap().demo, "the offline demo model: the demo is on");
        let real = ("OPENAI_API_KEY", "sk-x");
        assert!(!config(&[real]).unwrap().demo, "a real model: no anonymous page spends its key");
        assert!(config(&[real, ("CA_DEMO", "1")]).unwrap().demo, "unless the operator turns it on");
        assert!(!config(&[("CA_DEMO", "0")]).unwrap().demo);
    }

    #[test]
    fn an_api_key_alone_selects_openai_and_the_key_is_not_printed() {
        let c = config(&[("OPENAI_API_KEY", "sk-very-secret")]).unwrap();
        let ModelConfig::Remote { base_url, .. } = &c.model else { panic!("expected a remote model") };
        assert_eq!(base_url, "https://api.openai.com/v1");
        assert!(!format!("{c:?}").contains("sk-very-secret"));
    }
}
