//! A configured chat-completions endpoint and one step against it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_openai::config::{AzureConfig, Config, OpenAIConfig};
use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use futures::StreamExt;
use serde_json::Value;

use super::errors::{self, ModelError};
use super::history;
use super::stream::Accumulator;
use super::transport;
use super::types::{ChatMessage, StepOutput, ToolCall};
use super::wire::{self, ToolNames};
use crate::host::ToolSpec;

/// The chunks of one streamed step, as loose JSON.
type Chunks = std::pin::Pin<Box<dyn futures::Stream<Item = Result<Value, OpenAIError>> + Send>>;

/// A configured model endpoint.
#[derive(Clone)]
pub struct Model {
    /// async-openai, sending through our own client ([`transport`]).
    client: async_openai::Client<Arc<dyn Config>>,
    /// The configured base URL's query (a proxy's own parameters), sent
    /// with every request.
    query: Vec<(String, String)>,
    model: String,
    /// True when the built-in offline demo model answers.
    pub is_demo: bool,
    /// Cleared when the server refused `stream_options` once.
    usage_option: Arc<AtomicBool>,
    /// Characters per token of this provider ×100, learned from its usage.
    chars_per_token: Arc<AtomicU64>,
    pub policy: ModelPolicy,
    /// The model is given the visitor's images as image parts (else a line
    /// names each): set for a workspace's model or by `CA_MODEL_VISION`,
    /// else [`known_vision`] of its name.
    pub accepts_images: bool,
}

/// True for the names of the models known to take images: OpenAI's
/// GPT-4o, GPT-4.1, GPT-5 and o-series, Anthropic's Claude 3 and later,
/// Google's Gemini and Gemma 3, Mistral's Pixtral and Small 3.1+, Llama 4
/// and 3.2 Vision, Qwen-VL, LLaVA, and any name that says `vision` or `-vl`.
pub fn known_vision(model: &str) -> bool {
    let name = model.to_ascii_lowercase();
    // A provider's prefix (`openai/gpt-4o`, `models/gemini-2.0-flash`) does not count.
    let name = name.rsplit('/').next().unwrap_or_default();
    const FAMILIES: [&str; 17] = [
        "gpt-4o",
        "gpt-4.1",
        "gpt-4-turbo",
        "gpt-5",
        "chatgpt-4o",
        "o1",
        "o3",
        "o4-",
        "claude-3",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-haiku-4",
        "gemini",
        "gemma-3",
        "pixtral",
        "llama-4",
        "llava",
    ];
    FAMILIES.iter().any(|f| name.starts_with(f))
        || ["vision", "-vl", "qwen-vl", "mistral-small-3.1", "mistral-small-3.2", "mistral-medium"]
            .iter()
            .any(|w| name.contains(w))
}

/// How hard a step tries and how much history it sends.
#[derive(Clone, Debug)]
pub struct ModelPolicy {
    /// Retries of a 429, a 5xx or a failed connection before the first token.
    pub retries: u32,
    /// The first wait; it doubles (a `Retry-After` is honoured up to `max_wait`).
    pub backoff: Duration,
    pub max_wait: Duration,
    /// Tokens of earlier turns sent with a step, at most.
    pub history_tokens: u64,
}

impl Default for ModelPolicy {
    fn default() -> Self {
        Self {
            retries: 3,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(20),
            history_tokens: 16_000,
        }
    }
}

impl Model {
    /// `base_url` as configured (`…/v1`, a query such as Azure's
    /// `api-version` kept); errors name nothing secret.
    pub fn new(base_url: &str, api_key: &str, model: &str, is_demo: bool) -> anyhow::Result<Self> {
        let http = crate::host::client_builder().connect_timeout(Duration::from_secs(10)).build()?;
        Self::with_client(base_url, api_key, model, is_demo, http)
    }

    /// A workspace's own model: unless private hosts are allowed
    /// (`CA_ALLOW_PRIVATE_MODEL_HOSTS`), it connects only to public
    /// addresses, like a tool host.
    pub fn for_workspace(base_url: &str, api_key: &str, model: &str, allow_private: bool) -> anyhow::Result<Self> {
        Self::with_client(base_url, api_key, model, false, workspace_http(base_url, allow_private)?)
    }

