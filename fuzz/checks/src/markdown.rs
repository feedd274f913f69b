//! The model's markdown rendered for the widget: whatever the text, the
//! HTML holds only the formatting tags ammonia is told to keep, links are
//! absolute http(s) opening in a new tab without referrer, and no other
//! attribute survives.

/// The tags of `html` as (name, attributes): every `<` ammonia emits opens
/// a tag (text is escaped), and its attribute values are double-quoted.
fn tags(html: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        rest = &rest[start + 1..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '/').collect();
        rest = &rest[name.len()..];
        let mut attributes = Vec::new();
        loop {
            rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix('>') {
                rest = after;
                break;
            }
            let key: String = rest.chars().take_while(|c| *c != '=' && *c != '>' && !c.is_whitespace()).collect();
            assert!(!key.is_empty(), "unreadable tag in {html:?}");
            rest = &rest[key.len()..];
            let value = match rest.strip_prefix("=\"") {
                Some(after) => {
                    let end = after.find('"').expect("a quoted value ends");
                    rest = &after[end + 1..];
                    after[..end].to_owned()
                }
                None => String::new(),
            };
            attributes.push((key, value));
        }
        out.push((name.trim_start_matches('/').to_owned(), attributes));
    }
    out
}

/// One input: the fuzzer's bytes, read as text (others are skipped, as
/// libFuzzer's `&str` targets do).
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let html = server::markdown::render(text);
    for (name, attributes) in tags(&html) {
        assert!(server::markdown::TAGS.contains(&name.as_str()), "tag <{name}> in {html:?}");
        for (key, value) in attributes {
            match (name.as_str(), key.as_str()) {
                ("a", "href") => {
                    let url = url::Url::parse(&value.replace("&amp;", "&")).expect("an absolute link");
                    assert!(matches!(url.scheme(), "http" | "https"), "{value:?}");
                }
                ("a", "rel") => assert_eq!(value, "noopener noreferrer nofollow"),
                ("a", "target") => assert_eq!(value, "_blank"),
                ("ol", "start") => {}
                _ => panic!("attribute {key}={value:?} on <{name}> in {html:?}"),
            }
        }
    }
}
