//! A document cut into the passages search returns: cut on its structure
//! — a chunk never spans two sections, and holds whole paragraphs up to
//! [`TARGET_CHARS`] — so each chunk has one heading (its `section`) and
//! one link (the page, with the section's `#fragment`). Only a paragraph
//! longer than [`MAX_CHARS`] is cut inside, at sentence ends.

use super::extract::Document;

/// A chunk is closed when the next paragraph would take it past this.
pub const TARGET_CHARS: usize = 1_200;
/// Longest paragraph kept whole.
pub const MAX_CHARS: usize = 2_000;

/// One passage of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Its section's heading (empty before a page's first heading).
    pub section: String,
    pub fragment: Option<String>,
    pub text: String,
}

/// Cuts `document` into chunks, in reading order.
pub fn chunks(document: &Document) -> Vec<Chunk> {
    let mut out = Vec::new();
    for section in &document.sections {
        let mut text = String::new();
        let mut close = |text: &mut String| {
            if !text.trim().is_empty() {
                out.push(Chunk {
                    section: section.heading.clone(),
                    fragment: section.fragment.clone(),
                    text: std::mem::take(text),
                });
            }
            text.clear();
        };
        for block in &section.blocks {
            for piece in pieces(block) {
                if !text.is_empty() && text.len() + piece.len() + 1 > TARGET_CHARS {
                    close(&mut text);
                }
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(piece);
            }
        }
        close(&mut text);
    }
    out
}

/// A paragraph in pieces of at most [`MAX_CHARS`] bytes: cut after a
/// sentence's end where one is near, else at a character boundary.
fn pieces(block: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = block.trim();
    while rest.len() > MAX_CHARS {
        let mut cut = MAX_CHARS;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let window = &rest[..cut];
        let sentence_end = ['.', '!', '?', '。', '！', '？', '\n']
            .iter()
            .filter_map(|end| window.rfind(*end).map(|at| at + end.len_utf8()))
            .max()
            .filter(|at| *at > MAX_CHARS / 2);
        let at = sentence_end.unwrap_or(cut);
        out.push(rest[..at].trim());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::extract::Section;

    fn doc(sections: Vec<(&str, Vec<String>)>) -> Document {
        Document {
            sections: sections
                .into_iter()
                .map(|(h, blocks)| Section { heading: h.into(), fragment: Some(h.to_lowercase()), blocks })
                .collect(),
            ..Document::default()
        }
    }

    #[test]
    fn a_chunk_never_spans_two_sections() {
        let chunks = chunks(&doc(vec![("Hours", vec!["Noon to ten.".into()]), ("Refunds", vec!["Five days.".into()])]));
        assert_eq!(chunks.len(), 2);
        assert_eq!((chunks[1].section.as_str(), chunks[1].fragment.as_deref()), ("Refunds", Some("refunds")));
        assert_eq!(chunks[1].text, "Five days.");
    }

    #[test]
    fn paragraphs_stay_whole_up_to_the_target() {
        let paragraph = "word ".repeat(100).trim().to_owned(); // 499 bytes
        let chunks = chunks(&doc(vec![("A", vec![paragraph.clone(); 5])]));
        assert_eq!(chunks.len(), 3, "two paragraphs a chunk, then one");
        assert!(chunks.iter().all(|c| c.text.split('\n').all(|p| p == paragraph)));
    }

    #[test]
    fn a_long_paragraph_is_cut_at_sentence_ends() {
        let sentence = "This sentence is about fifty characters long, ok. ";
        let long = sentence.repeat(100);
        let chunks = chunks(&doc(vec![("A", vec![long])]));
        assert!(chunks.len() >= 3);
        assert!(chunks.iter().all(|c| c.text.len() <= MAX_CHARS && c.text.ends_with('.')));
    }

    #[test]
    fn text_without_sentence_ends_is_cut_on_character_boundaries() {
        let chunks = chunks(&doc(vec![("A", vec!["é".repeat(3000)])]));
        assert_eq!(chunks.iter().map(|c| c.text.chars().count()).sum::<usize>(), 3000);
    }
}
