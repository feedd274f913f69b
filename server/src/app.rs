//! Building and running the application: the same code for the binary and
//! the tests (which listen on port 0 with a fresh database).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::http::{HeaderValue, Request, header};
use axum::routing::post;
use axum::serve::ListenerExt;
use leptos::config::{Env, LeptosOptions};
use tokio::net::TcpListener;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

use crate::api::{self, ApiState};
use crate::bistro::{self, Bistro, BistroState};
use crate::caddie::{self, Caddie, CaddieState};
use crate::client_addr::{self, ClientAddr, TrustedProxies};
use crate::clock::Clock;
use crate::config::{Config, ModelConfig};
use crate::crypto::Vault;
use crate::db::{self, Pool};
use crate::demo::{self, DemoState};
use crate::embed::{self, EmbedState};
use crate::engine::stop::TurnRegistry;
use crate::engine::{Engine, TurnFinished};
use crate::host::HostClient;
use crate::llm::Model;
use crate::ops::{self, OpsState};
use crate::widget_page::WidgetPages;
use crate::workspaces::Workspaces;

/// Every part of the application, built once. Each feature's router gets
/// only its own part; tests read the database and vault through it.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub vault: Vault,
    pub config: Arc<Config>,
    pub bistro: Arc<Bistro>,
    pub api: ApiState,
    pub demo: DemoState,
    pub embed: EmbedState,
    pub ops: OpsState,
    /// The Caddie tool side, when configured (`CADDIE_TOOL_SECRET`).
    pub caddie: Option<CaddieState>,
}

/// A bound, ready server.
pub struct Application {
    listener: TcpListener,
    /// `CA_METRICS_ADDR`'s listener, serving only `/metrics`.
    metrics_listener: Option<TcpListener>,
    /// `CA_SANDBOX_ADDR`'s listener, serving only the sandbox page.
    sandbox_listener: Option<TcpListener>,
    router: Router,
    address: SocketAddr,
    state: AppState,
}

