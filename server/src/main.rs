//! `context-assistant`: loads configuration, starts logging, serves.
//! Everything else lives in the library so tests build the same app.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let format = match server::telemetry::LogFormat::parse(std::env::var("CA_LOG_FORMAT").ok().as_deref()) {
        Ok(format) => format,
        Err(error) => {
            eprintln!("context-assistant: {error}");
            return ExitCode::from(2);
        }
    };
    server::telemetry::init(format);
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("serve") => {}
        Some("check-host") => return check_host(&args[1..]).await,
        Some("test") => return assistant_test(&args[1..]).await,
        Some("knowledge") => {
            let outcome = server::knowledge::cli::run(&args[1..], |name| std::env::var(name).ok()).await;
            print!("{}", outcome.out);
            eprint!("{}", outcome.err);
            return ExitCode::from(outcome.status);
        }
        // A PDF attachment's text, read in a child process of the server's
        // own (server/src/attachments/pdf.rs): never by hand.
        Some("read-pdf") => return server::attachments::pdf::child_main(),
        Some("openapi") => {
            // The document `GET /v1/openapi.json` serves, without a server:
            // for client generators and validators.
            println!("{:#}", server::api::document());
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!(
                "context-assistant: unknown command `{other}`; the commands are `serve` (the default), `check-host`, \
                 `knowledge`, `test` and `openapi`"
            );
            return ExitCode::from(2);
        }
    }
    // PDFs are read in child processes of this program, bounded and killable.
    if let Ok(program) = std::env::current_exe() {
        server::attachments::pdf::use_reader(program);
    }
    let mut config = match server::config::Config::from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("context-assistant: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(files) = raise_file_limit() {
        for (variable, cap) in config.rates.fit_open_files(files) {
            tracing::warn!(files, cap, "{variable} lowered to what the open files limit allows");
        }
    }
    let app = match server::app::Application::build(config).await {
        Ok(app) => app,
        Err(error) => {
            eprintln!("context-assistant: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(address = %app.address(), "serving");
    match app.run_until_stopped().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("context-assistant: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Every open stream holds a socket or three (the visitor's, a tool
/// call's, the model's), and the usual soft limit of 1,024 files would
/// refuse connections long before memory or the turn caps do: the soft
/// limit goes up to the hard one, and the hard one to 65,536 where the
/// process may raise it (a container's root). Returns the soft limit.
fn raise_file_limit() -> Option<u64> {
    use rlimit::Resource;
    const WANT: u64 = 65_536;
    if let Ok((_, hard)) = rlimit::getrlimit(Resource::NOFILE)
        && hard < WANT
    {
        // Refused without the privilege: the hard limit stays.
        let _ = rlimit::setrlimit(Resource::NOFILE, WANT, WANT);
    }
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(files) => {
            tracing::info!(files, "open files allowed");
            Some(files)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot raise the open files limit");
            None
        }
    }
}

/// `context-assistant test SUITE …` (server/src/suites/cli.rs): runs an
/// assistant test suite through a running assistant's API (`--url`), or
/// here (`--workspace`): this program's own server on the database its
/// environment names, listening on a loopback port of its own while the
/// suite runs (the demo's model and tools answer over it).
async fn assistant_test(args: &[String]) -> ExitCode {
    use server::suites::cli::{self, Target};
    let invocation = match cli::invocation(args, |name| std::env::var(name).ok()) {
        Ok(invocation) => invocation,
        Err(outcome) => {
            eprint!("{}", outcome.err);
            return ExitCode::from(outcome.status);
        }
    };
    let mut reports = Vec::with_capacity(invocation.models.len());
    match &invocation.target {
        Target::Url { base, key } => {
            for model in &invocation.models {
                match cli::run_remote(&invocation, base, key, model.as_deref()).await {
                    Ok(report) => reports.push(report),
                    Err(error) => {
                        eprintln!("context-assistant test: {error}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        Target::Workspace(workspace) => {
            if let Ok(program) = std::env::current_exe() {
                server::attachments::pdf::use_reader(program);
            }
            let mut config = match server::config::Config::from_env() {
                Ok(config) => config,
                Err(error) => {
                    eprintln!("context-assistant: {error}");
                    return ExitCode::from(2);
                }
            };
            config.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            config.metrics_listen = None;
            config.sandbox_listen = None;
            let app = match server::app::Application::build(config).await {
                Ok(app) => app,
                Err(error) => {
                    eprintln!("context-assistant: {error:#}");
                    return ExitCode::FAILURE;
                }
            };
            let state = app.state().api.clone();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let serving = tokio::spawn(app.run_until(async move {
                let _ = stopped.await;
            }));
            for model in &invocation.models {
                let options = server::api::test_runner::RunOptions {
                    run_id: server::ids::new_id("run"),
                    model: model.clone(),
                    on_case: Some(std::sync::Arc::new(|case| print!("{}", cli::case_line(case)))),
                };
                match server::api::test_runner::run_suite(&state, workspace, &invocation.suite, &options).await {
                    Ok(report) => reports.push(report),
                    Err(error) => {
                        eprintln!("context-assistant test: {error:#}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            let _ = stop.send(());
            let _ = serving.await;
        }
    }
    let outcome = cli::finish(&invocation, &reports);
    print!("{}", outcome.out);
    eprint!("{}", outcome.err);
    ExitCode::from(outcome.status)
}

/// `context-assistant check-host <base_url> [--json]`: the host checker
/// against a tool server. The secret comes from `CA_HOST_SECRET`, else a
/// prompt (not echoed), else one line of standard input — never an
/// argument, which any user of the machine could read. Exit status 0 only
/// when no rule fails.
async fn check_host(args: &[String]) -> ExitCode {
    let json = args.iter().any(|a| a == "--json");
    if args.iter().any(|a| a == "--mcp") {
        return check_mcp(args, json).await;
    }
    let urls: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [base_url] = urls.as_slice() else {
        eprintln!("usage: context-assistant check-host <base_url> [--json]   (the secret: CA_HOST_SECRET, or asked)");
        return ExitCode::from(2);
    };
    let base_url = match url::Url::parse(base_url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => url,
        _ => {
            eprintln!("context-assistant: `{base_url}` is not an http(s) URL");
            return ExitCode::from(2);
        }
    };
    let secret = match std::env::var("CA_HOST_SECRET").ok().filter(|s| !s.is_empty()) {
        Some(secret) => secret,
        None => match read_secret() {
            Ok(secret) if !secret.is_empty() => secret,
            _ => {
                eprintln!("context-assistant: no secret (set CA_HOST_SECRET, or type it when asked)");
                return ExitCode::from(2);
            }
        },
    };
    let client = match checker_client() {
        Ok(client) => client,
        Err(code) => return code,
    };
    let target = server::host::HostTarget { base_url, secret: server::secret::Secret::new(secret), trusted: false };
    let report = server::checker::check(&client, &target).await;
    if json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        print!("{}", report.text());
    }
    if report.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// `check-host --mcp <url> [--trust-annotations] [--json]`: the connect
/// report of an MCP server, nothing stored. Its headers (a bearer token,
/// say) come from `CA_MCP_HEADERS`, a JSON object — never an argument.
async fn check_mcp(args: &[String], json: bool) -> ExitCode {
    let urls: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [url] = urls.as_slice() else {
        eprintln!(
            "usage: context-assistant check-host --mcp <url> [--trust-annotations] [--json]   (headers: CA_MCP_HEADERS, a JSON object)"
        );
        return ExitCode::from(2);
    };
    let url = match url::Url::parse(url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => url,
        _ => {
            eprintln!("context-assistant: `{url}` is not an http(s) URL");
            return ExitCode::from(2);
        }
    };
    let headers: std::collections::BTreeMap<String, String> = match std::env::var("CA_MCP_HEADERS") {
        Ok(raw) if !raw.trim().is_empty() => match serde_json::from_str(&raw) {
            Ok(headers) => headers,
            Err(_) => {
                eprintln!("context-assistant: CA_MCP_HEADERS is not a JSON object of strings");
                return ExitCode::from(2);
            }
        },
        _ => Default::default(),
    };
    let sources = match checker_client() {
        Ok(client) => server::sources::Sources::new(client, true),
        Err(code) => return code,
    };
    let target = server::sources::McpServer {
        url,
        headers: headers.into_iter().collect(),
        trust_annotations: args.iter().any(|a| a == "--trust-annotations"),
        verbs: Default::default(),
    };
    let report = match sources.inspect("check", &target, &[], "ws_check").await {
        Ok((_, report)) => report,
        Err(error) => {
            eprintln!("context-assistant: {error} ({})", error.code());
            return ExitCode::FAILURE;
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        print!("{}", report.text());
    }
    if report.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// The client `check-host` calls with: run by the host's developer
/// against their own server, so a private address is allowed; the CA
/// certificates of `CA_TOOL_HOSTS_CA_FILE` trusted as the server trusts
/// them; `CA_TOOL_TIMEOUT_MS` a call (default 10 s).
fn checker_client() -> Result<server::host::HostClient, ExitCode> {
    let timeout = std::env::var("CA_TOOL_TIMEOUT_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let extra_roots = match std::env::var("CA_TOOL_HOSTS_CA_FILE") {
        Ok(path) if !path.trim().is_empty() => server::config::certificates(&path).map_err(|reason| {
            eprintln!("context-assistant: CA_TOOL_HOSTS_CA_FILE: {reason}");
            ExitCode::from(2)
        })?,
        _ => Vec::new(),
    };
    let connections = server::host::HostConnections { extra_roots, ..Default::default() };
    Ok(server::host::HostClient::with_connections(std::time::Duration::from_millis(timeout), true, &connections))
}

fn read_secret() -> std::io::Result<String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return rpassword::prompt_password("Tool server secret: ").map(|s| s.trim().to_owned());
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}
