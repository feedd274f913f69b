//! Embeddings for hybrid search (issue #45): any OpenAI-compatible
//! `/v1/embeddings` (`CA_EMBEDDINGS_MODEL` at `CA_EMBEDDINGS_BASE_URL`,
//! by default the chat model's endpoint), through async-openai. Chunks get
//! a vector as they are kept; a search embeds its query and its nearest
//! chunks by cosine are fused with the full-text ranking (reciprocal rank
//! fusion). Without a model, or when the endpoint fails, search stays full
//! text. Vectors are kept in the database (base64 of little-endian f32,
//! with the model that made them) and held in each replica's index.

use std::sync::Arc;
use std::time::Duration;

use async_openai::config::Config;
use async_openai::traits::RequestOptionsBuilder as _;
use async_openai::types::embeddings::{CreateEmbeddingRequest, EmbeddingInput};
use base64::Engine as _;

use crate::config::EmbeddingsConfig;

/// Texts sent in one request, at most.
pub const BATCH: usize = 64;
/// Longest one request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// An embeddings endpoint: the server's, or a workspace's own.
pub struct Embedder {
    client: async_openai::Client<Arc<dyn Config>>,
    /// The base URL's query (a proxy's own parameters), sent with each request.
    query: Vec<(String, String)>,
    model: String,
    dimensions: Option<u32>,
    /// What its vectors are kept under: the model, and the dimensions asked.
    tag: String,
}

impl Embedder {
    /// The server's (`CA_EMBEDDINGS_*`).
    pub fn new(config: &EmbeddingsConfig) -> anyhow::Result<Self> {
        let http = crate::host::client_builder().connect_timeout(Duration::from_secs(10)).build()?;
        Self::at(&config.base_url, config.api_key.expose(), &config.model, config.dimensions, http)
    }

    /// A workspace's own, at its chat model's endpoint with its key; a
    /// private address only where `CA_ALLOW_PRIVATE_MODEL_HOSTS` allows.
    pub fn for_workspace(base_url: &str, api_key: &str, model: &str, allow_private: bool) -> anyhow::Result<Self> {
        Self::at(base_url, api_key, model, None, crate::llm::workspace_http(base_url, allow_private)?)
    }

    fn at(
        base_url: &str,
        api_key: &str,
        model: &str,
        dimensions: Option<u32>,
        http: reqwest::Client,
    ) -> anyhow::Result<Self> {
        let (config, query) = crate::llm::embeddings_endpoint(base_url, api_key, model)?;
        Ok(Self {
            client: async_openai::Client::with_config(config).with_http_client(http),
            query,
            model: model.to_owned(),
            dimensions,
            tag: match dimensions {
                Some(d) => format!("{model}:{d}"),
                None => model.to_owned(),
            },
        })
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// What its vectors are kept under: vectors of another tag (another
    /// model, or other dimensions) are not compared with its own.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Embeds one word: `Err` says why that failed, in words safe to show
    /// the workspace's owner (a status, never the provider's body).
    pub async fn check(&self) -> Result<(), String> {
        self.embed(vec!["check".to_owned()]).await.map(drop).map_err(|error| {
            match error.downcast_ref::<async_openai::error::OpenAIError>() {
                Some(async_openai::error::OpenAIError::ApiError(e)) => format!("it answered {}", e.status_code),
                Some(async_openai::error::OpenAIError::Reqwest(e)) => {
                    format!("it could not be reached ({})", crate::host::error_chain(e))
                }
                Some(_) => "its answer is not an embeddings answer".to_owned(),
                None => format!("{error:#}"),
            }
        })
    }

    /// The unit vectors of `texts`, in order.
    pub async fn embed(&self, texts: Vec<String>) -> anyhow::Result<Vec<Vec<f32>>> {
        let count = texts.len();
        let request = CreateEmbeddingRequest {
            model: self.model.clone(),
            input: EmbeddingInput::StringArray(texts),
            encoding_format: None,
            user: None,
            dimensions: self.dimensions,
        };
        let mut embeddings = self.client.embeddings();
        if !self.query.is_empty() {
            embeddings = embeddings.query(&self.query)?;
        }
        let mut response = tokio::time::timeout(TIMEOUT, embeddings.create(request))
            .await
            .map_err(|_| anyhow::anyhow!("the embeddings endpoint did not answer in time"))??;
        response.data.sort_by_key(|e| e.index);
        anyhow::ensure!(
            response.data.len() == count,
            "the embeddings endpoint answered {} of {count}",
            response.data.len()
        );
        let width = response.data.first().map_or(0, |e| e.embedding.len());
        anyhow::ensure!(
            width > 0
                && response
                    .data
                    .iter()
                    .all(|e| e.embedding.len() == width && e.embedding.iter().all(|x| x.is_finite())),
            "the embeddings endpoint answered vectors of unequal or empty width"
        );
        Ok(response.data.into_iter().map(|e| unit(e.embedding)).collect())
    }
}

/// `v` scaled to length 1 (cosine becomes a dot product).
fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// A vector as kept: base64 of its little-endian f32s.
pub fn encode(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A kept vector; `None` for anything that is not one.
pub fn decode(text: &str) -> Option<Vec<f32>> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_kept_comes_back_the_same_and_garbage_is_none() {
        let v = unit(vec![3.0, 4.0]);
        assert_eq!(v, [0.6, 0.8]);
        assert_eq!(decode(&encode(&v)), Some(v));
        assert_eq!(decode("not base64!"), None);
        assert_eq!(decode("AAA="), None);
    }
}
