//! Test fixtures: `spawn_app` on port 0 with its own database, a fake tool
//! host, a scripted OpenAI-compatible model, and an SSE reader.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use server::app::Application;
use server::config::Config;
use sqlx::Connection;

/// Which database a test runs on.
#[derive(Clone, Copy, Debug)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// Runs a test body once on SQLite and once on PostgreSQL.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() { super::$name($crate::helpers::Db::Sqlite).await }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() { super::$name($crate::helpers::Db::Postgres).await }
        }
    )*};
}

/// The PostgreSQL server tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("CA_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A PostgreSQL database made for one test, dropped when the test ends.
pub struct PgDatabase {
    name: String,
}

impl PgDatabase {
    /// A copy of this run's migrated database (see [`template`]).
    pub async fn create() -> (Self, String) {
        let template = template();
        let mut conn = admin().await;
        let name = fresh_name(&mut conn).await;
        sqlx::query(&format!("CREATE DATABASE \"{name}\" TEMPLATE \"{template}\"")).execute(&mut conn).await.unwrap();
        (Self { name: name.clone() }, database_url(&name))
    }
}

/// The database every test's database is copied from: made once per run,
/// migrated by the server's own `db::connect` (so this build's migrations
/// are applied to PostgreSQL in every run), then copied with `CREATE
/// DATABASE … TEMPLATE` for each test — ~0.08 s where applying the 42
/// migrations to each test's empty database took ~0.3 s (issue #47: the
/// test run). It is named as a test's database, so a later run's sweep
/// removes it after an hour.
fn template() -> &'static str {
    static TEMPLATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        // Its own runtime: the first test's may end before the next needs it.
        std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let mut conn = admin().await;
                let name = fresh_name(&mut conn).await;
                sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(&mut conn).await.unwrap();
                let pool = server::db::connect(&database_url(&name)).await.expect("the migrations apply on PostgreSQL");
                // A template may have no one connected while it is copied.
                pool.close().await;
                name
            })
        })
        .join()
        .expect("the template database is made")
    })
}

/// SQLite's counterpart of [`template`]: a database file migrated once
/// per run by the server's `db::connect`, checkpointed whole into the file
/// (nothing left in its write-ahead log), kept as bytes; each SQLite test
/// starts on a copy of it instead of applying the 42 migrations itself.
fn sqlite_template() -> &'static [u8] {
    static TEMPLATE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        std::thread::spawn(|| {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("template.db");
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let bytes = rt.block_on(async {
                let pool = server::db::connect(&format!("sqlite://{}?mode=rwc", file.display()))
                    .await
                    .expect("the migrations apply on SQLite");
                // The server's own checkpointer may hold the log a moment
                // (its first PASSIVE checkpoint runs at start): SQLite then
                // says busy (1), and the file is not whole yet. Again until not.
                let mut busy = 1;
                for _ in 0..100 {
                    let checkpoint = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").fetch_one(&pool).await.unwrap();
                    busy = sqlx::Row::get::<i64, _>(&checkpoint, 0);
                    if busy == 0 {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                assert_eq!(busy, 0, "the checkpoint was held up for two seconds");
                std::fs::read(&file).unwrap()
            });
            drop(rt);
            bytes
        })
        .join()
        .expect("the SQLite template is made")
    })
}

async fn admin() -> sqlx::PgConnection {
    sqlx::PgConnection::connect(&postgres_admin_url())
        .await
        .expect("PostgreSQL must listen on 127.0.0.1:5432 (CA_TEST_POSTGRES_URL)")
}

fn database_url(name: &str) -> String {
    let admin = postgres_admin_url();
    let base = admin.rsplit_once('/').map(|(b, _)| b.to_owned()).unwrap();
    format!("{base}/{name}")
}

/// A new database name, `ca_test_<unix seconds>_<random>`; databases a
/// crashed run left behind (and earlier runs' templates) are removed after
/// an hour.
async fn fresh_name(conn: &mut sqlx::PgConnection) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let stale: Vec<(String,)> = sqlx::query_as("SELECT datname FROM pg_database WHERE datname LIKE 'ca_test_%'")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    for (name,) in stale {
        let born = name.split('_').nth(2).and_then(|t| t.parse::<u64>().ok()).unwrap_or(now);
        if born + 3600 < now {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(&mut *conn).await;
        }
    }
    format!("ca_test_{now}_{}", random_hex(6))
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&postgres_admin_url()).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                        .execute(&mut conn)
                        .await;
                }
            });
        })
        .join();
    }
}

