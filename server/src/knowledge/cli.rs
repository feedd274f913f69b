//! `context-assistant knowledge …`: a workspace's knowledge sources from a
//! terminal, through the API of a running assistant (`CA_URL`, by default
//! `http://127.0.0.1:3000`) with the workspace's api key (`CA_API_KEY`:
//! never an argument, which any user of the machine could read).
//!
//! ```text
//! context-assistant knowledge list
//! context-assistant knowledge add-sitemap <url>
//! context-assistant knowledge add-page <url> [--crawl] [--prefix <path>] [--max-pages <n>]
//! context-assistant knowledge add-file <path>
//! context-assistant knowledge add-text <title> <text> [--url <url>]
//! context-assistant knowledge sync <id> | remove <id> | pages <id>
//! context-assistant knowledge search <question…>
//! context-assistant knowledge gaps [--days <n>]
//! ```
//!
//! Every command takes `--json` (the API's answer as it came). The exit
//! status is 0 on success, 1 when the API refused (its error is printed),
//! 2 for a usage mistake.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// What to print, and the exit status.
pub struct Outcome {
    pub status: u8,
    pub out: String,
    pub err: String,
}

const USAGE: &str = "usage: context-assistant knowledge <list | add-sitemap <url> | add-page <url> [--crawl] \
    [--prefix <path>] [--max-pages <n>] | add-file <path> | add-text <title> <text> [--url <url>] | sync <id> | \
    remove <id> | pages <id> | search <question…> | gaps [--days <n>]> [--json]\n\
    (the assistant: CA_URL, default http://127.0.0.1:3000; the workspace's api key: CA_API_KEY)";

fn usage(why: &str) -> Outcome {
    Outcome { status: 2, out: String::new(), err: format!("context-assistant knowledge: {why}\n{USAGE}\n") }
}

/// The value after `--name`, if given.
fn option<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// The arguments that are neither `--flags` nor their values.
fn positional(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut skip = false;
    for arg in args {
        if skip {
            skip = false;
        } else if matches!(arg.as_str(), "--prefix" | "--max-pages" | "--url" | "--days") {
            skip = true;
        } else if !arg.starts_with("--") {
            out.push(arg.as_str());
        }
    }
    out
}

/// Runs `args` (after `knowledge`) with the environment `env`.
pub async fn run(args: &[String], env: impl Fn(&str) -> Option<String>) -> Outcome {
    let base = env("CA_URL").unwrap_or_else(|| "http://127.0.0.1:3000".into());
    let base = base.trim_end_matches('/').to_owned();
    let Some(key) = env("CA_API_KEY").filter(|k| !k.trim().is_empty()) else {
        return usage("set CA_API_KEY to the workspace's api key");
    };
    let json_out = args.iter().any(|a| a == "--json");
    let words = positional(args);
    let Some((&command, rest)) = words.split_first() else { return usage("name a command") };
    let client = match crate::host::client_builder().build() {
        Ok(client) => client,
        Err(error) => return Outcome { status: 2, out: String::new(), err: format!("cannot set up HTTP: {error}\n") },
    };
    let call =
        |method: reqwest::Method, path: String| client.request(method, format!("{base}{path}")).bearer_auth(&key);
    let request = match (command, rest) {
        ("list", []) => call(reqwest::Method::GET, "/v1/knowledge/sources".into()),
        ("add-sitemap", [url]) => {
            call(reqwest::Method::POST, "/v1/knowledge/sources".into()).json(&json!({ "kind": "sitemap", "url": url }))
        }
        ("add-page", [url]) => {
            let mut body = json!({ "kind": "url", "url": url });
            if args.iter().any(|a| a == "--crawl")
                || option(args, "--prefix").is_some()
                || option(args, "--max-pages").is_some()
            {
                let max_pages = match option(args, "--max-pages").map(str::parse::<u32>) {
                    None => None,
                    Some(Ok(n)) => Some(n),
                    Some(Err(_)) => return usage("--max-pages takes a number"),
                };
                body["crawl"] = json!({ "prefix": option(args, "--prefix"), "max_pages": max_pages });
            }
            call(reqwest::Method::POST, "/v1/knowledge/sources".into()).json(&body)
        }
        ("add-text", [title, text]) => {
            let mut body = json!({ "kind": "text", "title": title, "text": text });
            if let Some(url) = option(args, "--url") {
                body["url"] = json!(url);
            }
            call(reqwest::Method::POST, "/v1/knowledge/sources".into()).json(&body)
        }
        ("add-file", [path]) => return add_file(&client, &base, &key, path, json_out).await,
        ("sync", [id]) => call(reqwest::Method::POST, format!("/v1/knowledge/sources/{}/sync", segment(id))),
        ("remove", [id]) => call(reqwest::Method::DELETE, format!("/v1/knowledge/sources/{}", segment(id))),
        ("pages", [id]) => call(reqwest::Method::GET, format!("/v1/knowledge/sources/{}/pages", segment(id))),
        ("search", words) if !words.is_empty() => {
            call(reqwest::Method::POST, "/v1/knowledge/search".into()).json(&json!({ "query": words.join(" ") }))
        }
        ("gaps", []) => {
            let days = option(args, "--days").unwrap_or("30");
            call(reqwest::Method::GET, format!("/v1/knowledge/gaps?days={}", segment(days)))
        }
        _ => return usage(&format!("`{command}` does not take these arguments, or is not a command")),
    };
    let answer = send(request).await;
    show(command, answer, json_out)
}

