//! The words both ends of the wire share: stream event names, verbs, action
//! states, roles, tool activity and why a turn stopped. Each is an enum
//! defined once; the server, the database mapping, the widget's client and
//! its JSON reader all use these, so a word cannot drift between layers.

use serde::{Deserialize, Serialize};

/// A word that is not one of a vocabulary's (from the database, a host or
/// the stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownWord {
    pub vocabulary: &'static str,
    pub word: String,
}

impl std::fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` is not {}", self.word.chars().take(40).collect::<String>(), self.vocabulary)
    }
}

impl std::error::Error for UnknownWord {}

/// An enum of wire words: `as_str`, `parse`, `Display`, serde under the
/// same words, and `TryFrom<String>` (how the database maps a column).
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident ($what:literal) { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $word)] $variant,)+
        }

        impl $name {
            /// Every word, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The word on the wire and in the database.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The variant for a word; `None` for any other text.
            pub fn parse(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        // The API document (server only): a string of exactly these words.
        #[cfg(feature = "ssr")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($word),+]))
                    .into()
            }
        }

        #[cfg(feature = "ssr")]
        impl utoipa::ToSchema for $name {}

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl TryFrom<String> for $name {
            type Error = UnknownWord;

            fn try_from(word: String) -> Result<Self, UnknownWord> {
                Self::parse(&word).ok_or(UnknownWord { vocabulary: $what, word })
            }
        }
    };
}

vocabulary! {
    /// The `event:` name of a turn's stream (assistant-api.md §3).
    EventKind ("a stream event") {
        Turn = "turn",
        Text = "text",
        Tool = "tool",
        Display = "display",
        Component = "component",
        PendingAction = "pending_action",
        Elicitation = "elicitation",
        Message = "message",
        Done = "done",
        Error = "error",
    }
}

vocabulary! {
    /// The kind of a field of a tool's request for input (`elicitation`).
    FieldKind ("a field kind") {
        Text = "text",
        Number = "number",
        Integer = "integer",
        Boolean = "boolean",
        Choice = "choice",
        Choices = "choices",
    }
}

vocabulary! {
    /// The user's answer to a tool's request for input.
    ElicitAction ("an answer to a request for input") {
        Accept = "accept",
        Decline = "decline",
        Cancel = "cancel",
    }
}

vocabulary! {
    /// A user's thumb on a reply (`PUT /v1/messages/{id}/feedback`).
    Rating ("a rating") {
        Up = "up",
        Down = "down",
    }
}

vocabulary! {
    /// A tool's verb, which decides its confirmation policy
    /// (remote-tools-contract.md, "Verb semantics").
    Verb ("a tool verb") {
        Get = "get",
        Create = "create",
        Update = "update",
        Delete = "delete",
    }
}

impl Verb {
    /// How many explicit confirmations a change of this verb needs: a
    /// `delete` two (confirm, then apply), `create`/`update` one (apply).
    pub fn confirmations_required(self) -> u8 {
        if self == Verb::Delete { 2 } else { 1 }
    }

    /// True for the verbs that change something (never run unconfirmed).
    pub fn changes(self) -> bool {
        self != Verb::Get
    }
}

vocabulary! {
    /// Where a pending action is in its life.
    ActionStatus ("an action status") {
        /// Previewed, waiting for the user's answer.
        Pending = "pending",
        /// A delete the user confirmed once; it still needs the apply.
        ConfirmedOnce = "confirmed_once",
        /// Applied: the host's execute is under way.
        Executing = "executing",
        Succeeded = "succeeded",
        Failed = "failed",
        /// The host found its data changed since the preview and ran
        /// nothing (our extension); a fresh preview replaces it.
        Stale = "stale",
        Cancelled = "cancelled",
        Expired = "expired",
    }
}

impl ActionStatus {
    /// Still waiting for the user (it can be confirmed, applied or cancelled).
    pub fn is_open(self) -> bool {
        matches!(self, ActionStatus::Pending | ActionStatus::ConfirmedOnce)
    }
}

vocabulary! {
    /// Who wrote a message of a conversation. The conversation view shows
    /// `user` and `assistant` only; `tool` results live in the transcript.
    Role ("a message role") {
        User = "user",
        Assistant = "assistant",
        Tool = "tool",
    }
}

vocabulary! {
    /// A `tool` event's status.
    ToolStatus ("a tool status") {
        Started = "started",
        Progress = "progress",
        Succeeded = "succeeded",
        Failed = "failed",
    }
}

vocabulary! {
    /// Why a turn ended (`done.stop_reason`).
    StopReason ("a stop reason") {
        Completed = "completed",
        PendingAction = "pending_action",
        IterationLimit = "iteration_limit",
        TimeLimit = "time_limit",
        TokenLimit = "token_limit",
        Cancelled = "cancelled",
        /// The model provider's content filter withheld the answer.
        ContentFilter = "content_filter",
        /// The model stayed rate limited or unavailable through the retries.
        ModelUnavailable = "model_unavailable",
        /// The workspace (or the user) used its model tokens for the day.
        BudgetExhausted = "budget_exhausted",
        /// The process running the turn ended before the turn did.
        Interrupted = "interrupted",
        Error = "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_parses_back_and_serializes_as_itself() {
        for verb in Verb::ALL {
            assert_eq!(Verb::parse(verb.as_str()), Some(*verb));
            assert_eq!(serde_json::to_value(verb).unwrap(), verb.as_str());
        }
        for status in ActionStatus::ALL {
            assert_eq!(ActionStatus::try_from(status.as_str().to_owned()), Ok(*status));
            assert_eq!(serde_json::from_value::<ActionStatus>(status.as_str().into()).unwrap(), *status);
        }
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(*kind));
        }
        for reason in StopReason::ALL {
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
        }
    }

    #[test]
    fn an_unknown_word_is_refused_not_guessed() {
        assert_eq!(Verb::parse("Delete"), None);
        assert_eq!(Verb::parse("remove"), None);
        let error = ActionStatus::try_from("done".to_owned()).unwrap_err();
        assert_eq!(error.to_string(), "`done` is not an action status");
        assert!(serde_json::from_value::<Role>("system".into()).is_err());
    }

    #[test]
    fn only_a_delete_needs_two_confirmations() {
        assert_eq!(Verb::Delete.confirmations_required(), 2);
        assert_eq!(Verb::Create.confirmations_required(), 1);
        assert_eq!(Verb::Update.confirmations_required(), 1);
        assert!(!Verb::Get.changes() && Verb::Update.changes());
        assert!(ActionStatus::ConfirmedOnce.is_open() && !ActionStatus::Executing.is_open());
    }
}
