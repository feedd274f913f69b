//! The widget's words in every language it speaks: one catalogue per
//! language (`widget/i18n/{lang}.json`, the loader's few words included).
//! The server picks the visitor's language and hands that one catalogue to
//! the widget in its boot data, in [`Msg`] order: the WASM carries no
//! catalogue, and a page downloads only its own language.

/// The languages the widget speaks; the first is the default.
pub const LANGUAGES: [&str; 6] = ["en", "es", "fr", "de", "ja", "ar"];

/// The written direction of `lang`.
pub fn direction(lang: &str) -> &'static str {
    if lang == "ar" { "rtl" } else { "ltr" }
}

macro_rules! messages {
    ($($name:ident = $key:literal,)*) => {
        /// A text the widget shows; its key in the catalogues.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Msg {
            $($name,)*
        }

        impl Msg {
            /// Every message, in the order of the boot's `words`.
            pub const ALL: &[Msg] = &[$(Msg::$name,)*];

            /// Its key in the catalogues.
            pub fn key(self) -> &'static str {
                match self {
                    $(Msg::$name => $key,)*
                }
            }
        }
    };
}

messages! {
    PageTitle = "page_title",
    DemoBadge = "demo_badge",
    DemoHint = "demo_hint",
    History = "history",
    NewConversation = "new_conversation",
    Done = "done",
    CloseChat = "close_chat",
    TourTitle = "tour_title",
    TourText = "tour_text",
    TourFinish = "tour_finish",
    TourSkip = "tour_skip",
    HostbarLabel = "hostbar_label",
    HostbarPartOf = "hostbar_part_of",
    HostbarBack = "hostbar_back",
    MessageLabel = "message_label",
    Placeholder = "placeholder",
    Connecting = "connecting",
    Send = "send",
    Stop = "stop",
    Conversation = "conversation",
    Greeting = "greeting",
    Suggestions = "suggestions",
    You = "you",
    Assistant = "assistant",
    CutOff = "cut_off",
    StoppedNote = "stopped_note",
    Copy = "copy",
    Copied = "copied",
    CopyReply = "copy_reply",
    CopiedReply = "copied_reply",
    CopiedSaid = "copied_said",
    CopyFailed = "copy_failed",
    AskAgain = "ask_again",
    FeedbackGood = "feedback_good",
    FeedbackBad = "feedback_bad",
    FeedbackComment = "feedback_comment",
    FeedbackSend = "feedback_send",
    FeedbackThanks = "feedback_thanks",
    FeedbackRemoved = "feedback_removed",
    FeedbackFailed = "feedback_failed",
    Results = "results",
    HistoryEmpty = "history_empty",
    HistoryBack = "history_back",
    HistoryOpened = "history_opened",
    Retry = "retry",
    Wait = "wait",
    CanSend = "can_send",
    ActionChanged = "action_changed",
    ActionApplyQuestion = "action_apply_question",
    ActionDeleteQuestion = "action_delete_question",
    ActionFinal = "action_final",
    ActionDeleteWarning = "action_delete_warning",
    Reason = "reason",
    CancelChange = "cancel_change",
    Back = "back",
    Apply = "apply",
    Delete = "delete",
    DeletePermanently = "delete_permanently",
    Keep = "keep",
    Cancel = "cancel",
    Applying = "applying",
    Cancelling = "cancelling",
    NeedsApproval = "needs_approval",
    ActionExpired = "action_expired",
    ActionAlreadyApplied = "action_already_applied",
    ActionInProgress = "action_in_progress",
    ActionCancelled = "action_cancelled",
    ActionConfirmFirst = "action_confirm_first",
    ActionIntegrationChanged = "action_integration_changed",
    ActionToolGone = "action_tool_gone",
    ActionFailed = "action_failed",
    ElicitTitle = "elicit_title",
    ElicitSend = "elicit_send",
    ElicitDecline = "elicit_decline",
    ElicitFailed = "elicit_failed",
    ElicitGone = "elicit_gone",
    MenuCart = "menu_cart",
    QuantityOf = "quantity_of",
    RemoveOne = "remove_one",
    AddOne = "add_one",
    SoldOut = "sold_out",
    NotePlaceholder = "note_placeholder",
    NoteFor = "note_for",
    Total = "total",
    TotalHint = "total_hint",
    Checkout = "checkout",
    CheckoutMessage = "checkout_message",
    OrderUpdated = "order_updated",
    Replying = "replying",
    Running = "running",
    Reconnecting = "reconnecting",
    NotConnected = "not_connected",
    Unreachable = "unreachable",
    SessionRenewing = "session_renewing",
    SessionEnded = "session_ended",
    ConversationGone = "conversation_gone",
    TooMany = "too_many",
    Busy = "busy",
    TurnInProgress = "turn_in_progress",
    WentWrong = "went_wrong",
    NoBody = "no_body",
    Lost = "lost",
    Sending = "sending",
    Queued = "queued",
    NotSent = "not_sent",
    Offline = "offline",
    ActionOffline = "action_offline",
    Attach = "attach",
}

