//! Escaping text for HTML, shared by the widget's hand-drawn markup (the
//! MenuCart) and the server's own pages.

/// Text for HTML, in element content and in quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number as text without Rust's float formatting (its code would be a
/// large part of the widget's WASM): whole numbers exactly, others to six
/// decimals; nothing for what is not finite or too large to be exact.
pub fn number(n: f64) -> String {
    let scaled = (n.abs() * 1e6).round();
    if !scaled.is_finite() || scaled > 9.0e15 {
        return String::new();
    }
    let scaled = scaled as u64;
    let (whole, fraction) = (scaled / 1_000_000, scaled % 1_000_000);
    let mut text = if n < 0.0 && scaled > 0 { format!("-{whole}") } else { whole.to_string() };
    if fraction > 0 {
        let digits = format!("{fraction:06}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_written_without_float_formatting() {
        for (n, text) in [(42.0, "42"), (2.75, "2.75"), (-0.5, "-0.5"), (0.0, "0"), (1e-9, "0"), (f64::NAN, "")] {
            assert_eq!(super::number(n), text, "{n}");
        }
    }

    #[test]
    fn markup_and_both_quotes_are_escaped() {
        assert_eq!(
            super::escape(r#"<a href="x" title='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(super::escape("plain é"), "plain é");
    }
}
