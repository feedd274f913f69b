//! One turn's context: what every phase reads, and how the model steps
//! end early.

use widget::wire::StopReason;

use super::events::EventSink;
use super::progress::SharedProgress;
use super::service::{Engine, TurnInput};

/// What every phase of one turn reads: the engine, what started the turn,
/// where its events go, and what it has said so far.
pub(super) struct Turn<'a> {
    pub engine: &'a Engine,
    pub input: &'a TurnInput,
    pub events: &'a EventSink,
    pub progress: SharedProgress,
}

/// How the model steps ended early.
pub(super) enum Stop {
    Limit(StopReason),
    /// A failure the user is told about in general terms: the key of its
    /// words in the catalogues (`widget/i18n`), said in the user's language.
    Failed(&'static str),
    /// The model failed (after its retries): the user is told what kind.
    Model(crate::llm::ModelError),
}

impl Stop {
    /// A write of the transcript failed: logged here; the user hears it in
    /// general terms.
    pub fn unsaved(error: anyhow::Error) -> Self {
        tracing::error!(error = format!("{error:#}"), "cannot save the transcript");
        Stop::Failed("error_save")
    }
}