/// The loader's words (`/embed.js` carries them for every language: it
/// draws the launcher before any widget page is loaded).
pub const LOADER_KEYS: [&str; 6] =
    ["loader_label", "loader_open", "loader_close", "loader_unread", "loader_new_reply", "loader_frame"];

/// The words of the widget's attachments code (`/widget/attach.js`,
/// loaded on first use: every language in it).
pub const ATTACH_KEYS: [&str; 14] = [
    "open_image",
    "att_list",
    "att_uploading",
    "att_uploaded",
    "att_remove",
    "att_too_large",
    "att_image_too_large",
    "att_type",
    "att_unreadable",
    "att_quota",
    "att_failed",
    "att_too_many",
    "att_waiting",
    "att_close",
];

/// The texts the server itself writes into a reply (`engine/close.rs`):
/// a limit or the user cut it short.
/// The words of an MCP App's bridge page (the assistant's chrome around
/// an app: its questions to the visitor), all languages in the page.
pub const APP_KEYS: [&str; 11] = [
    "app_loading",
    "app_unavailable",
    "app_expired",
    "app_confirm_message",
    "app_send",
    "app_confirm_link",
    "app_open",
    "app_confirm_change",
    "app_confirm_delete",
    "app_cancel",
    "app_exit_full",
];

/// The widget's own words the bridge page also says: a change an app asks
/// for is applied (and a delete confirmed) in the chat's words; "Done"
/// when a change asked again after a reload has run.
pub const APP_SHARED_KEYS: [&str; 6] =
    ["apply", "delete", "delete_permanently", "action_delete_warning", "applying", "done"];

pub const SERVER_KEYS: [&str; 25] = [
    "notice_iterations",
    "notice_time",
    "notice_tokens",
    "notice_stopped",
    "notice_filtered",
    "notice_budget",
    // A turn's `error` event, in the conversation's language.
    "error_setup",
    "error_load",
    "error_save",
    "error_start",
    "error_allowance",
    "error_interrupted",
    "error_host_unauthorized",
    "error_host_bad_request",
    "error_host_forbidden",
    "error_host_not_found",
    "error_host_failed",
    "error_host_stale",
    "error_host_timeout",
    "error_host_unreachable",
    "error_model_busy",
    "error_model_unavailable",
    "error_model_too_long",
    "error_model_failed",
    // The heading of the pages a reply cites.
    "sources",
];

/// Each language's English name, as the model is told it.
pub fn english_name(lang: &str) -> &'static str {
    match lang {
        "es" => "Spanish",
        "fr" => "French",
        "de" => "German",
        "ja" => "Japanese",
        "ar" => "Arabic",
        _ => "English",
    }
}

/// `template` with its `{name}` placeholder replaced by `value`.
pub fn fill(template: &str, placeholder: &str, value: &str) -> String {
    template.replacen(placeholder, value, 1)
}

#[cfg(feature = "ssr")]
mod catalogues {
    use std::collections::HashMap;
    use std::sync::LazyLock;

    use super::{LANGUAGES, Msg};

    const FILES: [&str; 6] = [
        include_str!("../../i18n/en.json"),
        include_str!("../../i18n/es.json"),
        include_str!("../../i18n/fr.json"),
        include_str!("../../i18n/de.json"),
        include_str!("../../i18n/ja.json"),
        include_str!("../../i18n/ar.json"),
    ];

    /// Each language's catalogue, key to text, parsed once.
    pub static CATALOGUES: LazyLock<Vec<HashMap<String, String>>> = LazyLock::new(|| {
        FILES.iter().map(|text| serde_json::from_str(text).expect("the catalogues are valid JSON (tested)")).collect()
    });

    /// A text of `lang` (English where `lang` lacks it: the tests fail first).
    pub fn text(lang: &str, key: &str) -> String {
        let index = LANGUAGES.iter().position(|l| *l == lang).unwrap_or(0);
        CATALOGUES[index].get(key).or_else(|| CATALOGUES[0].get(key)).cloned().unwrap_or_default()
    }