    fn with_client(
        base_url: &str,
        api_key: &str,
        model: &str,
        is_demo: bool,
        http: reqwest::Client,
    ) -> anyhow::Result<Self> {
        let base = url::Url::parse(base_url)?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            anyhow::bail!("the model's base URL must be an absolute http(s) URL");
        }
        // async-openai writes the key into a header and panics on one it
        // cannot carry: refuse it here, with an error that does not show it.
        if reqwest::header::HeaderValue::from_str(api_key).is_err() {
            anyhow::bail!("the model's API key has characters an HTTP header cannot carry");
        }
        let (config, query) = endpoint(&base, api_key);
        let client = transport::install(async_openai::Client::build(http.clone(), config), http);
        Ok(Self {
            client,
            query,
            model: model.to_owned(),
            is_demo,
            usage_option: Arc::new(AtomicBool::new(true)),
            chars_per_token: Arc::new(AtomicU64::new(400)),
            policy: ModelPolicy::default(),
            accepts_images: !is_demo && known_vision(model),
        })
    }

    /// One small request, no retry: does this endpoint answer with this
    /// key and model?
    pub async fn check(&self) -> Result<(), ModelError> {
        let mut once = self.clone();
        once.policy.retries = 0;
        let ask = [ChatMessage::User("Reply with the single word OK.".into())];
        once.step(&ask, &[], &mut |_| {}).await.map(|_| ())
    }

    /// The model's name (for logs).
    pub fn name(&self) -> &str {
        &self.model
    }

    /// Another model at the same endpoint, with the same key (what it
    /// learned of the provider kept).
    pub fn named(&self, model: &str) -> Self {
        Self { model: model.to_owned(), ..self.clone() }
    }

    /// Streams one step: text deltas go to `on_text` as they arrive; tool
    /// calls are assembled from their fragments, named as the host names
    /// them, each with an id unique in the conversation. Before the first
    /// token a 429, a 5xx or a lost connection is retried (honouring
    /// `Retry-After`); a prompt too long for the model is cut to fit once
    /// (the oldest turns first) and tried again. Its duration and time to
    /// the first delta are recorded (metrics).
    pub async fn step(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StepOutput, ModelError> {
        let started = Instant::now();
        let mut first_delta = None;
        let out = self.step_timed(messages, tools, on_text, started, &mut first_delta).await;
        crate::metrics::model_step(started.elapsed(), first_delta, out.is_ok());
        out
    }

    async fn step_timed(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        on_text: &mut (dyn FnMut(&str) + Send),
        started: Instant,
        first_delta: &mut Option<Duration>,
    ) -> Result<StepOutput, ModelError> {
        let names = ToolNames::new(tools);
        let ratio = self.chars_per_token.load(Ordering::Relaxed);
        let mut sent = history::fit(messages, self.policy.history_tokens, ratio);
        let mut trimmed_once = false;
        let mut attempt = 0;
        loop {
            let usage = self.usage_option.load(Ordering::Relaxed);
            let body = wire::body(&self.model, &sent, tools, &names, usage);
            let error = match self.open(&body).await {
                Ok(chunks) => return self.read(chunks, &sent, &names, on_text, started, first_delta).await,
                Err(error) => error,
            };
            match &error {
                ModelError::Rejected { message, .. } if usage && errors::mentions_stream_options(message) => {
                    tracing::info!("the model refused stream_options; asking without it from now on");
                    self.usage_option.store(false, Ordering::Relaxed);
                }
                ModelError::ContextLength if !trimmed_once => {
                    trimmed_once = true;
                    let before = sent.len();
                    sent = history::halve(&sent);
                    if sent.len() == before {
                        return Err(error);
                    }
                    tracing::info!(dropped = before - sent.len(), "prompt too long for the model; history cut");
                }
                _ if error.is_retryable() && attempt < self.policy.retries => {
                    let wait = error.retry_after().unwrap_or(self.policy.backoff * 2u32.pow(attempt));
                    if wait > self.policy.max_wait {
                        return Err(error);
                    }
                    attempt += 1;
                    tracing::info!(%error, attempt, wait_ms = wait.as_millis() as u64, "model call retried");
                    tokio::time::sleep(wait).await;
                }
                _ => return Err(error),
            }
        }
    }

    /// Sends the request through async-openai; an error status comes back
    /// classified ([`transport`]).
    async fn open(&self, body: &Value) -> Result<Chunks, ModelError> {
        let mut chat = self.client.chat();
        if !self.query.is_empty() {
            chat = chat.query(&self.query).map_err(transport::model_error)?;
        }
        chat.create_stream_byot(body).await.map_err(transport::model_error)
    }

    /// Reads the answer: its chunks as loose JSON, merged as they come
    /// (`[DONE]`, or the end of the body without it, ends the step).
    async fn read(
        &self,
        mut chunks: Chunks,
        sent: &[ChatMessage],
        names: &ToolNames,
        on_text: &mut (dyn FnMut(&str) + Send),
        started: Instant,
        first_delta: &mut Option<Duration>,
    ) -> Result<StepOutput, ModelError> {
        let mut acc = Accumulator::default();
        while let Some(chunk) = chunks.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                // An event with an empty `data:` says nothing (a keep-alive).
                Err(OpenAIError::JSONDeserialize(_, data)) if data.trim().is_empty() => continue,
                Err(error) => return Err(transport::model_error(error)),
            };
            let text = acc.merge_chunk(&chunk)?;
            if acc.started {
                first_delta.get_or_insert_with(|| started.elapsed());
            }
            if !text.is_empty() {
                on_text(&text);
            }
        }
        Ok(self.finish(acc, sent, names))
    }

    /// The step's calls named as the host names them, with ids unique in
    /// the conversation, and its tokens (learning the provider's
    /// characters per token from its usage).
    fn finish(&self, acc: Accumulator, sent: &[ChatMessage], names: &ToolNames) -> StepOutput {
        let mut taken: std::collections::HashSet<String> = sent
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Assistant { tool_calls, .. } => Some(tool_calls.iter().map(|c| c.id.clone())),
                _ => None,
            })
            .flatten()
            .collect();
        let mut calls: Vec<ToolCall> = acc.calls.into_iter().filter(|c| !c.name.is_empty()).collect();
        for call in &mut calls {
            call.name = names.host(&call.name).to_owned();
            if call.id.is_empty() || taken.contains(&call.id) || call.id.len() > 128 {
                call.id = format!("call_{}", hex::encode(crate::ids::random_bytes::<12>()));
            }
            taken.insert(call.id.clone());
        }
        let mut out = StepOutput { text: acc.text, tool_calls: calls, finish: acc.finish, ..StepOutput::default() };
        let prompt_chars = history::chars(sent);
        (out.input_tokens, out.output_tokens) = match acc.usage {
            Some((prompt, completion)) => {
                if let Some(ratio) = (prompt_chars as u64 * 100).checked_div(prompt) {
                    self.chars_per_token.store(ratio.clamp(100, 1000), Ordering::Relaxed);
                }
                (prompt, completion)
            }
            None => estimate_tokens(sent, &out),
        };
        out.tokens = out.input_tokens + out.output_tokens;
        out
    }
}