impl Application {
    /// Opens the data directory, the database (migrating it) and the port;
    /// fails with a message naming the setting at fault.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_clock(config, Clock::default()).await
    }

    /// [`Application::build`], judging expiry by `clock` (tests move it on).
    pub async fn build_with_clock(config: Config, clock: Clock) -> anyhow::Result<Self> {
        // Leptos' server rendering spawns on this global executor; a second call is harmless.
        let _ = any_spawner::Executor::init_tokio();
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("invalid CA_DATA_DIR: cannot create {}", config.data_dir.display()))?;
        let rotation: Vec<(&str, &crate::secret::Secret)> = [
            ("CA_SECRET_KEY_PREVIOUS", config.secret_key_previous.as_ref()),
            ("CA_SECRET_KEY_NEXT", config.secret_key_next.as_ref()),
        ]
        .into_iter()
        .filter_map(|(variable, key)| Some((variable, key?)))
        .collect();
        let vault = Vault::load(config.secret_key.as_ref(), &rotation, &config.data_dir)?;
        let pool =
            db::connect(&config.database_url).await.map_err(|e| anyhow::anyhow!("invalid DATABASE_URL: {e:#}"))?;
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("invalid LEPTOS_SITE_ADDR: cannot listen on {}", config.listen))?;
        let address = listener.local_addr()?;
        let metrics_listener = match config.metrics_listen {
            None => None,
            Some(at) => Some(
                TcpListener::bind(at)
                    .await
                    .with_context(|| format!("invalid CA_METRICS_ADDR: cannot listen on {at}"))?,
            ),
        };
        let sandbox_listener = match config.sandbox_listen {
            None => None,
            Some(at) => Some(
                TcpListener::bind(at)
                    .await
                    .with_context(|| format!("invalid CA_SANDBOX_ADDR: cannot listen on {at}"))?,
            ),
        };
        crate::metrics::handle();
        // The server reaches itself (demo model, bistro host) over loopback.
        let loopback = if address.ip().is_unspecified() {
            SocketAddr::from((Ipv4Addr::LOCALHOST, address.port()))
        } else {
            address
        };
        // The origin browsers reach the assistant at: CA_PUBLIC_URL behind a
        // proxy, else the listen address. The widget frame's own calls, the
        // bistro's links, the OIDC redirect and cookie security all use it.
        let public_origin: Arc<str> = config
            .public_url
            .as_ref()
            .map_or_else(|| format!("http://{loopback}"), |u| u.as_str().trim_end_matches('/').to_owned())
            .into();

        // Where MCP Apps run: CA_SANDBOX_URL, else CA_SANDBOX_ADDR's own
        // address; never the assistant's origin (apps would share its
        // storage and could reach its API with the visitor's cookies).
        let sandbox_origin: Option<Arc<str>> = match (&config.sandbox_url, &sandbox_listener) {
            (Some(url), _) => Some(url.as_str().trim_end_matches('/').into()),
            (None, Some(listener)) => {
                let at = listener.local_addr()?;
                let at = if at.ip().is_unspecified() { SocketAddr::from((Ipv4Addr::LOCALHOST, at.port())) } else { at };
                Some(format!("http://{at}").into())
            }
            (None, None) => None,
        };
        if sandbox_origin.as_deref() == Some(&*public_origin) {
            anyhow::bail!(
                "invalid CA_SANDBOX_URL: it is the assistant's own origin ({public_origin}); apps need one of their own"
            );
        }
        let model = match &config.model {
            ModelConfig::Demo => Model::new(&format!("http://{loopback}/demo-model/v1"), "demo", "demo", true),
            ModelConfig::Remote { base_url, api_key, model, vision } => {
                Model::new(base_url, api_key.expose(), model, false).map(|mut model| {
                    model.accepts_images = vision.unwrap_or(model.accepts_images);
                    model
                })
            }
        }
        .context("invalid OPENAI_BASE_URL")?;
        let leptos_options = LeptosOptions::builder()
            .output_name(config.output_name.as_str())
            .site_root(config.site_root.to_string_lossy().as_ref())
            .site_pkg_dir("pkg")
            .site_addr(address)
            .env(Env::PROD)
            .build();
        let workspaces = Workspaces::new(pool.clone(), vault.clone(), config.allow_private_model_hosts);
        if config.secret_key_previous.is_some() {
            // Before serving: what the old key sealed is under the new one
            // once this replica answers.
            let resealed = workspaces.reseal_all().await.context("cannot re-seal the stored secrets")?;
            tracing::info!(resealed, "secret key rotation: stored secrets sealed under CA_SECRET_KEY");
        }
        let pages = WidgetPages::new(leptos_options, model.is_demo);
        let host = HostClient::with_connections(
            config.limits.tool_timeout,
            config.allow_private_tool_hosts,
            &crate::host::HostConnections {
                calls_per_connection: config.tool_host_calls_per_connection,
                extra_roots: config.tool_hosts_ca.clone(),
            },
        );

        // One Caddie (one OIDC cache, one HTTP client): its routes, its retry
        // task and the engine's turn-finished hook all share it.
        let caddie = config.caddie.clone().map(|c| Arc::new(Caddie::new(c, &public_origin)));
        let on_turn_finished = caddie.as_ref().map(|caddie| {
            caddie::report::spawn_retries(caddie.clone(), pool.clone(), config.caddie_retry_every);
            Arc::new(caddie::report::StatusReporter { caddie: caddie.clone(), pool: pool.clone() })
                as Arc<dyn TurnFinished>
        });
        let limits = crate::limits::Limits::new(pool.clone(), clock.clone(), config.rates.clone());
        crate::limits::spawn_cleanup(limits.clone());
        crate::usage::spawn_flushing(limits.usage.clone(), config.usage_flush_every);
        let attachments = crate::attachments::Attachments::new(
            crate::attachments::store::open(config.attachments_s3.as_ref(), &config.data_dir.join("attachments"))?,
            config.max_attachment_bytes,
            config.data_dir.join("spool"),
            crate::attachments::Links {
                key: vault.derive("attachment links"),
                origin: public_origin.clone(),
                lifetime: config.attachment_link_lifetime,
            },
        );
        let knowledge = crate::knowledge::Knowledge::new(
            pool.clone(),
            config.knowledge.clone(),
            workspaces.clone(),
            attachments.clone(),
            clock.clone(),
        )?;
        knowledge.spawn_worker();
        let engine = Engine {
            knowledge,
            pool: pool.clone(),
            workspaces: workspaces.clone(),
            sources: {
                let sources = crate::sources::Sources::new(host.clone(), config.allow_private_tool_hosts);
                sources.spawn_idle_closing(config.mcp_idle);
                sources
            },
            model,
            limits: config.limits.clone(),
            budgets: limits.clone(),
            clock: clock.clone(),
            on_turn_finished,
            apps: sandbox_origin
                .as_deref()
                .map(|origin| crate::app_frames::AppFrames::new(vault.derive("mcp app frame tokens"), origin)),
            attachments: attachments.clone(),
        };
        crate::engine::sweep_stuck_actions(pool.clone(), config.limits.clone());

        crate::engine::events::spawn_forgetting(pool.clone());
        let turns = TurnRegistry::default();
        crate::engine::stop::watch_stop_requests(turns.clone(), pool.clone(), STOP_POLL);

        let bistro = Arc::new(Bistro {
            secret: vault.derive("acme-bistro host secret"),
            checkout_key: vault.derive("acme-bistro checkout links"),
            public_url: public_origin.to_string(),
            sold_out: config.bistro_sold_out.clone(),
        });
        let site_root = config.site_root.clone();
        tokio::task::spawn_blocking(move || {
            let written = crate::precompress::compress_site(&site_root);
            tracing::debug!(written, "compressed copies of the widget's files");
        });
        crate::retention::spawn(
            pool.clone(),
            clock.clone(),
            attachments.clone(),
            config.retention_every,
            config.audit_retention_days,
        );
        let state = AppState {
            api: ApiState {
                pool: pool.clone(),
                vault: vault.clone(),
                workspaces: workspaces.clone(),
                engine,
                turns,
                host,
                admin_token: config.admin_token.clone(),
                allow_private_tool_hosts: config.allow_private_tool_hosts,
                allow_private_model_hosts: config.allow_private_model_hosts,
                public_origin: public_origin.clone(),
                clock: clock.clone(),
                limits,
                turn_slots: crate::limits::TurnSlots::new(config.rates.max_concurrent_turns),
                streams: crate::limits::OpenStreams::new(config.rates.max_open_streams),
                attachments,
            },
            ops: OpsState { pool: pool.clone(), clock, metrics_token: config.metrics_token.clone() },
            demo: DemoState {
                pool: pool.clone(),
                vault: vault.clone(),
                enabled: config.demo,
                public_origin: public_origin.clone(),
                bistro_secret: bistro.secret.clone(),
                knowledge: config.demo_knowledge,
            },
            embed: EmbedState {
                pool: pool.clone(),
                pages: pages.clone(),
                max_attachment_bytes: config.max_attachment_bytes,
            },
            caddie: caddie.map(|caddie| CaddieState {
                caddie,
                pool: pool.clone(),
                vault: vault.clone(),
                workspaces,
                pages,
            }),
            bistro,
            pool,
            vault,
            config: Arc::new(config),
        };
        if state.config.demo {
            demo::seed(&state.demo, loopback).await.context("cannot set up the demo workspace")?;
        }
        let router = router(state.clone());
        Ok(Self { listener, metrics_listener, sandbox_listener, router, address, state })
    }

    /// The address actually listened on (port 0 resolved).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The address `/metrics` listens on separately (`CA_METRICS_ADDR`).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The address the sandbox page listens on separately (`CA_SANDBOX_ADDR`).
    pub fn sandbox_address(&self) -> Option<SocketAddr> {
        self.sandbox_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The shared state (tests read the database and vault through it).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until Ctrl-C or SIGTERM, then shuts down gracefully.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.run_until(shutdown_signal()).await
    }

    /// Serves until `stop` completes. Then it accepts no new connection,
    /// lets running turns finish for `CA_SHUTDOWN_GRACE_MS`, stops those
    /// still running (each ends `cancelled` and is saved so: nothing is
    /// left half-recorded; an action whose host call was under way is
    /// settled by the sweep of interrupted executions), and returns once
    /// their streams have closed.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        // Streams write many small events: without TCP_NODELAY, Nagle's
        // algorithm and delayed ACKs hold each one back for tens of ms.
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let stopping = tokio_util::sync::CancellationToken::new();
        let (turns, grace) = (self.state.api.turns.clone(), self.state.config.shutdown_grace);
        let idle = self.state.config.idle_connection;
        let usage = self.state.api.limits.usage.clone();
        let knowledge = self.state.api.engine.knowledge.clone();
        let drain = tokio::spawn({
            let stopping = stopping.clone();
            let turns = turns.clone();
            async move {
                stop.await;
                stopping.cancel();
                knowledge.stop();
                tracing::info!(grace_ms = grace.as_millis() as u64, "shutting down: no new connections");
                if !turns.wait_idle(grace).await {
                    let stopped = turns.cancel_all();
                    tracing::warn!(stopped, "shutting down: turns still running were stopped");
                }
            }
        });
        if let Some(listener) = self.metrics_listener {
            let metrics = ops::metrics_router(self.state.ops.clone());
            let stopping = stopping.clone();
            tokio::spawn(async move {
                crate::serve::http1(listener, metrics, idle, stopping).await;
            });
        }
        if let (Some(listener), Some(sandbox)) = (self.sandbox_listener, sandbox_state(&self.state)) {
            let router = crate::sandbox::sandbox_router(sandbox);
            let stopping = stopping.clone();
            tokio::spawn(async move {
                crate::serve::http1(listener, router, idle, stopping).await;
            });
        }
        crate::serve::http1(listener, self.router, idle, stopping.clone()).await;
        // No connection is left, but a turn whose browser went away may
        // still run: it too finishes, or is stopped, and is saved.
        let _ = drain.await;
        if !turns.wait_idle(SAVE_STOPPED_TURNS).await {
            tracing::error!("shutting down: stopped turns did not finish saving in time");
        }
        if let Err(error) = usage.flush().await {
            tracing::error!(error = format!("{error:#}"), "shutting down: the latest usage counts were not saved");
        }
        Ok(())
    }
}