pub fn random_hex(bytes: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::new();
    while out.len() < bytes * 2 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(out.len());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(bytes * 2);
    out
}

/// A running server and what it needs to stay alive.
pub struct TestApp {
    pub address: SocketAddr,
    /// `CA_METRICS_ADDR`'s listener, when the test asked for one.
    pub metrics_address: Option<SocketAddr>,
    /// `CA_SANDBOX_ADDR`'s listener (MCP Apps' origin), when asked for.
    pub sandbox_address: Option<SocketAddr>,
    pub database_url: String,
    pub client: reqwest::Client,
    pub state: server::app::AppState,
    /// What the server judges expiry by: `advance` it instead of sleeping.
    pub clock: server::clock::Clock,
    pub data_dir: tempfile::TempDir,
    /// Asks the server to shut down (as SIGTERM would); dropped with the app.
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    served: Mutex<Option<tokio::task::JoinHandle<anyhow::Result<()>>>>,
    _pg: Option<PgDatabase>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.address, path)
    }

    /// An embed token for the demo workspace and user `sub`.
    pub async fn demo_token(&self, sub: &str) -> String {
        server::demo::mint_demo_token(&self.state.demo, sub).await.expect("demo workspace exists")
    }

    /// Shuts the server down as SIGTERM does; returns once it has stopped.
    pub async fn shut_down(&self) {
        if let Some(stop) = self.stop.lock().unwrap().take() {
            let _ = stop.send(());
        }
        let served = self.served.lock().unwrap().take();
        if let Some(served) = served {
            served.await.expect("the server task ends").expect("the server shuts down cleanly");
        }
    }

    /// `POST path` as `bearer`, with a JSON body.
    pub async fn post(&self, path: &str, bearer: &str, body: &Value) -> reqwest::Response {
        self.client.post(self.url(path)).bearer_auth(bearer).json(body).send().await.unwrap()
    }

    /// `POST path` as `bearer`, with no body.
    pub async fn post_empty(&self, path: &str, bearer: &str) -> reqwest::Response {
        self.client.post(self.url(path)).bearer_auth(bearer).send().await.unwrap()
    }

    /// `GET path` as `bearer`.
    pub async fn get(&self, path: &str, bearer: &str) -> reqwest::Response {
        self.client.get(self.url(path)).bearer_auth(bearer).send().await.unwrap()
    }

    /// `POST path` as `bearer`: the status and the JSON answer (`Null` when
    /// the answer is not JSON).
    pub async fn post_json(&self, path: &str, bearer: &str, body: &Value) -> (u16, Value) {
        documented("POST", path, self.post(path, bearer, body).await).await
    }

    /// `PUT path` as `bearer`, with a JSON body: the status and the JSON
    /// answer, checked against the OpenAPI document (so are the three below).
    pub async fn put_json(&self, path: &str, bearer: &str, body: &Value) -> (u16, Value) {
        let response = self.client.put(self.url(path)).bearer_auth(bearer).json(body).send().await.unwrap();
        documented("PUT", path, response).await
    }

    pub async fn patch_json(&self, path: &str, bearer: &str, body: &Value) -> (u16, Value) {
        let response = self.client.patch(self.url(path)).bearer_auth(bearer).json(body).send().await.unwrap();
        documented("PATCH", path, response).await
    }

    pub async fn get_json(&self, path: &str, bearer: &str) -> (u16, Value) {
        documented("GET", path, self.get(path, bearer).await).await
    }

    /// Posts a chat turn and reads the whole event stream.
    pub async fn turn(&self, token: &str, conversation_id: Option<&str>, message: &str) -> Vec<(String, Value)> {
        let body = json!({ "conversation_id": conversation_id, "message": message });
        let response = self.post("/v1/chat/turns", token, &body).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        assert_eq!(response.headers()["x-accel-buffering"], "no", "a buffering proxy must pass events at once");
        parse_sse(&response.text().await.unwrap())
    }
}

