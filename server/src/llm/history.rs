//! How much of the conversation a step sends: the system prompt and the
//! current turn always (its user message and every tool round so far),
//! earlier turns newest first while they fit the history budget. Turns are
//! dropped whole, so every tool result stays paired with its call.

use super::types::ChatMessage;

/// What an image counts as, in characters: about the thousand tokens a
/// provider bills for one image of at most 1568 pixels a side, at four
/// characters a token.
const IMAGE_CHARS: usize = 4000;

/// Characters of text the model reads in these messages.
pub fn chars(messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .map(|m| match m {
            ChatMessage::System(t) | ChatMessage::User(t) => t.len(),
            ChatMessage::UserWithImages { text, images } => text.len() + images.len() * IMAGE_CHARS,
            ChatMessage::Assistant { text, tool_calls } => {
                text.len() + tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>()
            }
            ChatMessage::Tool { content, .. } => content.len(),
        })
        .sum()
}

/// Where each earlier turn starts (a user message), and where the current
/// one does (the last user message).
fn turns(messages: &[ChatMessage]) -> (Vec<usize>, usize) {
    let users: Vec<usize> = messages.iter().enumerate().filter(|(_, m)| m.is_user()).map(|(i, _)| i).collect();
    match users.split_last() {
        Some((current, earlier)) => (earlier.to_vec(), *current),
        None => (Vec::new(), messages.len()),
    }
}

/// The messages without the earlier turns starting at `starts[..dropped]`.
fn without_oldest(messages: &[ChatMessage], starts: &[usize], current: usize, dropped: usize) -> Vec<ChatMessage> {
    let keep_from = starts.get(dropped).copied().unwrap_or(current);
    let head = messages.iter().take_while(|m| matches!(m, ChatMessage::System(_)));
    let first_turn = starts.first().copied().unwrap_or(current);
    let head_len = head.clone().count().min(first_turn);
    messages[..head_len].iter().chain(&messages[keep_from.max(head_len)..]).cloned().collect()
}

/// Drops the oldest earlier turns until the earlier turns fit
/// `budget_tokens` (estimated at `chars_per_token_x100` / 100 characters
/// a token).
pub fn fit(messages: &[ChatMessage], budget_tokens: u64, chars_per_token_x100: u64) -> Vec<ChatMessage> {
    let (starts, current) = turns(messages);
    let tokens = |from: usize| (chars(&messages[from..current]) as u64 * 100).div_ceil(chars_per_token_x100.max(1));
    let dropped = (0..=starts.len()).find(|&d| d == starts.len() || tokens(starts[d]) <= budget_tokens).unwrap_or(0);
    if dropped > 0 {
        tracing::debug!(dropped_turns = dropped, "history over its token budget: oldest turns not sent");
    }
    without_oldest(messages, &starts, current, dropped)
}

/// The oldest half of the earlier turns dropped (at least one), after the
/// model said the prompt is too long; unchanged when there is none.
pub fn halve(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let (starts, current) = turns(messages);
    if starts.is_empty() {
        return messages.to_vec();
    }
    without_oldest(messages, &starts, current, starts.len().div_ceil(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::ToolCall;

    fn conversation(turns: usize) -> Vec<ChatMessage> {
        let mut m = vec![ChatMessage::System("sys".into())];
        for i in 0..turns {
            let call = ToolCall { id: format!("c{i}"), name: "lookup".into(), arguments: "{}".into(), extra: None };
            m.push(ChatMessage::User(format!("question {i} {}", "x".repeat(400))));
            m.push(ChatMessage::Assistant { text: String::new(), tool_calls: vec![call] });
            m.push(ChatMessage::Tool { call_id: format!("c{i}"), content: "y".repeat(400) });
            m.push(ChatMessage::Assistant { text: "answer".into(), tool_calls: vec![] });
        }
        m
    }

    fn users(messages: &[ChatMessage]) -> Vec<String> {
        messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::User(t) => Some(t.split(' ').take(2).collect::<Vec<_>>().join(" ")),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_oldest_turns_go_first_and_the_current_one_never() {
        let m = conversation(10);
        // Each turn is about 820 characters, 205 tokens at 4 a token.
        let sent = fit(&m, 450, 400);
        assert!(matches!(sent[0], ChatMessage::System(_)));
        assert_eq!(users(&sent), ["question 7", "question 8", "question 9"]);
        assert_eq!(fit(&m, 100_000, 400).len(), m.len(), "everything fits");
        let only_current = fit(&m, 0, 400);
        assert_eq!(users(&only_current), ["question 9"]);
        assert_eq!(only_current.len(), 1 + 4, "the current turn's tool round stays whole");
    }

    #[test]
    fn halving_drops_the_older_half_and_stops_at_the_current_turn() {
        let m = conversation(5);
        assert_eq!(users(&halve(&m)), ["question 2", "question 3", "question 4"]);
        let alone = conversation(1);
        assert_eq!(halve(&alone).len(), alone.len());
    }
}
