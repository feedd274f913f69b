//! Sanitizing `display` cards from tool output, to the letter of
//! remote-tools-contract.md, "Displayable results (`display`)": an entry
//! without an absolute http(s) `url` is dropped; a non-https or relative
//! `image` is cleared; text is trimmed (`title` ≤ 120, `subtitle` ≤ 100,
//! each badge ≤ 48, ≤ 4 badges); ≤ 6 entries per tool result and ≤ 8 per
//! turn, de-duplicated by `url`; plain text only; malformed entries skipped.

use serde_json::Value;
use url::Url;
use widget::wire::DisplayCard;

pub const MAX_TITLE: usize = 120;
pub const MAX_SUBTITLE: usize = 100;
pub const MAX_BADGE: usize = 48;
pub const MAX_BADGES: usize = 4;
pub const MAX_PER_RESULT: usize = 6;
pub const MAX_PER_TURN: usize = 8;

/// The cards of one tool result's `output`, sanitized (at most 6).
pub fn cards_from_output(output: &Value) -> Vec<DisplayCard> {
    let Some(entries) = output.get("display").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut cards: Vec<DisplayCard> = Vec::new();
    for entry in entries {
        if cards.len() == MAX_PER_RESULT {
            break;
        }
        if let Some(card) = sanitize_entry(entry)
            && !cards.iter().any(|c| c.url == card.url)
        {
            cards.push(card);
        }
    }
    cards
}

/// Keeps the turn within 8 distinct cards across all its tool results.
#[derive(Debug, Default)]
pub struct TurnCards {
    seen: Vec<String>,
}

impl TurnCards {
    /// Returns the cards of `batch` that are new to this turn and fit in it.
    pub fn admit(&mut self, batch: Vec<DisplayCard>) -> Vec<DisplayCard> {
        let mut admitted = Vec::new();
        for card in batch {
            if self.seen.len() == MAX_PER_TURN {
                break;
            }
            if !self.seen.contains(&card.url) {
                self.seen.push(card.url.clone());
                admitted.push(card);
            }
        }
        admitted
    }
}

fn sanitize_entry(entry: &Value) -> Option<DisplayCard> {
    let obj = entry.as_object()?;
    let url = obj.get("url")?.as_str().and_then(|u| safe_url(u, &["http", "https"]))?;
    let title = plain_text(obj.get("title")?.as_str()?, MAX_TITLE)?;
    let image = obj.get("image").and_then(Value::as_str).and_then(|u| safe_url(u, &["https"]));
    let subtitle = obj.get("subtitle").and_then(Value::as_str).and_then(|s| plain_text(s, MAX_SUBTITLE));
    let badges = match obj.get("badges") {
        Some(Value::Array(items)) => {
            items.iter().filter_map(Value::as_str).filter_map(|b| plain_text(b, MAX_BADGE)).take(MAX_BADGES).collect()
        }
        _ => Vec::new(),
    };
    Some(DisplayCard { title, url, image, subtitle, badges })
}

/// Parses `raw` as an absolute URL with one of `schemes`, no credentials,
/// and a host; returns it in canonical form. Never a prefix check: the
/// parser decides the scheme, so `JaVaScRiPt:`, `java\tscript:` and `//x` fail.
fn safe_url(raw: &str, schemes: &[&str]) -> Option<String> {
    if raw.len() > 2048 || raw.chars().any(char::is_control) {
        return None;
    }
    let url = Url::parse(raw.trim()).ok()?;
    if !schemes.contains(&url.scheme()) || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    // `https://shop.example@evil.example/` shows one host and opens another.
    if !url.username().is_empty() || url.password().is_some() {
        return None;
    }
    Some(url.into())
}