/// The status and JSON answer (`Null` when it is not JSON) of `method path`,
/// checked against the OpenAPI document (documented.rs).
async fn documented(method: &str, path: &str, response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let text = response.text().await.unwrap();
    crate::documented::check(method, path, status, &content_type, &text);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A response's status and JSON body (`Null` when the body is not JSON).
pub async fn status_and_json(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Settings for `spawn_app`, on top of the test defaults.
pub fn spawn_app(db: Db) -> AppBuilder {
    AppBuilder { db, vars: HashMap::new() }
}

pub struct AppBuilder {
    db: Db,
    vars: HashMap<String, String>,
}

impl AppBuilder {
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    pub async fn start(self) -> TestApp {
        // PDFs are read as the server reads them: in child processes of the
        // server's program, which ./dev test builds with the tests.
        if let Some(program) = server_program() {
            server::attachments::pdf::use_reader(program);
        }
        let data_dir = tempfile::tempdir().unwrap();
        let (pg, database_url) = match self.db {
            Db::Sqlite => {
                let file = data_dir.path().join("test.db");
                std::fs::write(&file, sqlite_template()).unwrap();
                (None, format!("sqlite://{}?mode=rwc", file.display()))
            }
            Db::Postgres => {
                let (db, url) = PgDatabase::create().await;
                (Some(db), url)
            }
        };
        let mut vars = self.vars;
        vars.entry("LEPTOS_SITE_ADDR".into()).or_insert("127.0.0.1:0".into());
        vars.entry("CA_DATA_DIR".into()).or_insert(data_dir.path().display().to_string());
        vars.entry("DATABASE_URL".into()).or_insert(database_url);
        vars.entry("CA_ADMIN_TOKEN".into()).or_insert(ADMIN_TOKEN.into());
        vars.entry("CA_ALLOW_PRIVATE_TOOL_HOSTS".into()).or_insert("1".into());
        // Tests run many turns as one user from one address; the limits'
        // own tests set them low.
        for (name, value) in TEST_RATES {
            vars.entry((*name).into()).or_insert((*value).into());
        }
        // The demo workspace serves many tests, also those with a scripted model.
        vars.entry("CA_DEMO".into()).or_insert("1".into());
        // Its help center is read only by the tests about it (each test
        // app would otherwise sync it in the background).
        vars.entry("CA_DEMO_KNOWLEDGE".into()).or_insert("0".into());
        let database_url = vars["DATABASE_URL"].clone();
        let config = Config::from_lookup(|name| vars.get(name).cloned()).expect("test configuration is valid");
        let clock = server::clock::Clock::default();
        let app = Application::build_with_clock(config, clock.clone()).await.expect("the app starts");
        let (address, metrics_address, sandbox_address) = (app.address(), app.metrics_address(), app.sandbox_address());
        let state = app.state().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        TestApp {
            address,
            metrics_address,
            sandbox_address,
            database_url,
            client: http(),
            state,
            clock,
            data_dir,
            stop: Mutex::new(Some(stop)),
            served: Mutex::new(Some(served)),
            _pg: pg,
        }
    }
}

/// Moves `clock` to 100 ms into a fresh window of `window_ms` (the limits
/// count in windows of wall-clock time), so a test's requests all fall in
/// one window however slow the machine.
pub fn start_of_window(clock: &server::clock::Clock, window_ms: i64) {
    let into = clock.now_ms().rem_euclid(window_ms);
    clock.advance(std::time::Duration::from_millis((window_ms - into + 100) as u64));
}

/// Limits high enough for tests that are not about them.
const TEST_RATES: &[(&str, &str)] = &[
    ("CA_TURNS_PER_USER_PER_MINUTE", "100000"),
    ("CA_TURNS_PER_IP_PER_MINUTE", "100000"),
    ("CA_TURNS_PER_WORKSPACE_PER_MINUTE", "100000"),
];

pub const ADMIN_TOKEN: &str = "test-admin-token-of-at-least-32-characters";

/// `event:`/`data:` pairs of an SSE body, heartbeats skipped.
pub fn parse_sse(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            Some((event?, serde_json::from_str(&data).expect("event data is JSON")))
        })
        .collect()
}

pub fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

