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
    let command = std::env::args().nth(1).unwrap_or_else(|| "serve".to_owned());
    if command != "serve" {
        eprintln!("context-assistant: unknown command `{command}`; the only command is `serve` (the default)");
        return ExitCode::from(2);
    }
    let config = match server::config::Config::from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("context-assistant: {error}");
            return ExitCode::from(2);
        }
    };
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
