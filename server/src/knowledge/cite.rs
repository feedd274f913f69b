//! Citations: each chunk a turn's searches return gets an id (`S1`,
//! `S2`, … in the order first returned; the same chunk keeps its id), the
//! model marks what it used with those ids in brackets (`[S1]`,
//! `[S1, S3]`), and the reply is rewritten before it is kept: a marker of
//! a chunk this turn returned becomes the number of its source in the
//! reply's list (`[1]`), and one of anything else — an id the model
//! invented, or one from an earlier turn — is dropped, never shown.
//! Sources are pages (with the section cited), each listed once.

use super::Hit;

pub use widget::wire::CitedSource;

/// What this turn's searches returned, by id.
#[derive(Debug, Default)]
pub struct Retrieved {
    chunks: Vec<(String, CitedSource)>,
    /// Whether the turn searched at all, and whether a search found anything.
    pub searched: bool,
    pub found: bool,
}

impl Retrieved {
    /// The id the model cites `hit` by.
    pub fn add(&mut self, hit: &Hit) -> String {
        if let Some(at) = self.chunks.iter().position(|(chunk_id, _)| *chunk_id == hit.chunk_id) {
            return format!("S{}", at + 1);
        }
        self.chunks.push((
            hit.chunk_id.clone(),
            CitedSource { url: hit.url.clone(), title: hit.title.clone(), section: hit.section.clone() },
        ));
        format!("S{}", self.chunks.len())
    }

    fn source(&self, id: &str) -> Option<&CitedSource> {
        let n: usize = id.strip_prefix(['S', 's'])?.parse().ok()?;
        self.chunks.get(n.checked_sub(1)?).map(|(_, source)| source)
    }

    /// `texts` with their markers rewritten (each the same way), and the
    /// sources they cite in order of first citation.
    pub fn resolve(&self, texts: &mut [&mut String]) -> Vec<CitedSource> {
        let mut sources: Vec<CitedSource> = Vec::new();
        for text in texts.iter_mut() {
            **text = rewrite(text, |id| {
                let source = self.source(id)?;
                let at = match sources.iter().position(|s| s == source) {
                    Some(at) => at,
                    None => {
                        sources.push(source.clone());
                        sources.len() - 1
                    }
                };
                Some(at + 1)
            });
        }
        sources
    }
}

/// `text` with every citation marker (`[S1]`, `[S1, S2]`, `[s3]`)
/// replaced by the numbers `number` gives its ids (`[1]`, `[1][2]`), and
/// the ids it gives none dropped — with the marker when none is left.
fn rewrite(text: &str, mut number: impl FnMut(&str) -> Option<usize>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']').filter(|c| *c <= 64) else {
            out.push('[');
            rest = after;
            continue;
        };
        let inner = &after[..close];
        let ids: Vec<&str> = inner.split([',', ';', ' ']).map(str::trim).filter(|s| !s.is_empty()).collect();
        let is_marker = !ids.is_empty()
            && ids
                .iter()
                .all(|id| id.len() >= 2 && id.starts_with(['S', 's']) && id[1..].bytes().all(|b| b.is_ascii_digit()));
        if !is_marker {
            out.push('[');
            rest = after;
            continue;
        }
        let mut numbers: Vec<usize> = ids.iter().filter_map(|id| number(id)).collect();
        numbers.dedup();
        if numbers.is_empty() {
            // An invented citation: gone, with the space before it.
            while out.ends_with(' ') {
                out.pop();
            }
        }
        for n in numbers {
            out.push_str(&format!("[{n}]"));
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(chunk_id: &str, url: &str, section: &str) -> Hit {
        Hit {
            chunk_id: chunk_id.into(),
            source_id: "ks".into(),
            url: url.into(),
            title: "Help".into(),
            section: section.into(),
            text: String::new(),
            score: 1.0,
        }
    }

    #[test]
    fn cited_chunks_become_numbered_sources_and_invented_ones_vanish() {
        let mut retrieved = Retrieved::default();
        assert_eq!(retrieved.add(&hit("c1", "https://h/delivery#area", "Area")), "S1");
        assert_eq!(retrieved.add(&hit("c2", "https://h/refunds", "Refunds")), "S2");
        assert_eq!(retrieved.add(&hit("c1", "https://h/delivery#area", "Area")), "S1", "the same chunk keeps its id");
        let mut text = "We deliver to Brookside [S1]. Refunds take five days [S2, S9]. Free pizza [S7]!".to_owned();
        let sources = retrieved.resolve(&mut [&mut text]);
        assert_eq!(text, "We deliver to Brookside [1]. Refunds take five days [2]. Free pizza!");
        assert_eq!(sources.iter().map(|s| s.section.as_str()).collect::<Vec<_>>(), ["Area", "Refunds"]);
    }

    #[test]
    fn brackets_that_are_not_markers_are_left_alone() {
        let retrieved = Retrieved::default();
        let mut text = "A [link](https://x) and [1] and [Some words] and [".to_owned();
        let before = text.clone();
        assert!(retrieved.resolve(&mut [&mut text]).is_empty());
        assert_eq!(text, before);
    }

    #[test]
    fn a_source_cited_twice_is_listed_once_in_every_text() {
        let mut retrieved = Retrieved::default();
        retrieved.add(&hit("c1", "https://h/a", "A"));
        retrieved.add(&hit("c2", "https://h/a", "A"));
        let (mut a, mut b) = ("x [S2] y [S1]".to_owned(), "z [s1]".to_owned());
        let sources = retrieved.resolve(&mut [&mut a, &mut b]);
        assert_eq!((a.as_str(), b.as_str(), sources.len()), ("x [1] y [1]", "z [1]", 1));
    }
}