pub fn of<'a>(events: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|(n, _)| n == name).map(|(_, d)| d).collect()
}

/// An HTTP client for a test, on the process's one TLS connector (making
/// a connector of its own reads the whole CA bundle: ~0.15 s of CPU).
pub fn http() -> reqwest::Client {
    server::host::client_builder().build().expect("the client builds")
}

/// Starts an axum router on a random loopback port.
pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    // As Node's, Python's asyncio and Go's servers do: no Nagle delay on
    // a streamed answer's small writes over a kept connection.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| drop(tcp.set_nodelay(true)));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

/// Which of a child's outputs says it is ready.
#[derive(Clone, Copy)]
pub enum Says {
    Stdout,
    Stderr,
}

/// Preloaded (`node --require`) into a node server a test process shares:
/// it exits once the process named by `EXIT_WITH_PARENT` is gone.
pub const EXIT_WITH_PARENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/exit-with-parent.cjs");

/// Starts `command` (a node server the tests run) with the output `says`
/// piped and read to its end on a thread of its own (so the child never
/// blocks on a full pipe), and waits up to `within` for the first line
/// `ready` accepts; returns the child and what `ready` made of the line. A
/// child that never says so is killed: `None`.
pub fn spawn_until_ready(
    mut command: std::process::Command,
    says: Says,
    ready: impl Fn(&str) -> Option<String> + Send + 'static,
    within: std::time::Duration,
) -> Option<(std::process::Child, String)> {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let (stdout, stderr) = match says {
        Says::Stdout => (Stdio::piped(), Stdio::null()),
        Says::Stderr => (Stdio::null(), Stdio::piped()),
    };
    let mut child = command.stdin(Stdio::null()).stdout(stdout).stderr(stderr).spawn().expect("node runs");
    let output: Box<dyn Read + Send> = match says {
        Says::Stdout => Box::new(child.stdout.take().unwrap()),
        Says::Stderr => Box::new(child.stderr.take().unwrap()),
    };
    let (ready_tx, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if let Some(what) = ready(&line) {
                let _ = ready_tx.send(what);
            }
        }
    });
    match said.recv_timeout(within) {
        Ok(what) => Some((child, what)),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }
}

/// The tests' Python (tests/python-venv.sh's venv: schemathesis, PyJWT,
/// PyPI's `mcp`), as `./dev test` names it or where it keeps it.
pub fn test_python() -> String {
    let cache = std::env::var("CA_CACHE")
        .unwrap_or_else(|_| format!("{}/.cache/context-assistant", std::env::var("HOME").unwrap()));
    std::env::var("CA_TEST_PYTHON").unwrap_or_else(|_| format!("{cache}/tools/api-fuzz-venv/bin/python"))
}

/// A fake tool host: serves the given tools, a context, previews and
/// executes as configured, and records every call it receives.
#[derive(Clone)]
pub struct FakeHost {
    pub address: SocketAddr,
    pub calls: Arc<Mutex<Vec<(String, Value)>>>,
}

pub const HOST_SECRET: &str = "fake-host-secret";

/// How a fake host answers.
#[derive(Clone)]
pub struct HostSpec {
    pub tools: Value,
    pub context: Value,
    pub execute_status: u16,
    /// The whole answer to `POST /tools/execute` (usually `{"output": …}`).
    pub execute_body: String,
    pub preview_status: u16,
    pub preview_body: String,
    /// Delay before each execute answer.
    pub execute_delay_ms: u64,
    /// Answers to `POST /tools/execute` for particular tools: (tool, status, body).
    pub execute_by_tool: Vec<(String, u16, String)>,
    /// Answers given once each, in order, before the usual ones: to the
    /// turns' `POST /tools/execute` and `POST /tools/preview` calls.
    pub execute_queue: Arc<Mutex<std::collections::VecDeque<(u16, String)>>>,
    pub preview_queue: Arc<Mutex<std::collections::VecDeque<(u16, String)>>>,
}

impl HostSpec {
    pub fn new(tools: Value) -> Self {
        Self {
            tools,
            context: json!({"project": "Apollo"}),
            execute_status: 200,
            execute_body: json!({"output": {"status": "done"}}).to_string(),
            preview_status: 200,
            preview_body: json!({"preview": "Create the task “Ship it”"}).to_string(),
            execute_delay_ms: 0,
            execute_by_tool: Vec::new(),
            execute_queue: Arc::default(),
            preview_queue: Arc::default(),
        }
    }