/// async-openai's configuration for `base` and the query to send with
/// each request. An Azure deployment's URL
/// (`https://{resource}.openai.azure.com/openai/deployments/{name}?api-version=…`)
/// is [`AzureConfig`] (its `api-key` header and `api-version`); anything
/// else, Azure's own `/openai/v1` included, is [`OpenAIConfig`] (a bearer
/// key) at `base`.
fn endpoint(base: &url::Url, api_key: &str) -> Endpoint {
    let mut query: Vec<(String, String)> = base.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    if let Some(deployment) = azure_deployment(base) {
        let version = query.iter().position(|(k, _)| k == "api-version").map(|i| query.remove(i).1);
        let config = AzureConfig::new()
            .with_api_base(base.origin().ascii_serialization())
            .with_deployment_id(deployment)
            .with_api_version(version.unwrap_or_else(|| AZURE_API_VERSION.to_owned()))
            .with_api_key(api_key);
        return (Arc::new(config), query);
    }
    let mut at = base.clone();
    at.set_query(None);
    at.set_fragment(None);
    // Not the process's `OPENAI_ORG_ID`/`OPENAI_PROJECT_ID`, which
    // `OpenAIConfig::new` reads: a workspace's model must not get them.
    let config = OpenAIConfig::new()
        .with_api_base(at.as_str().trim_end_matches('/'))
        .with_api_key(api_key)
        .with_org_id("")
        .with_project_id("");
    (Arc::new(config), query)
}

