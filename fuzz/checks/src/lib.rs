//! The properties the fuzzers check, one module per target: each `check`
//! takes the fuzzer's bytes and panics when a rule breaks. The cargo fuzz
//! targets (`fuzz/fuzz_targets/`, nightly, address sanitizer) call them, and
//! so does the ordinary test build (`tests/tests/api/fuzzing.rs`), which
//! replays the committed seeds and a fixed set of inputs made from them on
//! every `./dev test` without a second build of the server.
//!
//! What they share: JSON built from the fuzzer's bytes with the keys our
//! readers look for, so the fuzzer reaches past "not JSON"; and a way to cut
//! one input into chunks as a network would.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

pub mod claims;
pub mod component;
pub mod display_cards;
pub mod embed_token;
pub mod launch_token;
pub mod markdown;
pub mod pdf;
pub mod sse_provider;

/// A target's rule: panics when the input breaks it.
pub type Check = fn(&[u8]);

/// Every target by name (the name of its fuzz target and seed folder).
pub const TARGETS: &[(&str, Check)] = &[
    ("component", component::check),
    ("display_cards", display_cards::check),
    ("embed_token", embed_token::check),
    ("launch_token", launch_token::check),
    ("markdown", markdown::check),
    ("pdf", pdf::check),
    ("sse_provider", sse_provider::check),
];

/// Keys the readers under test look for, and a few neighbours.
const KEYS: &[&str] = &[
    "display",
    "title",
    "url",
    "image",
    "subtitle",
    "badges",
    "component",
    "kind",
    "data",
    "tools",
    "update",
    "items",
    "cart",
    "lines",
    "id",
    "name",
    "price",
    "available",
    "item",
    "quantity",
    "notes",
    "status",
    "error",
];

/// Strings that matter to them: schemes, hosts, markup, tool and kind names.
const WORDS: &[&str] = &[
    "https://shop.example/p/1",
    "http://a.example",
    "javascript:alert(1)",
    "data:text/html,x",
    "//evil.example",
    "https://",
    "/relative",
    "menu_cart",
    "add_to_cart",
    "clear_cart",
    "<script>",
    "Mains",
    "",
    " ",
    "\u{202e}",
    "\u{0}",
    "é",
    "x\ny",
];

/// A JSON value of depth at most `depth`.
pub fn json(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let pick = if depth == 0 { u.int_in_range(0..=4)? } else { u.int_in_range(0..=6)? };
    Ok(match pick {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => match u.int_in_range(0..=2)? {
            0 => Value::Number(Number::from(u.arbitrary::<i64>()?)),
            1 => Value::Number(Number::from(u.arbitrary::<u64>()?)),
            _ => Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        },
        3 => Value::String(string(u)?),
        4 => Value::String((*u.choose(WORDS)?).to_owned()),
        5 => {
            let n = u.int_in_range(0..=8)?;
            Value::Array((0..n).map(|_| json(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=8)?;
            let mut map = Map::new();
            for _ in 0..n {
                let key = if u.ratio(3, 4)? { (*u.choose(KEYS)?).to_owned() } else { string(u)? };
                map.insert(key, json(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

/// A string, sometimes long.
pub fn string(u: &mut Unstructured<'_>) -> Result<String> {
    let s: String = u.arbitrary()?;
    Ok(if u.ratio(1, 16)? { s.repeat(usize::from(u.int_in_range(1u8..=200)?)) } else { s })
}

/// `bytes` cut at the positions the fuzzer picks.
pub fn chunks<'a>(u: &mut Unstructured<'_>, bytes: &'a [u8]) -> Result<Vec<&'a [u8]>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let take = u.int_in_range(1..=rest.len())?;
        let (chunk, tail) = rest.split_at(take);
        out.push(chunk);
        rest = tail;
    }
    Ok(out)
}

/// `s` with a character changed, added or removed.
pub fn mutate(u: &mut Unstructured<'_>, s: &str) -> Result<String> {
    let mut chars: Vec<char> = s.chars().collect();
    let at = u.int_in_range(0..=chars.len())?;
    match u.int_in_range(0..=2)? {
        0 => chars.insert(at, u.arbitrary()?),
        1 if at < chars.len() => {
            chars.remove(at);
        }
        _ if at < chars.len() => chars[at] = u.arbitrary()?,
        _ => chars.push(u.arbitrary()?),
    }
    Ok(chars.into_iter().collect())
}