    /// The next turn's execute answers this, once (queued in order).
    pub fn execute_once(self, status: u16, body: Value) -> Self {
        self.execute_queue.lock().unwrap().push_back((status, body.to_string()));
        self
    }

    /// The next turn's preview answers this, once (queued in order).
    pub fn preview_once(self, status: u16, body: Value) -> Self {
        self.preview_queue.lock().unwrap().push_back((status, body.to_string()));
        self
    }

    /// How `POST /tools/execute` answers for `tool` (others get the default);
    /// replaces an earlier answer for the same tool.
    pub fn execute_for(mut self, tool: &str, status: u16, body: Value) -> Self {
        self.execute_by_tool.retain(|(t, _, _)| t != tool);
        self.execute_by_tool.push((tool.to_owned(), status, body.to_string()));
        self
    }

    pub fn execute(mut self, status: u16, body: Value) -> Self {
        self.execute_status = status;
        self.execute_body = body.to_string();
        self
    }

    pub fn execute_raw(mut self, status: u16, body: &str) -> Self {
        self.execute_status = status;
        self.execute_body = body.to_owned();
        self
    }

    pub fn context(mut self, context: Value) -> Self {
        self.context = context;
        self
    }

    pub fn delay(mut self, ms: u64) -> Self {
        self.execute_delay_ms = ms;
        self
    }

    pub async fn start(self) -> FakeHost {
        FakeHost::serve(self).await
    }
}

impl FakeHost {
    pub async fn start(tools: Value, execute_status: u16, execute_body: Value) -> Self {
        HostSpec::new(tools).execute(execute_status, execute_body).start().await
    }

    async fn serve(spec: HostSpec) -> Self {
        let calls: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        #[derive(Clone)]
        struct S {
            spec: Arc<HostSpec>,
            calls: Arc<Mutex<Vec<(String, Value)>>>,
        }
        fn authorized(h: &HeaderMap) -> bool {
            h.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {HOST_SECRET}"))
        }
        // The host checker's calls (connect runs it) are kept apart, as
        // `check:{kind}`, and answered at once: tests count the turns' calls.
        fn kind(kind: &str, checker: bool) -> String {
            if checker { format!("check:{kind}") } else { kind.to_owned() }
        }
        fn from_checker_query(q: &Option<String>) -> bool {
            q.as_deref().is_some_and(|q| q.contains(&format!("externalUserId={}", server::checker::CHECK_USER)))
        }
        fn from_checker_body(body: &Value) -> bool {
            body["execution"]["externalUserId"] == server::checker::CHECK_USER
        }
        fn raw(status: u16, body: &str) -> Response {
            (StatusCode::from_u16(status).unwrap(), [("content-type", "application/json")], body.to_owned())
                .into_response()
        }
        let s = S { spec: Arc::new(spec), calls: calls.clone() };
        let router = axum::Router::new()
            .route(
                "/tools",
                get(|State(s): State<S>, h: HeaderMap, q: axum::extract::RawQuery| async move {
                    s.calls.lock().unwrap().push((kind("tools", from_checker_query(&q.0)), json!(q.0)));
                    if !authorized(&h) {
                        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "bad secret"}))).into_response();
                    }
                    Json(json!({ "tools": s.spec.tools })).into_response()
                }),
            )
            .route(
                "/context",
                get(|State(s): State<S>, q: axum::extract::RawQuery| async move {
                    s.calls.lock().unwrap().push((kind("context", from_checker_query(&q.0)), json!(q.0)));
                    Json(s.spec.context.clone())
                }),
            )
            .route(
                "/tools/preview",
                post(|State(s): State<S>, h: HeaderMap, Json(body): Json<Value>| async move {
                    let checker = from_checker_body(&body);
                    s.calls.lock().unwrap().push((kind("preview", checker), body));
                    if !authorized(&h) {
                        return raw(401, r#"{"error":"bad secret"}"#);
                    }
                    let queued = if checker { None } else { s.spec.preview_queue.lock().unwrap().pop_front() };
                    match queued {
                        Some((status, body)) => raw(status, &body),
                        None => raw(s.spec.preview_status, &s.spec.preview_body),
                    }
                }),
            )
            .route(
                "/tools/execute",
                post(|State(s): State<S>, h: HeaderMap, Json(body): Json<Value>| async move {
                    let tool = body["tool"].as_str().unwrap_or_default().to_owned();
                    let checker = from_checker_body(&body);
                    s.calls.lock().unwrap().push((kind("execute", checker), body));
                    if !authorized(&h) {
                        return raw(401, r#"{"error":"bad secret"}"#);
                    }
                    if !checker {
                        tokio::time::sleep(std::time::Duration::from_millis(s.spec.execute_delay_ms)).await;
                        if let Some((status, body)) = s.spec.execute_queue.lock().unwrap().pop_front() {
                            return raw(status, &body);
                        }
                    }
                    match s.spec.execute_by_tool.iter().find(|(t, _, _)| *t == tool) {
                        Some((_, status, body)) => raw(*status, body),
                        None => raw(s.spec.execute_status, &s.spec.execute_body),
                    }
                }),
            )
            .with_state(s);
        Self { address: serve(router).await, calls }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn count(&self, kind: &str) -> usize {
        self.calls.lock().unwrap().iter().filter(|(k, _)| k == kind).count()
    }

    pub fn calls_of(&self, kind: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|(k, _)| k == kind).map(|(_, v)| v.clone()).collect()
    }
}