/// Text as the widget will show it: control characters and runs of
/// whitespace become one space, trimmed to `max` characters; empty → None.
fn plain_text(raw: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    let mut pending_space = false;
    for ch in raw.chars() {
        if ch.is_whitespace() || ch.is_control() || is_invisible(ch) {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(ch);
    }
    let trimmed: String = out.chars().take(max).collect();
    let trimmed = trimmed.trim_end().to_owned();
    (!trimmed.is_empty()).then_some(trimmed)
}

/// Bidirectional overrides and zero-width characters can disguise text.
fn is_invisible(ch: char) -> bool {
    matches!(ch, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn one(entry: Value) -> Vec<DisplayCard> {
        cards_from_output(&json!({ "display": [entry] }))
    }

    #[test]
    fn a_well_formed_card_passes_unchanged() {
        let cards = one(json!({"title": "Lemon Tart", "url": "https://acme.example/menu#lemon_tart",
            "image": "https://acme.example/tart.jpg", "subtitle": "$8", "badges": ["Desserts"]}));
        assert_eq!(cards.len(), 1);
        assert_eq!(cards[0].title, "Lemon Tart");
        assert_eq!(cards[0].image.as_deref(), Some("https://acme.example/tart.jpg"));
        assert_eq!(cards[0].badges, vec!["Desserts"]);
    }

    #[test]
    fn script_and_data_urls_are_dropped_in_any_spelling() {
        for url in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "java\tscript:alert(1)",
            "\u{1}javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "/relative/path",
            "//evil.example/x",
            "https://shop.example@evil.example/",
            "https://user:pass@shop.example/",
            "ftp://files.example/x",
            "https://",
        ] {
            assert!(one(json!({"title": "x", "url": url})).is_empty(), "{url:?} was kept");
        }
    }

    #[test]
    fn an_insecure_or_relative_image_is_cleared_and_the_card_stays() {
        for image in ["http://shop.example/a.jpg", "/a.jpg", "javascript:alert(1)", "data:image/png;base64,AAAA"] {
            let cards = one(json!({"title": "x", "url": "https://shop.example/", "image": image}));
            assert_eq!(cards.len(), 1);
            assert_eq!(cards[0].image, None, "{image:?} was kept");
        }
    }

    #[test]
    fn long_fields_are_trimmed_by_characters() {
        let cards = one(json!({"title": "é".repeat(300), "url": "https://a.example/",
            "subtitle": "s".repeat(300), "badges": ["b".repeat(100), "2", "3", "4", "5", "6"]}));
        assert_eq!(cards[0].title.chars().count(), MAX_TITLE);
        assert_eq!(cards[0].subtitle.as_ref().unwrap().chars().count(), MAX_SUBTITLE);
        assert_eq!(cards[0].badges.len(), MAX_BADGES);
        assert_eq!(cards[0].badges[0].chars().count(), MAX_BADGE);
    }

    #[test]
    fn control_and_invisible_characters_do_not_survive() {
        let cards = one(json!({"title": "Pizza\u{202E}\u{0}\n\n  now", "url": "https://a.example/"}));
        assert_eq!(cards[0].title, "Pizza now");
    }

    #[test]
    fn malformed_entries_are_skipped_silently() {
        let output = json!({"display": [42, null, {"url": "https://a.example/"}, {"title": 5, "url": "https://b.example/"},
            {"title": "ok", "url": "https://c.example/", "badges": "not-a-list"}]});
        let cards = cards_from_output(&output);
        assert_eq!(cards.len(), 1);
        assert_eq!(cards[0].url, "https://c.example/");
        assert!(cards[0].badges.is_empty());
    }

    #[test]
    fn fifty_entries_become_six_per_result_and_eight_per_turn() {
        let entries: Vec<Value> =
            (0..50).map(|i| json!({"title": format!("n{i}"), "url": format!("https://a.example/{i}")})).collect();
        let output = json!({ "display": entries });
        let first = cards_from_output(&output);
        assert_eq!(first.len(), MAX_PER_RESULT);
        let mut turn = TurnCards::default();
        assert_eq!(turn.admit(first.clone()).len(), 6);
        // The same six again are duplicates; two more fit.
        assert_eq!(turn.admit(first).len(), 0);
        let more: Vec<Value> =
            (6..20).map(|i| json!({"title": "m", "url": format!("https://a.example/{i}")})).collect();
        assert_eq!(turn.admit(cards_from_output(&json!({ "display": more }))).len(), 2);
    }

    #[test]
    fn duplicates_within_one_result_are_removed() {
        let output = json!({"display": [{"title": "a", "url": "https://a.example/x"},
            {"title": "b", "url": "https://a.example/x"}]});
        assert_eq!(cards_from_output(&output).len(), 1);
    }
}