/// async-openai's configuration of an endpoint, and the query its
/// requests carry (a proxy's own parameters).
pub type Endpoint = (Arc<dyn Config>, Vec<(String, String)>);

/// The HTTP client for a workspace's own model endpoint at `base_url`:
/// no redirects, no proxy and, unless private hosts are allowed
/// (`CA_ALLOW_PRIVATE_MODEL_HOSTS`), public addresses only, like a tool host.
pub fn workspace_http(base_url: &str, allow_private: bool) -> anyhow::Result<reqwest::Client> {
    let builder = crate::host::client_builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    if allow_private {
        return Ok(builder.build()?);
    }
    if crate::host::private_literal(&url::Url::parse(base_url)?).is_some() {
        anyhow::bail!("the model's address is private (set CA_ALLOW_PRIVATE_MODEL_HOSTS=1 to allow)");
    }
    Ok(builder.dns_resolver(Arc::new(crate::host::PublicOnlyResolver)).build()?)
}

/// async-openai's configuration and query for the embeddings `model` at a
/// chat model's `base_url` (the same provider and key). An Azure
/// deployment's URL names the chat model's deployment: the embeddings go
/// to the deployment named `model` beside it.
pub fn embeddings_endpoint(base_url: &str, api_key: &str, model: &str) -> anyhow::Result<Endpoint> {
    let mut base = url::Url::parse(base_url)?;
    if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
        anyhow::bail!("the embeddings base URL must be an absolute http(s) URL");
    }
    if reqwest::header::HeaderValue::from_str(api_key).is_err() {
        anyhow::bail!("the embeddings API key has characters an HTTP header cannot carry");
    }
    if azure_deployment(&base).is_some() {
        base.path_segments_mut().map_err(|()| anyhow::anyhow!("no path"))?.clear().extend([
            "openai",
            "deployments",
            model,
        ]);
    }
    Ok(endpoint(&base, api_key))
}

/// The deployment an Azure deployment's URL names
/// (`https://{resource}.openai.azure.com/openai/deployments/{name}`).
fn azure_deployment(base: &url::Url) -> Option<&str> {
    let azure = base.host_str().is_some_and(|h| {
        [".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"]
            .iter()
            .any(|suffix| h.ends_with(suffix))
    });
    let segments: Vec<&str> = base.path_segments().into_iter().flatten().filter(|s| !s.is_empty()).collect();
    match segments[..] {
        ["openai", "deployments", deployment] if azure => Some(deployment),
        _ => None,
    }
}

/// Azure's `api-version` when a deployment's URL names none (the latest
/// generally available one).
const AZURE_API_VERSION: &str = "2024-10-21";

