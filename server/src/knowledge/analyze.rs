//! Words as the full-text ranking sees them: lower-cased runs of letters
//! and digits, common words of the language left out, each reduced to its
//! stem by the language's Snowball stemmer (English, Spanish, French,
//! German, Arabic: the widget's languages that have one), and Japanese
//! (and any Han, kana or Hangul text) as overlapping pairs of characters,
//! which needs no dictionary and finds words of any length.

use rust_stemmers::{Algorithm, Stemmer};

/// The languages the widget speaks (`widget::wire::i18n::LANGUAGES`).
pub use widget::wire::i18n::LANGUAGES;

/// Longest word kept, in characters: longer runs are ids or garbage.
const MAX_WORD_CHARS: usize = 40;

/// The stemmer of `lang`, if it has one.
fn algorithm(lang: &str) -> Option<Algorithm> {
    match lang {
        "en" => Some(Algorithm::English),
        "es" => Some(Algorithm::Spanish),
        "fr" => Some(Algorithm::French),
        "de" => Some(Algorithm::German),
        "ar" => Some(Algorithm::Arabic),
        _ => None,
    }
}

/// The language of a page or source as one the analysis knows: its
/// primary subtag (`en-GB` is `en`); anything else reads as English.
pub fn language(tag: Option<&str>) -> &'static str {
    let primary = tag.unwrap_or("en").split(['-', '_']).next().unwrap_or("en").trim().to_ascii_lowercase();
    LANGUAGES.iter().find(|l| **l == primary).copied().unwrap_or("en")
}

/// Words so common in `lang` that they say nothing of what a passage is
/// about (what a visitor's question adds around its subject).
fn stop_words(lang: &str) -> &'static [&'static str] {
    match lang {
        "en" => &[
            "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "if",
            "in", "is", "it", "me", "my", "of", "on", "or", "our", "so", "that", "the", "there", "this", "to", "we",
            "what", "when", "where", "which", "who", "will", "with", "you", "your", "have", "has", "had", "am", "was",
            "were", "been", "any", "some", "would", "could", "should", "please", "about", "im", "its", "they", "their",
            "them", "us", "just", "also", "there",
        ],
        "es" => &[
            "a", "al", "como", "con", "de", "del", "el", "en", "es", "la", "las", "lo", "los", "mi", "para", "por",
            "que", "qué", "se", "su", "un", "una", "y", "yo",
        ],
        "fr" => &[
            "au", "aux", "ce", "comment", "de", "des", "du", "en", "est", "et", "je", "la", "le", "les", "ma", "mon",
            "ou", "où", "pour", "que", "quel", "quelle", "qui", "un", "une", "vous", "votre",
        ],
        "de" => &[
            "am", "an", "auf", "das", "der", "die", "ein", "eine", "für", "ich", "im", "in", "ist", "mit", "und",
            "wie", "was", "wo", "zu", "sie", "ihr", "mein",
        ],
        "ar" => &["في", "من", "على", "إلى", "عن", "هل", "ما", "و", "أو", "كيف", "هذا", "هذه"],
        _ => &[],
    }
}

/// Whether `c` is written without spaces between words (Han, kana, Hangul).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF | 0xFF66..=0xFF9F)
}

/// The terms of `text` read as language `lang`, in order (repeated as often as they occur).
pub fn terms(text: &str, lang: &str) -> Vec<String> {
    let stemmer = algorithm(lang).map(Stemmer::create);
    let stops = stop_words(lang);
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        let chars = word.chars().count();
        // A lone letter ("I'm" is `i` and `m`) says nothing; a digit may.
        let lone_letter = chars == 1 && word.chars().all(char::is_alphabetic);
        if chars > 0 && chars <= MAX_WORD_CHARS && !lone_letter && !stops.contains(&word.as_str()) {
            out.push(match &stemmer {
                Some(stemmer) => stemmer.stem(word).into_owned(),
                None => std::mem::take(word),
            });
        }
        word.clear();
    };
    let flush_cjk = |cjk: &mut Vec<char>, out: &mut Vec<String>| {
        match cjk.len() {
            0 => {}
            1 => out.push(cjk[0].to_string()),
            _ => out.extend(cjk.windows(2).map(|pair| pair.iter().collect::<String>())),
        }
        cjk.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            cjk.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk, &mut out);
            word.extend(c.to_lowercase());
        } else if is_mark(c) && !word.is_empty() {
            // Arabic's short vowels and other combining marks: left out.
        } else {
            flush_word(&mut word, &mut out);
            flush_cjk(&mut cjk, &mut out);
        }
    }
    flush_word(&mut word, &mut out);
    flush_cjk(&mut cjk, &mut out);
    out
}

/// Combining marks (Arabic harakat, tatweel): not part of a word's spelling.
fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x064B..=0x065F | 0x0670 | 0x0640)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_stemmed_in_their_language_and_common_ones_dropped() {
        assert_eq!(terms("How do I reset my passwords?", "en"), ["reset", "password"]);
        assert_eq!(terms("delivering", "en"), terms("delivered", "en"));
        assert_eq!(terms("les livraisons", "fr"), ["livraison"]);
        assert_eq!(terms("Lieferungen", "de"), terms("Lieferung", "de"));
        assert_eq!(terms("¿Las entregas?", "es"), terms("entrega", "es"));
    }

    #[test]
    fn japanese_is_read_as_pairs_of_characters() {
        assert_eq!(terms("配達エリア", "ja"), ["配達", "達エ", "エリ", "リア"]);
        assert_eq!(terms("東京 delivery", "ja"), ["東京", "delivery"]);
    }

    #[test]
    fn arabic_marks_do_not_split_a_word() {
        assert_eq!(terms("التَّوْصِيل", "ar"), terms("التوصيل", "ar"));
        assert!(!terms("التوصيل", "ar").is_empty());
    }

    #[test]
    fn a_language_tag_reads_as_its_primary_subtag() {
        assert_eq!(language(Some("en-GB")), "en");
        assert_eq!(language(Some("FR_ca")), "fr");
        assert_eq!(language(Some("xx")), "en");
        assert_eq!(language(None), "en");
    }
}
