//! Expectations checked against what a step did ([`Observed`]): each that
//! fails says what was expected and what came instead. The judge's
//! rubrics are graded by the runner (they need a model); everything else
//! is decided here.

use serde_json::Value;

use super::format::Expectation;

/// A tool call a step made (or the change it left waiting).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SeenCall {
    /// The name the model called it by (an MCP server's tools carry its
    /// prefix: `everything__get_sum`).
    pub name: String,
    pub arguments: Value,
}

/// A source a reply cited.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SeenSource {
    pub url: String,
    pub title: String,
}

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Observed {
    /// The assistant's reply as text (empty when it only asked for Apply).
    pub reply: String,
    pub tool_calls: Vec<SeenCall>,
    /// The change waiting for Apply when the step ended.
    pub pending_action: Option<SeenCall>,
    pub sources: Vec<SeenSource>,
    pub latency_ms: u64,
    pub tokens: u64,
    /// How the turn ended (`completed`, `pending_action`, …).
    pub stop_reason: String,
    /// What went wrong, as the visitor would have been told.
    pub errors: Vec<String>,
}

/// Whether a called tool is the one named: the same name, or an MCP
/// server's tool by its own name (`get_sum` is `everything__get_sum`).
pub fn same_tool(called: &str, named: &str) -> bool {
    called == named || called.rsplit_once("__").is_some_and(|(_, own)| own == named)
}

/// Whether `actual` holds everything `expected` says: objects by their
/// keys (others may be there too), lists element by element, numbers by
/// value (2 is 2.0), the rest exactly.
pub fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => {
            want.iter().all(|(k, v)| have.get(k).is_some_and(|h| subset(v, h)))
        }
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| subset(w, h))
        }
        (Value::Number(want), Value::Number(have)) => want.as_f64() == have.as_f64(),
        _ => expected == actual,
    }
}

/// Phrases that say "I don't know", in the widget's languages.
const DO_NOT_KNOW: &[&str] = &[
    "i don't know",
    "i do not know",
    "i don’t know",
    "i'm not sure",
    "i am not sure",
    "i couldn't find",
    "i could not find",
    "i can't find",
    "doesn't cover",
    "does not cover",
    "no information",
    "no sé",
    "no lo sé",
    "no tengo información",
    "je ne sais pas",
    "je n'ai pas d'information",
    "ich weiß nicht",
    "ich weiss nicht",
    "keine informationen",
    "わかりません",
    "分かりません",
    "存じません",
    "لا أعرف",
    "لا اعرف",
    "ليس لدي معلومات",
];

/// Whether the reply says it does not know.
pub fn says_it_does_not_know(reply: &str) -> bool {
    let reply = reply.to_lowercase();
    DO_NOT_KNOW.iter().any(|p| reply.contains(p))
}

/// The reply as quoted in a failure: at most 300 characters.
fn quoted(text: &str) -> String {
    let short: String = text.chars().take(300).collect();
    if short.len() < text.len() { format!("\"{short}…\"") } else { format!("\"{short}\"") }
}

fn calls(calls: &[SeenCall]) -> String {
    if calls.is_empty() {
        return "no tool call".into();
    }
    calls.iter().map(|c| format!("{}({})", c.name, c.arguments)).collect::<Vec<_>>().join(", ")
}