/// How long stopped turns get to save their end when shutting down.
const SAVE_STOPPED_TURNS: std::time::Duration = std::time::Duration::from_secs(10);

/// How often a replica running turns looks for stops asked of another one.
const STOP_POLL: std::time::Duration = std::time::Duration::from_millis(300);

/// What the MCP Apps' pages need, when a sandbox origin is set.
fn sandbox_state(state: &AppState) -> Option<crate::sandbox::SandboxState> {
    let frames = state.api.engine.apps.as_ref()?;
    Some(crate::sandbox::SandboxState {
        pool: state.pool.clone(),
        public_origin: state.api.public_origin.clone(),
        sandbox_origin: frames.sandbox_origin.as_str().into(),
        hub_origin: state.config.caddie.as_ref().map(|c| c.hub_origin.as_str().trim_end_matches('/').to_owned()),
    })
}

/// Every route of the server: each feature's router with its own state.
pub fn router(state: AppState) -> Router {
    let sandbox = sandbox_state(&state);
    let site_root = state.config.site_root.clone();
    let trusted = TrustedProxies::new(state.config.trusted_proxies.clone());
    // Without CADDIE_TOOL_SECRET the Caddie routes do not exist (404).
    let caddie = state.caddie.map_or_else(Router::new, caddie::router);
    let api = api::router(state.api.clone());
    let console = crate::console::router(crate::console::ConsoleState {
        pool: state.pool.clone(),
        vault: state.vault.clone(),
        api: api.clone(),
        admin_token: state.api.admin_token.clone(),
        public_origin: state.api.public_origin.clone(),
        pages: state.embed.pages.clone(),
        limits: state.api.limits.clone(),
    });
    let routes = Router::new()
        .merge(caddie)
        .merge(api)
        .merge(console)
        .merge(bistro::router(BistroState { pool: state.pool.clone(), bistro: state.bistro }))
        .merge(embed::router(state.embed))
        .merge(demo::router(state.demo))
        .merge(ops::router(state.ops))
        .route("/demo-model/v1/chat/completions", post(crate::llm::demo::chat_completions))
        .fallback_service(ServeDir::new(site_root).precompressed_br().precompressed_gzip());
    // MCP Apps: the bridge page here, and the sandbox's own host name
    // (one listener behind a proxy) answered with the sandbox page only.
    let routes = match sandbox {
        Some(sandbox) => routes
            .merge(crate::sandbox::bridge_router(sandbox.clone()))
            .layer(axum::middleware::from_fn_with_state(sandbox, crate::sandbox::by_host)),
        None => routes,
    };
    routes
        // Framed by nobody else unless a route says otherwise: the widget
        // page (its workspace's origins) and Caddie's embed routes (the hub).
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("frame-ancestors 'self'"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            HeaderValue::from_static("strict-origin-when-cross-origin"),
        ))
        // The path only: query strings may carry tokens and never reach the log.
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
            let client = request.extensions().get::<ClientAddr>().map(|c| c.ip.to_string()).unwrap_or_default();
            tracing::info_span!("http", method = %request.method(), path = %request.uri().path(), client_ip = %client)
        }))
        // Outermost: who the client is, before the log line is begun.
        .layer(axum::middleware::from_fn(move |request, next| client_addr::attach(trusted.clone(), request, next)))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
