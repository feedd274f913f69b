//! Content gaps: what visitors asked that the knowledge did not answer (a
//! turn searched and found nothing, or found something but the reply
//! cited none of it — it did not know). Questions are kept redacted
//! (e-mail addresses and long numbers — phones, cards, orders — removed),
//! with their conversation, so they are erased with the user and by
//! retention; the host reads them grouped: the same question asked many
//! ways counts once, with how often.

use std::collections::BTreeSet;

use serde::Serialize;

use super::analyze;
use crate::db::knowledge::GapRow;

/// Characters of a question kept.
pub const MAX_QUESTION_CHARS: usize = 500;
/// Questions at least this alike (shared stems over all stems) are one.
const SAME_QUESTION: f32 = 0.5;

/// A question as kept: personal data out, bounded.
pub fn redact(question: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for word in question.split_whitespace() {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        if bare.contains('@') && bare.rsplit('@').next().is_some_and(|domain| domain.contains('.')) {
            out.push(word.replacen(bare, "[email]", 1));
        } else {
            out.push(word.to_owned());
        }
    }
    let text = out.join(" ");
    let mut redacted = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() || (chars[i] == '+' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            // A run of digits and the separators numbers are written with.
            let mut j = i;
            let mut digits = 0;
            while j < chars.len()
                && (chars[j].is_ascii_digit() || matches!(chars[j], ' ' | '-' | '.' | '(' | ')' | '+'))
            {
                digits += usize::from(chars[j].is_ascii_digit());
                j += 1;
            }
            while j > i && !chars[j - 1].is_ascii_digit() {
                j -= 1;
            }
            if digits >= 6 {
                redacted.push_str("[number]");
            } else {
                redacted.extend(&chars[i..j]);
            }
            i = j.max(i + 1);
        } else {
            redacted.push(chars[i]);
            i += 1;
        }
    }
    redacted.chars().take(MAX_QUESTION_CHARS).collect()
}

/// Questions asked alike, as the host reads them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GapGroup {
    /// The latest way it was asked.
    pub question: String,
    /// How many times it was asked.
    pub count: usize,
    /// Other ways it was asked (three at most).
    pub also_asked: Vec<String>,
    /// When it was last asked (RFC 3339).
    pub last_asked_at: String,
    /// `no_results` (the search found nothing) or `not_cited` (the reply
    /// used nothing found: the assistant did not know).
    pub reason: String,
}

/// Groups `gaps` (newest first): most asked first, then most recent.
pub fn group(gaps: &[GapRow]) -> Vec<GapGroup> {
    struct Building {
        terms: BTreeSet<String>,
        group: GapGroup,
        last: i64,
    }
    let mut groups: Vec<Building> = Vec::new();
    for gap in gaps {
        // What redaction put in says nothing of the question.
        let question = gap.question.replace("[email]", " ").replace("[number]", " ");
        let terms: BTreeSet<String> = analyze::terms(&question, &gap.language).into_iter().collect();
        let alike = groups.iter_mut().find(|g| similarity(&g.terms, &terms) >= SAME_QUESTION);
        match alike {
            Some(building) => {
                building.group.count += 1;
                if building.group.also_asked.len() < 3
                    && building.group.question != gap.question
                    && !building.group.also_asked.contains(&gap.question)
                {
                    building.group.also_asked.push(gap.question.clone());
                }
            }
            None => groups.push(Building {
                terms,
                last: gap.created_at,
                group: GapGroup {
                    question: gap.question.clone(),
                    count: 1,
                    also_asked: Vec::new(),
                    last_asked_at: crate::ids::rfc3339(gap.created_at),
                    reason: gap.reason.clone(),
                },
            }),
        }
    }
    groups.sort_by(|a, b| b.group.count.cmp(&a.group.count).then(b.last.cmp(&a.last)));
    groups.into_iter().map(|b| b.group).collect()
}

/// Shared stems over all stems (Jaccard); questions without a word of
/// substance are alike only when written the same.
fn similarity(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    if a.is_empty() || b.is_empty() {
        return if a == b { 1.0 } else { 0.0 };
    }
    a.intersection(b).count() as f32 / a.union(b).count() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_long_numbers_are_removed() {
        assert_eq!(
            redact("I'm ann@example.com, call +1 (555) 123-4567 about order 88231907"),
            "I'm [email], call [number] about order [number]"
        );
        assert_eq!(redact("Do you open at 9 on May 12?"), "Do you open at 9 on May 12?");
        assert_eq!(redact(&"a".repeat(900)).len(), MAX_QUESTION_CHARS);
    }

    fn gap(question: &str, at: i64) -> GapRow {
        GapRow { question: question.into(), reason: "no_results".into(), language: "en".into(), created_at: at }
    }

    #[test]
    fn the_same_question_asked_many_ways_counts_once() {
        let groups = group(&[
            gap("Do you have parking? I'm [email]", 5),
            gap("is there parking near you", 4),
            gap("Parking?", 3),
            gap("Can I bring my dog?", 2),
        ]);
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].question.as_str(), groups[0].count), ("Do you have parking? I'm [email]", 3));
        assert_eq!(groups[0].also_asked, ["is there parking near you", "Parking?"]);
        assert_eq!((groups[1].question.as_str(), groups[1].count), ("Can I bring my dog?", 1));
    }
}