/// A scripted OpenAI-compatible model: while the script has steps it
/// replays them in order; when it runs out it repeats the last. A text
/// step may contain `{last_tool}`, replaced by the last tool result it was
/// sent, so tests can see what the model saw. Every answer reports
/// `tokens` of usage.
pub struct ScriptedModel {
    pub address: SocketAddr,
    pub requests: Arc<Mutex<Vec<Value>>>,
}

type ScriptState = (Arc<Vec<Step>>, Arc<Mutex<Vec<Value>>>, u32);

#[derive(Clone, Debug)]
pub enum Step {
    Call(&'static str, Value),
    /// Several calls in one step.
    Calls(Vec<(&'static str, Value)>),
    /// A call whose arguments are this raw text (possibly not JSON).
    RawCall(&'static str, &'static str),
    Text(&'static str),
}

impl ScriptedModel {
    pub async fn start(script: Vec<Step>) -> Self {
        Self::with_usage(script, 50).await
    }

    pub async fn with_usage(script: Vec<Step>, tokens: u32) -> Self {
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let script = Arc::new(script);
        let router = axum::Router::new()
            .route(
                "/v1/chat/completions",
                post(|State((script, requests, tokens)): State<ScriptState>, Json(body): Json<Value>| async move {
                    let n = {
                        let mut r = requests.lock().unwrap();
                        r.push(body.clone());
                        r.len() - 1
                    };
                    let step = script.get(n).or(script.last()).cloned().unwrap();
                    scripted_stream(step, &body, tokens)
                }),
            )
            .with_state((script, requests.clone(), tokens));
        Self { address: serve(router).await, requests }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// The tool messages of the model's last request.
    pub fn last_tool_messages(&self) -> Vec<String> {
        let requests = self.requests.lock().unwrap();
        let last = requests.last().expect("the model was called");
        last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

/// The id of the first attachment named in the request's messages.
fn first_attachment(request: &Value) -> String {
    let text = request["messages"].to_string();
    text.split("(attachment ")
        .nth(1)
        .map_or(String::new(), |rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
}

fn scripted_stream(step: Step, request: &Value, tokens: u32) -> Response {
    let chunk = |delta: Value, finish: Option<&str>| {
        format!(
            "data: {}\n\n",
            json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let call = |index: usize, name: &str, arguments: String| {
        json!({"index": index, "id": format!("call_{}", random_hex(4)), "type": "function",
            "function": {"name": name, "arguments": arguments}})
    };
    let mut body = String::new();
    match step {
        Step::Call(name, args) => {
            // `{attachment}`: the id of the first file the user attached (as the engine named it).
            let args = args.to_string().replace("{attachment}", &first_attachment(request));
            body.push_str(&chunk(json!({"tool_calls": [call(0, name, args)]}), None));
            body.push_str(&chunk(json!({}), Some("tool_calls")));
        }
        Step::Calls(calls) => {
            let calls: Vec<Value> =
                calls.into_iter().enumerate().map(|(i, (name, args))| call(i, name, args.to_string())).collect();
            body.push_str(&chunk(json!({"tool_calls": calls}), None));
            body.push_str(&chunk(json!({}), Some("tool_calls")));
        }
        Step::RawCall(name, raw) => {
            body.push_str(&chunk(json!({"tool_calls": [call(0, name, raw.to_owned())]}), None));
            body.push_str(&chunk(json!({}), Some("tool_calls")));
        }
        Step::Text(text) => {
            let last_tool = request["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_owned();
            body.push_str(&chunk(json!({"content": text.replace("{last_tool}", &last_tool)}), None));
            body.push_str(&chunk(json!({}), Some("stop")));
        }
    }
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "scripted", "choices": [],
               "usage": {"prompt_tokens": tokens / 2, "completion_tokens": tokens - tokens / 2, "total_tokens": tokens}})
    ));
    body.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], body).into_response()
}

/// Creates a workspace through the API and connects `host` to it; returns
/// (workspace id, embed secret).
pub async fn workspace_with_host(app: &TestApp, host: &FakeHost) -> (String, String) {
    let (id, secret, _) = workspace_with_host_and_key(app, host).await;
    (id, secret)
}

/// [`workspace_with_host`], with the workspace's api key as well.
pub async fn workspace_with_host_and_key(app: &TestApp, host: &FakeHost) -> (String, String, String) {
    let workspace = json!({"name": "Shop", "allowed_origins": ["https://shop.example"]});
    let (status, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &workspace).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let connect = json!({"base_url": host.base_url(), "secret": HOST_SECRET});
    let api_key = created["api_key"].as_str().unwrap();
    let (status, connected) = app.post_json("/v1/integrations/generic-rest/connect", api_key, &connect).await;
    assert_eq!(status, 200, "{connected}");
    (id, created["embed_secret"].as_str().unwrap().to_owned(), api_key.to_owned())
}

/// Mints an embed token the way a host's backend would.
pub fn token(workspace: &str, secret: &str, sub: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let claims = json!({"aud": "context-assistant", "ws": workspace, "sub": sub, "permissions": ["tasks:read"],
        "iat": now, "exp": now + 600});
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

/// A second server on the same database and data directory (so the same
/// key): a restart, or another replica.
pub async fn restart(app: &TestApp, extra: &[(&str, String)]) -> SocketAddr {
    replica(app, extra).await.0
}

/// [`restart`], with the other replica's state to look into.
pub async fn replica(app: &TestApp, extra: &[(&str, String)]) -> (SocketAddr, server::app::AppState) {
    let mut vars: HashMap<String, String> = HashMap::from([
        ("LEPTOS_SITE_ADDR".into(), "127.0.0.1:0".into()),
        ("CA_DATA_DIR".into(), app.data_dir.path().display().to_string()),
        ("DATABASE_URL".into(), app.database_url.clone()),
        ("CA_ALLOW_PRIVATE_TOOL_HOSTS".into(), "1".into()),
    ]);
    vars.extend(TEST_RATES.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    for (k, v) in extra {
        vars.insert((*k).into(), v.clone());
    }
    let config = Config::from_lookup(|name| vars.get(name).cloned()).unwrap();
    // Replicas tell the same time (as NTP makes real ones): the test's clock.
    let again = Application::build_with_clock(config, app.clock.clone()).await.unwrap();
    let address = again.address();
    let state = again.state().clone();
    tokio::spawn(again.run_until_stopped());
    (address, state)
}

/// A get tool named `lookup`.
pub fn lookup_tool() -> Value {
    json!([{ "name": "lookup", "description": "Look something up", "verb": "get",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}} }])
}

/// One tool of each verb.
pub fn task_tools() -> Value {
    json!([
        { "name": "lookup", "description": "Look something up", "verb": "get",
          "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}} },
        { "name": "create_task", "description": "Create a task", "verb": "create",
          "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]} },
        { "name": "update_task", "description": "Rename a task", "verb": "update",
          "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}} },
        { "name": "delete_project", "description": "Delete the project", "verb": "delete",
          "inputSchema": {"type": "object", "properties": {}} },
    ])
}

/// A server with a scripted model, a connected fake host and a user token.
pub struct Rig {
    pub app: TestApp,
    pub host: FakeHost,
    pub model: ScriptedModel,
    pub token: String,
    pub workspace: String,
    pub secret: String,
    /// The workspace's api key.
    pub api_key: String,
}

impl Rig {
    pub async fn start(db: Db, host: HostSpec, script: Vec<Step>, env: &[(&str, &str)]) -> Rig {
        let host = host.start().await;
        let model = ScriptedModel::start(script).await;
        let mut builder = spawn_app(db).env("OPENAI_BASE_URL", model.base_url());
        for (k, v) in env {
            builder = builder.env(k, *v);
        }
        let app = builder.start().await;
        let (workspace, secret, api_key) = workspace_with_host_and_key(&app, &host).await;
        let token = token(&workspace, &secret, "user_42");
        Rig { app, host, model, token, workspace, secret, api_key }
    }

    pub async fn say(&self, message: &str) -> Vec<(String, Value)> {
        self.app.turn(&self.token, None, message).await
    }

    /// POSTs to `/v1/actions/{id}/{verb}`; returns the status and either
    /// the events (200 stream) or the JSON body.
    pub async fn act(&self, id: &str, verb: &str, body: Option<Value>) -> (u16, Vec<(String, Value)>, Value) {
        self.act_at(&self.app.url(""), id, verb, body).await
    }

    pub async fn act_at(
        &self,
        base: &str,
        id: &str,
        verb: &str,
        body: Option<Value>,
    ) -> (u16, Vec<(String, Value)>, Value) {
        let mut request = self.app.client.post(format!("{base}/v1/actions/{id}/{verb}")).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let is_stream = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
        if is_stream {
            let status = response.status().as_u16();
            (status, parse_sse(&response.text().await.unwrap()), Value::Null)
        } else {
            let (status, body) = status_and_json(response).await;
            (status, Vec::new(), body)
        }
    }
}

/// The `pending_action` of a stream.
pub fn pending(events: &[(String, Value)]) -> Value {
    of(events, "pending_action").first().map(|v| (*v).clone()).expect("a pending_action event")
}

/// A turn's stream left open: what is still to come.
pub type OpenStream = std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>;

/// Starts a turn as `token` and reads its stream until `marker` appears:
/// the rest of the stream (still open) and what was read.
pub async fn turn_until(app: &TestApp, token: &str, message: &str, marker: &str) -> (OpenStream, String) {
    use futures::StreamExt;
    let response = app
        .client
        .post(app.url("/v1/chat/turns"))
        .bearer_auth(token)
        .json(&json!({"message": message}))
        .send()
        .await
        .unwrap();
    let mut body: OpenStream = Box::pin(response.bytes_stream().map(|chunk| chunk.map(|b| b.to_vec())));
    let mut seen = String::new();
    while !seen.contains(marker) {
        seen.push_str(&String::from_utf8_lossy(&body.next().await.unwrap().unwrap()));
    }
    (body, seen)
}

/// Waits until `turn_id`'s stream is stored to its end (its `done` event):
/// events are written in batches behind the stream the client reads.
pub async fn events_stored(app: &TestApp, turn_id: &str) {
    for _ in 0..200 {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM turn_events WHERE turn_id = $1 AND kind = 'done'")
            .bind(turn_id)
            .fetch_one(&app.state.pool)
            .await
            .unwrap();
        if n == 1 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the events of {turn_id} were not stored within 10 s");
}

/// The `context-assistant` program beside the tests' own (both in the
/// target directory's `debug/`), if it was built.
pub fn server_program() -> Option<std::path::PathBuf> {
    let tests = std::env::current_exe().ok()?;
    let program = tests.parent()?.parent()?.join("context-assistant");
    program.is_file().then_some(program)
}

/// [`server_program`]'s path for a test of the command, which cannot run
/// without it.
pub fn built_server_program() -> String {
    let program =
        server_program().expect("context-assistant is missing beside the tests: build it first (./dev test does)");
    program.display().to_string()
}