/// The sources under a reply as the widget shows them (the same markup
/// live and after a reload): a numbered list of links opened in a new tab
/// without opener, in the reader's language; every text escaped, and only
/// an http(s) address made a link.
pub fn sources_html(sources: &[CitedSource], lang: &str) -> String {
    use std::fmt::Write;
    use widget::html::escape;
    if sources.is_empty() {
        return String::new();
    }
    let heading = widget::wire::i18n::text(lang, "sources");
    let mut html = format!("<nav class=\"ca-src\" aria-label=\"{0}\"><p>{0}</p><ol>", escape(&heading));
    for source in sources {
        let label = match (source.title.trim(), source.section.trim()) {
            (title, "") => format!("<bdi>{}</bdi>", escape(title)),
            (title, section) if title == section => format!("<bdi>{}</bdi>", escape(title)),
            (title, section) => format!("<bdi>{}</bdi> · <bdi>{}</bdi>", escape(title), escape(section)),
        };
        let link = url::Url::parse(&source.url).ok().filter(|u| matches!(u.scheme(), "http" | "https"));
        let _ = match link {
            Some(url) => write!(
                html,
                "<li><a href=\"{}\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">{label}</a></li>",
                escape(url.as_str())
            ),
            None => write!(html, "<li>{label}</li>"),
        };
    }
    html.push_str("</ol></nav>");
    html
}

#[cfg(test)]
mod html_tests {
    use super::*;

    #[test]
    fn sources_are_drawn_escaped_and_only_web_addresses_are_links() {
        let sources = [
            CitedSource {
                url: "https://h.example/a?x=1&y=\"2\"#area".into(),
                title: "<b>Help</b>".into(),
                section: "Area".into(),
            },
            CitedSource { url: "javascript:alert(1)".into(), title: "Bad".into(), section: String::new() },
            CitedSource { url: String::new(), title: "Returns".into(), section: "Returns".into() },
        ];
        let html = sources_html(&sources, "ar");
        assert!(html.starts_with("<nav class=\"ca-src\" aria-label=\"المصادر\"><p>المصادر</p><ol>"), "{html}");
        assert!(html.contains(
            "<li><a href=\"https://h.example/a?x=1&amp;y=%222%22#area\" target=\"_blank\" rel=\"noopener noreferrer nofollow\"><bdi>&lt;b&gt;Help&lt;/b&gt;</bdi> · <bdi>Area</bdi></a></li>"
        ), "{html}");
        assert!(html.contains("<li><bdi>Bad</bdi></li>") && !html.contains("javascript"), "{html}");
        assert!(html.contains("<li><bdi>Returns</bdi></li>"), "{html}");
        assert_eq!(sources_html(&[], "en"), "");
    }
}
