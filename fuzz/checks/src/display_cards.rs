//! `display` cards from a host's output: whatever the JSON, every card
//! kept obeys remote-tools-contract.md's rules, and a turn keeps at most
//! eight distinct links.

use crate::json;
use arbitrary::Unstructured;
use server::display::{
    MAX_BADGE, MAX_BADGES, MAX_PER_RESULT, MAX_PER_TURN, MAX_SUBTITLE, MAX_TITLE, TurnCards, cards_from_output,
};

fn plain(text: &str, max: usize) {
    assert!(!text.is_empty() && text.chars().count() <= max, "{text:?}");
    assert!(!text.chars().any(char::is_control) && text.trim() == text, "{text:?}");
    assert!(!text.chars().any(|c| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}')), "{text:?}");
}

/// One input: the fuzzer's bytes.
pub fn check(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut turn = TurnCards::default();
    let mut admitted = Vec::new();
    while let Ok(display) = json(&mut u, 4) {
        let output = serde_json::json!({ "display": display });
        let cards = cards_from_output(&output);
        assert!(cards.len() <= MAX_PER_RESULT);
        for (i, card) in cards.iter().enumerate() {
            let url = url::Url::parse(&card.url).expect("a kept url parses");
            assert!(matches!(url.scheme(), "http" | "https") && url.host_str().is_some_and(|h| !h.is_empty()));
            assert!(url.username().is_empty() && url.password().is_none(), "{url}");
            assert!(!cards[..i].iter().any(|c| c.url == card.url), "a url twice in one result");
            if let Some(image) = &card.image {
                assert_eq!(url::Url::parse(image).expect("a kept image parses").scheme(), "https");
            }
            plain(&card.title, MAX_TITLE);
            if let Some(subtitle) = &card.subtitle {
                plain(subtitle, MAX_SUBTITLE);
            }
            assert!(card.badges.len() <= MAX_BADGES);
            card.badges.iter().for_each(|b| plain(b, MAX_BADGE));
        }
        admitted.extend(turn.admit(cards));
        if u.is_empty() {
            break;
        }
    }
    assert!(admitted.len() <= MAX_PER_TURN);
    let mut urls: Vec<&String> = admitted.iter().map(|c| &c.url).collect();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), admitted.len(), "a url twice in one turn");
}
