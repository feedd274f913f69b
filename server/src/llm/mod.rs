//! The model: any OpenAI-compatible chat-completions endpoint, reached
//! through async-openai over HTTP. The built-in demo model ([`demo`]) is
//! such an endpoint served by this same binary, so there is one code path.

pub mod demo;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessageArgs,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessageArgs, ChatCompletionRequestToolMessageArgs,
    ChatCompletionRequestUserMessageArgs, ChatCompletionStreamOptions, ChatCompletionTool, ChatCompletionTools,
    CreateChatCompletionRequestArgs, FunctionCall, FunctionObjectArgs,
};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::host::ToolSpec;

/// One message of the transcript the model sees.
#[derive(Clone, Debug)]
pub enum ChatMessage {
    System(String),
    User(String),
    Assistant { text: String, tool_calls: Vec<ToolCall> },
    Tool { call_id: String, content: String },
}

/// A tool call as the model made it: `arguments` is the model's raw JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What one model step produced.
#[derive(Debug, Default)]
pub struct StepOutput {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used, from the provider's usage or estimated when it sends none.
    pub tokens: u64,
    /// Of `tokens`, those sent (the prompt) and those received (the answer).
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The model failed; `Display` is for logs, the user sees a generic line.
#[derive(Debug, thiserror::Error)]
#[error("the model call failed: {0}")]
pub struct ModelError(pub String);

/// A configured model endpoint.
#[derive(Clone)]
pub struct Model {
    client: Client<OpenAIConfig>,
    model: String,
    /// True when the built-in offline demo model answers.
    pub is_demo: bool,
}

impl Model {
    pub fn new(base_url: &str, api_key: &str, model: &str, is_demo: bool) -> Self {
        let config = OpenAIConfig::new().with_api_base(base_url).with_api_key(api_key);
        Self { client: Client::with_config(config), model: model.to_owned(), is_demo }
    }

    /// Streams one step: text deltas go to `on_text` as they arrive; tool
    /// calls are assembled from their fragments. Its duration and time to
    /// the first delta are recorded (metrics).
    pub async fn step(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        on_text: impl FnMut(&str),
    ) -> Result<StepOutput, ModelError> {
        let started = std::time::Instant::now();
        let mut first_delta = None;
        let out = self.stream_step(messages, tools, on_text, || {
            first_delta.get_or_insert_with(|| started.elapsed());
        });
        let out = out.await;
        crate::metrics::model_step(started.elapsed(), first_delta, out.is_ok());
        out
    }

    async fn stream_step(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        mut on_text: impl FnMut(&str),
        mut on_delta: impl FnMut(),
    ) -> Result<StepOutput, ModelError> {
        let request = self.request(messages, tools)?;
        let mut stream = self.client.chat().create_stream(request).await.map_err(|e| ModelError(e.to_string()))?;
        let mut out = StepOutput::default();
        let mut partial: Vec<ToolCall> = Vec::new();
        let mut usage: Option<(u64, u64)> = None;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| ModelError(e.to_string()))?;
            if let Some(reported) = &chunk.usage {
                usage = Some((u64::from(reported.prompt_tokens), u64::from(reported.completion_tokens)));
            }
            for choice in chunk.choices {
                if choice.delta.content.as_deref().is_some_and(|t| !t.is_empty()) || choice.delta.tool_calls.is_some() {
                    on_delta();
                }
                if let Some(text) = choice.delta.content
                    && !text.is_empty()
                {
                    on_text(&text);
                    out.text.push_str(&text);
                }
                for fragment in choice.delta.tool_calls.unwrap_or_default() {
                    let index = fragment.index as usize;
                    if index > 64 {
                        return Err(ModelError("the model sent an absurd tool-call index".into()));
                    }
                    while partial.len() <= index {
                        partial.push(ToolCall { id: String::new(), name: String::new(), arguments: String::new() });
                    }
                    let call = &mut partial[index];
                    if let Some(id) = fragment.id {
                        call.id = id;
                    }
                    if let Some(function) = fragment.function {
                        if let Some(name) = function.name {
                            call.name.push_str(&name);
                        }
                        if let Some(arguments) = function.arguments {
                            call.arguments.push_str(&arguments);
                        }
                    }
                }
            }
        }
        out.tool_calls = partial.into_iter().filter(|c| !c.name.is_empty()).collect();
        for (i, call) in out.tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{i}");
            }
        }
        (out.input_tokens, out.output_tokens) = usage.unwrap_or_else(|| estimate_tokens(messages, &out));
        out.tokens = out.input_tokens + out.output_tokens;
        Ok(out)
    }

    fn request(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<async_openai::types::chat::CreateChatCompletionRequest, ModelError> {
        let err = |e: async_openai::error::OpenAIError| ModelError(e.to_string());
        let mut wire: Vec<ChatCompletionRequestMessage> = Vec::with_capacity(messages.len());
        for m in messages {
            wire.push(match m {
                ChatMessage::System(text) => ChatCompletionRequestSystemMessageArgs::default()
                    .content(text.as_str())
                    .build()
                    .map_err(err)?
                    .into(),
                ChatMessage::User(text) => {
                    ChatCompletionRequestUserMessageArgs::default().content(text.as_str()).build().map_err(err)?.into()
                }
                ChatMessage::Assistant { text, tool_calls } => {
                    let mut args = ChatCompletionRequestAssistantMessageArgs::default();
                    if !text.is_empty() {
                        args.content(text.as_str());
                    }
                    if !tool_calls.is_empty() {
                        args.tool_calls(
                            tool_calls
                                .iter()
                                .map(|c| {
                                    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                                        id: c.id.clone(),
                                        function: FunctionCall { name: c.name.clone(), arguments: c.arguments.clone() },
                                    })
                                })
                                .collect::<Vec<_>>(),
                        );
                    }
                    args.build().map_err(err)?.into()
                }
                ChatMessage::Tool { call_id, content } => ChatCompletionRequestToolMessageArgs::default()
                    .tool_call_id(call_id.as_str())
                    .content(content.as_str())
                    .build()
                    .map_err(err)?
                    .into(),
            });
        }
        let mut args = CreateChatCompletionRequestArgs::default();
        args.model(self.model.as_str())
            .messages(wire)
            .stream_options(ChatCompletionStreamOptions { include_usage: Some(true), include_obfuscation: None });
        if !tools.is_empty() {
            let mut defs = Vec::with_capacity(tools.len());
            for tool in tools {
                let function = FunctionObjectArgs::default()
                    .name(tool.name.as_str())
                    .description(tool.description.as_str())
                    .parameters(tool.input_schema.clone())
                    .build()
                    .map_err(err)?;
                defs.push(ChatCompletionTools::Function(ChatCompletionTool { function }));
            }
            args.tools(defs);
        }
        args.build().map_err(err)
    }
}

/// About four characters a token, (input, output): used when a provider
/// reports no usage.
pub fn estimate_tokens(messages: &[ChatMessage], out: &StepOutput) -> (u64, u64) {
    let input: usize = messages
        .iter()
        .map(|m| match m {
            ChatMessage::System(t) | ChatMessage::User(t) => t.len(),
            ChatMessage::Assistant { text, tool_calls } => {
                text.len() + tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>()
            }
            ChatMessage::Tool { content, .. } => content.len(),
        })
        .sum::<usize>();
    let output = out.text.len() + out.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
    ((input as u64).div_ceil(4), (output as u64).div_ceil(4))
}