    /// `keys`' texts in every language, `{"en": {key: text}, …}`: what a
    /// page that speaks them all carries (the attachments code, an app's
    /// bridge).
    pub fn table(keys: &[&str]) -> serde_json::Value {
        LANGUAGES
            .iter()
            .map(|lang| {
                let texts = keys.iter().map(|key| ((*key).to_owned(), text(lang, key).into())).collect();
                ((*lang).to_owned(), serde_json::Value::Object(texts))
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// The widget's words in `lang`, in [`Msg`] order (the boot's `words`).
    pub fn words(lang: &str) -> Vec<String> {
        Msg::ALL.iter().map(|m| text(lang, m.key())).collect()
    }

    /// The language of a tag (`es-MX` is `es`) when the widget speaks it.
    pub fn spoken(tag: &str) -> Option<&'static str> {
        let primary = tag.trim().split(['-', '_']).next().unwrap_or_default().to_ascii_lowercase();
        LANGUAGES.iter().copied().find(|l| *l == primary)
    }

    /// The language to speak: the host's choice when the widget speaks it,
    /// else the first of the browser's (`Accept-Language`, by weight) that
    /// it speaks, else English. Only the primary subtag counts (`es-MX` is
    /// `es`).
    pub fn negotiate(host: Option<&str>, accept_language: Option<&str>) -> &'static str {
        if let Some(lang) = host.and_then(spoken) {
            return lang;
        }
        let mut asked: Vec<(f32, usize, &str)> = accept_language
            .unwrap_or_default()
            .split(',')
            .take(32)
            .enumerate()
            .filter_map(|(order, part)| {
                let mut pieces = part.split(';');
                let tag = pieces.next()?.trim();
                let weight = pieces
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())?;
                (weight > 0.0 && weight <= 1.0).then_some((weight, order, tag))
            })
            .collect();
        asked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        asked.iter().find_map(|(_, _, tag)| spoken(tag)).unwrap_or(LANGUAGES[0])
    }
}

#[cfg(feature = "ssr")]
pub use catalogues::{negotiate, spoken, table, text, words};

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use super::catalogues::CATALOGUES;
    use super::{APP_KEYS, APP_SHARED_KEYS, ATTACH_KEYS, LANGUAGES, LOADER_KEYS, Msg, SERVER_KEYS, negotiate};

    fn placeholders(text: &str) -> Vec<&str> {
        let mut found: Vec<&str> = text
            .match_indices('{')
            .filter_map(|(start, _)| text[start..].find('}').map(|end| &text[start..start + end + 1]))
            .collect();
        found.sort_unstable();
        found
    }

    /// A missing or extra key, an empty text or a lost placeholder in any
    /// language fails here, not on a visitor's screen.
    #[test]
    fn every_catalogue_has_every_word_with_its_placeholders() {
        let expected: BTreeSet<&str> = Msg::ALL
            .iter()
            .map(|m| m.key())
            .chain(LOADER_KEYS)
            .chain(SERVER_KEYS)
            .chain(APP_KEYS)
            .chain(ATTACH_KEYS)
            .collect();
        let named = Msg::ALL.len() + LOADER_KEYS.len() + SERVER_KEYS.len() + APP_KEYS.len() + ATTACH_KEYS.len();
        assert_eq!(expected.len(), named, "a key is named twice");
        for key in APP_SHARED_KEYS {
            assert!(Msg::ALL.iter().any(|m| m.key() == key), "{key} is not a word of the widget's");
        }
        let english: &HashMap<String, String> = &CATALOGUES[0];
        for (lang, catalogue) in LANGUAGES.iter().zip(CATALOGUES.iter()) {
            let keys: BTreeSet<&str> = catalogue.keys().map(String::as_str).collect();
            assert_eq!(keys, expected, "{lang}.json has other keys than the widget's");
            for (key, text) in catalogue {
                assert!(!text.trim().is_empty(), "{lang}.json: {key} is empty");
                assert_eq!(placeholders(text), placeholders(&english[key]), "{lang}.json: {key} placeholders");
            }
        }
    }

    #[test]
    fn the_language_is_the_hosts_then_the_browsers_then_english() {
        assert_eq!(negotiate(Some("ar"), Some("de")), "ar");
        assert_eq!(negotiate(Some("es-MX"), None), "es");
        assert_eq!(negotiate(Some("pt"), Some("fr-CA,fr;q=0.9")), "fr", "a language not spoken falls to the browser's");
        assert_eq!(negotiate(None, Some("pt-BR,ja;q=0.8,de;q=0.9")), "de", "by weight");
        assert_eq!(negotiate(None, Some("ja;q=0.5,es;q=0.5")), "ja", "equal weights keep their order");
        assert_eq!(negotiate(None, Some("de;q=0,it")), "en", "q=0 refuses a language");
        assert_eq!(negotiate(None, Some("*")), "en");
        assert_eq!(negotiate(Some("<script>"), Some(";;;q=abc,,")), "en", "garbage is English");
        assert_eq!(negotiate(None, None), "en");
    }
}