/// Checks `expectation` against `seen`: `None` when it holds (a judge's
/// rubric always: the runner grades it), else what failed.
pub fn check(expectation: &Expectation, seen: &Observed) -> Option<String> {
    let contains = |text: &str, ignore_case: bool| {
        if ignore_case { seen.reply.to_lowercase().contains(&text.to_lowercase()) } else { seen.reply.contains(text) }
    };
    let failed = |expected: String, got: String| Some(format!("expected {expected}; got {got}"));
    match expectation {
        Expectation::ToolCalled { name, arguments } => {
            let named: Vec<&SeenCall> = seen.tool_calls.iter().filter(|c| same_tool(&c.name, name)).collect();
            let matching = named.iter().any(|c| arguments.as_ref().is_none_or(|a| subset(a, &c.arguments)));
            if matching {
                return None;
            }
            let wanted = match arguments {
                Some(a) => format!("a call of {name} with {a}"),
                None => format!("a call of {name}"),
            };
            failed(wanted, calls(&seen.tool_calls))
        }
        Expectation::ToolNotCalled(name) => {
            if seen.tool_calls.iter().any(|c| same_tool(&c.name, name)) {
                failed(format!("no call of {name}"), calls(&seen.tool_calls))
            } else {
                None
            }
        }
        Expectation::PendingAction { tool, arguments } => match &seen.pending_action {
            Some(p) if same_tool(&p.name, tool) && arguments.as_ref().is_none_or(|a| subset(a, &p.arguments)) => None,
            other => failed(
                match arguments {
                    Some(a) => format!("a change of {tool} with {a} waiting for Apply"),
                    None => format!("a change of {tool} waiting for Apply"),
                },
                match other {
                    Some(p) => format!("{}({}) waiting", p.name, p.arguments),
                    None => format!("no change waiting (the turn ended {})", seen.stop_reason),
                },
            ),
        },
        Expectation::NoPendingAction => seen
            .pending_action
            .as_ref()
            .and_then(|p| failed("no change waiting for Apply".into(), format!("{}({}) waiting", p.name, p.arguments))),
        Expectation::Contains { text, ignore_case } => {
            if contains(text, *ignore_case) {
                None
            } else {
                failed(format!("the reply to contain \"{text}\""), quoted(&seen.reply))
            }
        }
        Expectation::NotContains { text, ignore_case } => {
            if contains(text, *ignore_case) {
                failed(format!("the reply not to contain \"{text}\""), quoted(&seen.reply))
            } else {
                None
            }
        }
        Expectation::ContainsSome { texts, ignore_case, all } => {
            let found = texts.iter().filter(|t| contains(t, *ignore_case)).count();
            let holds = if *all { found == texts.len() } else { found > 0 };
            if holds {
                None
            } else {
                let which = if *all { "all" } else { "one" };
                failed(format!("the reply to contain {which} of {texts:?}"), quoted(&seen.reply))
            }
        }
        Expectation::Regex { pattern, matches } => {
            // Checked when the suite was read.
            let regex = regex::Regex::new(pattern).ok()?;
            if regex.is_match(&seen.reply) == *matches {
                None
            } else {
                let how = if *matches { "to match" } else { "not to match" };
                failed(format!("the reply {how} /{pattern}/"), quoted(&seen.reply))
            }
        }
        Expectation::Language(code) => {
            if super::language::is_in(&seen.reply, code) {
                None
            } else {
                let detected = super::language::detect(&seen.reply).unwrap_or("no language it can tell");
                failed(format!("a reply in {code}"), format!("{detected}: {}", quoted(&seen.reply)))
            }
        }
        Expectation::SourcesInclude(wanted) => {
            let lower = wanted.to_lowercase();
            if seen
                .sources
                .iter()
                .any(|s| s.url.to_lowercase().contains(&lower) || s.title.to_lowercase().contains(&lower))
            {
                None
            } else {
                let cited: Vec<&str> = seen.sources.iter().map(|s| s.url.as_str()).collect();
                failed(
                    format!("a cited source with \"{wanted}\""),
                    if cited.is_empty() { "no source".into() } else { cited.join(", ") },
                )
            }
        }
        Expectation::SaysItDoesNotKnow(wanted) => {
            if says_it_does_not_know(&seen.reply) == *wanted {
                None
            } else if *wanted {
                failed("the reply to say it does not know".into(), quoted(&seen.reply))
            } else {
                failed("an answer, not \"I don't know\"".into(), quoted(&seen.reply))
            }
        }
        Expectation::Judge(_) => None,
        Expectation::MaxLatencyMs(limit) => (seen.latency_ms > *limit)
            .then(|| format!("expected the reply within {limit} ms; got {} ms", seen.latency_ms)),
        Expectation::MaxTokens(limit) => {
            (seen.tokens > *limit).then(|| format!("expected at most {limit} tokens; got {}", seen.tokens))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn seen() -> Observed {
        Observed {
            reply: "Added 2 × Margherita to your cart. [1]".into(),
            tool_calls: vec![SeenCall { name: "show_menu".into(), arguments: json!({}) }],
            pending_action: Some(SeenCall {
                name: "add_to_cart".into(),
                arguments: json!({"item": "stone_pizza", "quantity": 2, "notes": "no basil"}),
            }),
            sources: vec![SeenSource {
                url: "https://shop.example/help/delivery#area".into(),
                title: "Delivery".into(),
            }],
            latency_ms: 420,
            tokens: 900,
            stop_reason: "pending_action".into(),
            errors: vec![],
        }
    }

    /// Each kind, once holding and once failing with what it got.
    #[test]
    fn each_kind_passes_and_fails_saying_why() {
        let seen = seen();
        let holds = |e: Expectation| assert_eq!(check(&e, &seen), None, "{e:?}");
        let fails = |e: Expectation, says: &str| {
            let failure = check(&e, &seen).unwrap_or_else(|| panic!("{e:?} should fail"));
            assert!(failure.contains(says), "{e:?}: {failure}");
        };
        holds(Expectation::ToolCalled { name: "show_menu".into(), arguments: None });
        fails(Expectation::ToolCalled { name: "clear_cart".into(), arguments: None }, "got show_menu({})");
        holds(Expectation::ToolCalled { name: "show_menu".into(), arguments: Some(json!({})) });
        fails(Expectation::ToolCalled { name: "show_menu".into(), arguments: Some(json!({"x": 1})) }, "with {\"x\":1}");
        holds(Expectation::ToolNotCalled("clear_cart".into()));
        fails(Expectation::ToolNotCalled("show_menu".into()), "expected no call of show_menu");
        holds(Expectation::PendingAction { tool: "add_to_cart".into(), arguments: Some(json!({"quantity": 2.0})) });
        fails(
            Expectation::PendingAction { tool: "add_to_cart".into(), arguments: Some(json!({"quantity": 3})) },
            "waiting",
        );
        fails(Expectation::NoPendingAction, "add_to_cart(");
        holds(Expectation::Contains { text: "margherita".into(), ignore_case: true });
        fails(Expectation::Contains { text: "margherita".into(), ignore_case: false }, "got \"Added 2");
        holds(Expectation::NotContains { text: "sorry".into(), ignore_case: true });
        fails(Expectation::NotContains { text: "ADDED".into(), ignore_case: true }, "not to contain");
        holds(Expectation::ContainsSome { texts: vec!["x".into(), "cart".into()], ignore_case: false, all: false });
        fails(
            Expectation::ContainsSome { texts: vec!["x".into(), "cart".into()], ignore_case: false, all: true },
            "all of",
        );
        holds(Expectation::Regex { pattern: r"\d × ".into(), matches: true });
        fails(Expectation::Regex { pattern: "cart".into(), matches: false }, "not to match /cart/");
        holds(Expectation::Language("en".into()));
        fails(Expectation::Language("es".into()), "expected a reply in es; got eng");
        holds(Expectation::SourcesInclude("/help/delivery".into()));
        holds(Expectation::SourcesInclude("delivery".into()));
        fails(Expectation::SourcesInclude("refunds".into()), "got https://shop.example/help/delivery#area");
        fails(Expectation::SaysItDoesNotKnow(true), "to say it does not know");
        holds(Expectation::SaysItDoesNotKnow(false));
        holds(Expectation::MaxLatencyMs(500));
        fails(Expectation::MaxLatencyMs(400), "within 400 ms; got 420 ms");
        holds(Expectation::MaxTokens(900));
        fails(Expectation::MaxTokens(899), "at most 899 tokens; got 900");
    }

    #[test]
    fn mcp_tools_match_by_their_own_name_and_arguments_as_a_subset() {
        assert!(same_tool("everything__get_sum", "get_sum") && same_tool("get_sum", "get_sum"));
        assert!(!same_tool("everything__get_sum", "sum") && !same_tool("get_sum_x", "get_sum"));
        assert!(subset(&json!({"a": {"b": [1, {"c": 2}]}}), &json!({"a": {"b": [1.0, {"c": 2, "d": 3}], "e": 0}})));
        assert!(!subset(&json!({"a": [1]}), &json!({"a": [1, 2]})));
        assert!(!subset(&json!({"a": "1"}), &json!({"a": 1})));
    }

    #[test]
    fn i_dont_know_is_heard_in_the_widgets_languages() {
        for reply in [
            "I don't know: the help center doesn't cover that.",
            "Lo siento, no sé la respuesta.",
            "Je ne sais pas.",
            "Das weiß ich nicht — ich weiß nicht genau.",
            "申し訳ありませんが、わかりません。",
            "عذراً، لا أعرف.",
        ] {
            assert!(says_it_does_not_know(reply), "{reply}");
        }
        assert!(!says_it_does_not_know("We deliver to Brookside on weekdays."));
    }
}
