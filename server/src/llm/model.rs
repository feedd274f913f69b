//! A configured chat-completions endpoint and one step against it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::errors::{self, ModelError};
use super::history;
use super::stream::{Accumulator, SseLines};
use super::types::{ChatMessage, StepOutput, ToolCall};
use super::wire::{self, ToolNames};
use crate::host::ToolSpec;
use crate::secret::Secret;

/// A configured model endpoint.
#[derive(Clone)]
pub struct Model {
    http: reqwest::Client,
    endpoint: url::Url,
    api_key: Secret,
    model: String,
    /// Azure authenticates with an `api-key` header.
    azure: bool,
    /// True when the built-in offline demo model answers.
    pub is_demo: bool,
    /// Cleared when the server refused `stream_options` once.
    usage_option: Arc<AtomicBool>,
    /// Characters per token of this provider ×100, learned from its usage.
    chars_per_token: Arc<AtomicU64>,
    pub policy: ModelPolicy,
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
        let http = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).build()?;
        Self::with_client(base_url, api_key, model, is_demo, http)
    }

    /// A workspace's own model: unless private hosts are allowed
    /// (`CA_ALLOW_PRIVATE_MODEL_HOSTS`), it connects only to public
    /// addresses, like a tool host.
    pub fn for_workspace(base_url: &str, api_key: &str, model: &str, allow_private: bool) -> anyhow::Result<Self> {
        let builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if allow_private {
            return Self::with_client(base_url, api_key, model, false, builder.build()?);
        }
        if crate::host::private_literal(&url::Url::parse(base_url)?).is_some() {
            anyhow::bail!("the model's address is private (set CA_ALLOW_PRIVATE_MODEL_HOSTS=1 to allow)");
        }
        let http = builder.dns_resolver(Arc::new(crate::host::PublicOnlyResolver)).build()?;
        Self::with_client(base_url, api_key, model, false, http)
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
        let mut endpoint = base.clone();
        endpoint.set_path(&format!("{}/chat/completions", base.path().trim_end_matches('/')));
        let azure = base.host_str().is_some_and(|h| {
            [".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"]
                .iter()
                .any(|suffix| h.ends_with(suffix))
        });
        Ok(Self {
            http,
            endpoint,
            api_key: Secret::new(api_key),
            model: model.to_owned(),
            azure,
            is_demo,
            usage_option: Arc::new(AtomicBool::new(true)),
            chars_per_token: Arc::new(AtomicU64::new(400)),
            policy: ModelPolicy::default(),
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
                Ok(response) => return self.read(response, &sent, &names, on_text, started, first_delta).await,
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

    /// Sends the request; an error status is read and classified.
    async fn open(&self, body: &serde_json::Value) -> Result<reqwest::Response, ModelError> {
        let mut request = self.http.post(self.endpoint.clone()).json(body);
        request = if self.azure {
            request.header("api-key", self.api_key.expose())
        } else {
            request.bearer_auth(self.api_key.expose())
        };
        let response = request.send().await.map_err(|e| ModelError::Unreachable(crate::host::error_chain(&e)))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let retry_after = response.headers().get(reqwest::header::RETRY_AFTER).and_then(errors::parse_retry_after);
        let body = errors::read_capped(response).await;
        Err(ModelError::from_status(status, retry_after, &body))
    }

    /// Reads the answer: a stream of chunks, or (a server that ignores
    /// `stream`) one JSON completion.
    async fn read(
        &self,
        response: reqwest::Response,
        sent: &[ChatMessage],
        names: &ToolNames,
        on_text: &mut (dyn FnMut(&str) + Send),
        started: Instant,
        first_delta: &mut Option<Duration>,
    ) -> Result<StepOutput, ModelError> {
        let json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let mut acc = Accumulator::default();
        if json {
            let body = errors::read_capped(response).await;
            let completion: serde_json::Value =
                serde_json::from_str(&body).map_err(|_| ModelError::Broken("the model's answer is not JSON".into()))?;
            let text = acc.merge_chunk(&completion)?;
            if !text.is_empty() {
                first_delta.get_or_insert_with(|| started.elapsed());
                on_text(&text);
            }
        } else {
            let mut lines = SseLines::default();
            let mut bytes = response.bytes_stream();
            let mut received = 0usize;
            loop {
                let (payloads, over) = match bytes.next().await {
                    Some(Ok(chunk)) => {
                        received += chunk.len();
                        if received > errors::MAX_STREAM_BYTES {
                            return Err(ModelError::Broken("the model's answer is too long".into()));
                        }
                        (lines.push(&chunk), false)
                    }
                    Some(Err(e)) => {
                        return Err(ModelError::Broken(format!("the stream broke: {}", crate::host::error_chain(&e))));
                    }
                    // No `[DONE]`: the end of the body ends the step.
                    None => (lines.finish(), true),
                };
                for payload in payloads {
                    let text = acc.push(&payload)?;
                    if acc.started {
                        first_delta.get_or_insert_with(|| started.elapsed());
                    }
                    if !text.is_empty() {
                        on_text(&text);
                    }
                }
                if acc.done || over {
                    break;
                }
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

/// About four characters a token, (input, output): used when a provider
/// reports no usage.
pub fn estimate_tokens(messages: &[ChatMessage], out: &StepOutput) -> (u64, u64) {
    let output = out.text.len() + out.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
    ((history::chars(messages) as u64).div_ceil(4), (output as u64).div_ceil(4))
}