/// Uploads a file, then adds it as a source.
async fn add_file(client: &reqwest::Client, base: &str, key: &str, path: &str, json_out: bool) -> Outcome {
    let bytes = match tokio::fs::read(path).await {
        Ok(bytes) => bytes,
        Err(error) => return Outcome { status: 2, out: String::new(), err: format!("cannot read {path}: {error}\n") },
    };
    let name = std::path::Path::new(path).file_name().map_or("file".into(), |n| n.to_string_lossy().into_owned());
    let form = reqwest::multipart::Form::new().part("file", reqwest::multipart::Part::bytes(bytes).file_name(name));
    let uploaded = send(client.post(format!("{base}/v1/knowledge/files")).bearer_auth(key).multipart(form)).await;
    let file = match uploaded {
        Ok((status, body)) if status < 300 => body,
        other => return show("add-file", other, json_out),
    };
    let body = json!({ "kind": "file", "attachment_id": file["id"] });
    show(
        "add-file",
        send(client.post(format!("{base}/v1/knowledge/sources")).bearer_auth(key).json(&body)).await,
        json_out,
    )
}

async fn send(request: reqwest::RequestBuilder) -> Result<(u16, Value), String> {
    let response = request.send().await.map_err(|e| format!("cannot reach the assistant: {e}"))?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|e| format!("cannot read the answer: {e}"))?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

fn segment(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>().replace('+', "%20")
}

/// The answer as a person reads it (or as JSON).
fn show(command: &str, answer: Result<(u16, Value), String>, json_out: bool) -> Outcome {
    let (status, body) = match answer {
        Ok(answer) => answer,
        Err(why) => return Outcome { status: 1, out: String::new(), err: format!("{why}\n") },
    };
    if status >= 300 {
        let why = body["error"].as_str().unwrap_or("the assistant refused");
        return Outcome { status: 1, out: String::new(), err: format!("{why} (HTTP {status})\n") };
    }
    if json_out {
        return Outcome { status: 0, out: format!("{body:#}\n"), err: String::new() };
    }
    let mut out = String::new();
    let source_line = |out: &mut String, s: &Value| {
        let _ = writeln!(
            out,
            "{}  {:<8} {:<8} {:>5} pages {:>6} chunks  {}{}",
            s["id"].as_str().unwrap_or(""),
            s["kind"].as_str().unwrap_or(""),
            s["status"].as_str().unwrap_or(""),
            s["pages"].as_i64().unwrap_or(0),
            s["chunks"].as_i64().unwrap_or(0),
            s["name"].as_str().unwrap_or(""),
            s["error"].as_str().map(|e| format!("  ({e})")).unwrap_or_default(),
        );
        for e in s["errors"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "    not read: {}  {}",
                e["url"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            );
        }
    };
    match command {
        "list" => {
            for s in body["sources"].as_array().into_iter().flatten() {
                source_line(&mut out, s);
            }
        }
        "remove" => out.push_str("removed\n"),
        "pages" => {
            for p in body["pages"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "{:<5} {:>4} chunks  {}{}",
                    p["status"].as_str().unwrap_or(""),
                    p["chunks"].as_i64().unwrap_or(0),
                    p["url"].as_str().unwrap_or(""),
                    p["error"]["message"].as_str().map(|m| format!("  ({m})")).unwrap_or_default()
                );
            }
        }
        "search" => {
            for (n, r) in body["results"].as_array().into_iter().flatten().enumerate() {
                let _ = writeln!(
                    out,
                    "{}. {} · {}  {}\n   {}",
                    n + 1,
                    r["title"].as_str().unwrap_or(""),
                    r["section"].as_str().unwrap_or(""),
                    r["url"].as_str().unwrap_or(""),
                    r["snippet"].as_str().unwrap_or("")
                );
            }
        }
        "gaps" => {
            for g in body["gaps"].as_array().into_iter().flatten() {
                let _ =
                    writeln!(out, "{:>4}×  {}", g["count"].as_u64().unwrap_or(0), g["question"].as_str().unwrap_or(""));
            }
        }
        _ => source_line(&mut out, &body),
    }
    Outcome { status: 0, out, err: String::new() }
}