/// About four characters a token, (input, output): used when a provider
/// reports no usage.
pub fn estimate_tokens(messages: &[ChatMessage], out: &StepOutput) -> (u64, u64) {
    let output = out.text.len() + out.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
    ((history::chars(messages) as u64).div_ceil(4), (output as u64).div_ceil(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_vision_models_are_given_images_and_others_are_not() {
        for name in [
            "gpt-4o-mini",
            "openai/gpt-4.1",
            "gpt-5",
            "claude-3-5-sonnet-latest",
            "claude-sonnet-4-20250514",
            "models/gemini-2.0-flash",
            "pixtral-12b-2409",
            "llama-3.2-11b-vision-instruct",
            "Qwen2.5-VL-7B-Instruct",
            "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        ] {
            assert!(known_vision(name), "{name}");
        }
        for name in ["gpt-3.5-turbo", "llama3.1:8b", "mistral-7b-instruct", "deepseek-chat", "demo"] {
            assert!(!known_vision(name), "{name}");
        }
        let demo = Model::new("http://127.0.0.1:1/demo-model/v1", "demo", "demo", true).unwrap();
        assert!(!demo.accepts_images);
        assert!(Model::new("https://api.example/v1", "sk", "gpt-4o", false).unwrap().accepts_images);
    }

    fn at(base: &str) -> Endpoint {
        endpoint(&url::Url::parse(base).unwrap(), "sk-key")
    }

    #[test]
    fn an_azure_deployment_gets_its_api_key_header_and_api_version() {
        let (config, query) = at("https://res.openai.azure.com/openai/deployments/gpt-4o/?api-version=2025-01-01");
        assert_eq!(
            config.url("/chat/completions"),
            "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
        );
        assert_eq!(config.query(), [("api-version", "2025-01-01")]);
        assert!(query.is_empty(), "{query:?}");
        let headers = config.headers();
        assert_eq!(headers["api-key"], "sk-key");
        assert!(headers.get("authorization").is_none());

        let (config, _) = at("https://res.openai.azure.com/openai/deployments/gpt-4o");
        assert_eq!(config.query(), [("api-version", AZURE_API_VERSION)], "a version when none is named");
    }

    #[test]
    fn embeddings_go_to_the_same_provider_and_on_azure_to_their_own_deployment() {
        let (config, _) = embeddings_endpoint(
            "https://res.openai.azure.com/openai/deployments/gpt-4o/?api-version=2025-01-01",
            "sk-key",
            "text-embedding-3-small",
        )
        .unwrap();
        assert_eq!(
            config.url("/embeddings"),
            "https://res.openai.azure.com/openai/deployments/text-embedding-3-small/embeddings"
        );
        assert_eq!(config.query(), [("api-version", "2025-01-01")]);
        assert_eq!(config.headers()["api-key"], "sk-key");
        let (config, query) = embeddings_endpoint("https://gateway.example/v1?team=shop", "sk-key", "e").unwrap();
        assert_eq!(config.url("/embeddings"), "https://gateway.example/v1/embeddings");
        assert_eq!(query, [("team".to_owned(), "shop".to_owned())]);
        assert!(embeddings_endpoint("ftp://x/v1", "k", "e").is_err());
        let refused = embeddings_endpoint("https://x/v1", "sk-secret\nX: 1", "e").err().unwrap().to_string();
        assert!(!refused.contains("sk-secret"), "{refused}");
    }

    #[test]
    fn any_other_endpoint_gets_a_bearer_key_and_keeps_its_query() {
        for (base, url) in [
            ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
            ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/v1/chat/completions"),
            ("https://res.openai.azure.com/openai/v1", "https://res.openai.azure.com/openai/v1/chat/completions"),
        ] {
            let (config, query) = at(base);
            assert_eq!(config.url("/chat/completions"), url);
            assert!(query.is_empty() && config.query().is_empty(), "{base}");
            let headers = config.headers();
            assert_eq!(headers["authorization"], "Bearer sk-key", "{base}");
            assert_eq!(headers.len(), 1, "no organization or project of the process: {headers:?}");
        }
        let (config, query) = at("https://gateway.example/v1?team=shop&region=eu");
        assert_eq!(config.url("/chat/completions"), "https://gateway.example/v1/chat/completions");
        assert_eq!(query, [("team".to_owned(), "shop".to_owned()), ("region".to_owned(), "eu".to_owned())]);
    }

    #[test]
    fn a_key_no_header_can_carry_is_refused_without_showing_it() {
        let error = Model::new("https://api.example/v1", "sk-secret\r\nX-Evil: 1", "m", false).err().unwrap();
        let message = error.to_string();
        assert!(message.contains("header") && !message.contains("sk-secret"), "{message}");
        assert!(Model::new("ftp://api.example/v1", "sk", "m", false).is_err());
        assert!(Model::new("https://api.example/v1", "sk-fine", "m", false).is_ok());
    }
}
