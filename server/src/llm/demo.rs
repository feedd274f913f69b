//! The built-in offline demo model: an OpenAI-compatible
//! `POST /demo-model/v1/chat/completions` (streaming and not, with
//! `tool_calls`) that answers by simple rules, so the whole loop runs on a
//! machine with no model and no network. The engine reaches it over HTTP
//! through the same client as any other endpoint.
//!
//! The rules, in order:
//! 1. After tool results, it reports them: a menu (`items` with `price`
//!    and `kind`) as a one-line summary (the cards show the dishes), then
//!    the result's `status` line; or the error the engine passed back.
//! 2. On a user message, it calls the first offered tool whose name, read
//!    with spaces for underscores, appears in the message ("show menu"), or
//!    a tool with "menu" in its name when the message mentions the menu.
//! 3. With the Acme Bistro's tools offered, it understands "add two
//!    margheritas (no basil)", "remove a margherita", "what's in my cart",
//!    "check out" and "clear my cart" (dishes by a keyword of their name,
//!    quantities in digits or words, notes in parentheses).
//! 4. With the workspace's knowledge offered (`search_knowledge`), a
//!    question ("do you deliver to Brookside?") is searched, and answered
//!    with the best passage's sentence that shares most words with it,
//!    cited by its id (`[S1]`) — or with "I don't know" when nothing matched.
//! 5. A greeting gets a greeting; anything else gets a short note saying
//!    what it can do, naming the tools it was offered.
//!
//! Before these, "what dish is this?" with a photo attached is answered
//! from the photo's name (it sees no image), and the rules read only the
//! user's own words, never the files they attached.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Pause between streamed pieces, so streaming is visible in the demo.
const PIECE_DELAY: Duration = Duration::from_millis(12);

/// What the demo model decided to do.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Text(String),
    Call { name: String, arguments: Value },
}

/// `POST /demo-model/v1/chat/completions`.
pub async fn chat_completions(body: Option<Json<Value>>) -> Response {
    let Some(Json(body)) = body else {
        return error_response(StatusCode::BAD_REQUEST, "the body must be a JSON chat-completions request");
    };
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return error_response(StatusCode::BAD_REQUEST, "`messages` must be an array");
    };
    let tools: Vec<String> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let reply = decide(messages, &tools);
    let prompt_tokens = (serde_json::to_string(messages).map(|s| s.len()).unwrap_or(0) as u64).div_ceil(4);
    let model = body.get("model").and_then(Value::as_str).unwrap_or("demo").to_owned();
    if body.get("stream").and_then(Value::as_bool).unwrap_or(false) {
        stream_reply(reply, model, prompt_tokens)
    } else {
        Json(complete_reply(reply, &model, prompt_tokens)).into_response()
    }
}

/// Applies the rules in the module documentation.
pub fn decide(messages: &[Value], tools: &[String]) -> Reply {
    let Some(last) = messages.last() else {
        return Reply::Text(help(tools));
    };
    if last.get("role").and_then(Value::as_str) == Some("tool") {
        let results: Vec<&Value> =
            messages.iter().rev().take_while(|m| m.get("role").and_then(Value::as_str) == Some("tool")).collect();
        let asked = messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .map(|m| content_text(m).to_lowercase())
            .unwrap_or_default();
        let parts: Vec<String> = results.iter().rev().map(|m| describe_result(&content_text(m), &asked)).collect();
        return Reply::Text(parts.join("\n\n"));
    }
    let whole = content_text(last).to_lowercase();
    // The user's own words: what follows is what they attached (named and
    // quoted by the engine), which no rule below may take for a request.
    let said = whole.split("\n\n[the visitor attached").next().unwrap_or_default();
    let said = said.split("\n\nthe visitor attached").next().unwrap_or_default().to_owned();
    if let Some(reply) = about_a_photo(&said, &whole) {
        return reply;
    }
    if let Some(reply) = bistro_phrase(&said, tools) {
        return reply;
    }
    if spanish(&said) {
        if let Some(menu) = tools.iter().find(|t| t.as_str() == "show_menu")
            && (said.contains("menú") || said.contains("menu") || said.contains("carta") || said.contains("platos"))
        {
            return Reply::Call { name: menu.clone(), arguments: json!({}) };
        }
        return Reply::Text(ayuda(tools));
    }
    let words = said.split_whitespace().collect::<Vec<_>>().join(" ");
    for tool in tools {
        if words.contains(&phrase(tool)) || (tool.contains("menu") && said.contains("menu")) {
            return Reply::Call { name: tool.clone(), arguments: json!({}) };
        }
    }
    if let Some(search) = tools.iter().find(|t| *t == "search_knowledge" || t.ends_with("__search_knowledge"))
        && is_question(&said)
    {
        return Reply::Call { name: search.clone(), arguments: json!({ "query": said.trim() }) };
    }
    let greeting = ["hi", "hello", "hey", "good morning", "good evening"];
    let trimmed = said.trim().trim_end_matches(['!', '.']);
    if greeting.contains(&trimmed) {
        return Reply::Text(format!("Hello! {}", help(tools)));
    }
    Reply::Text(help(tools))
}

/// "What dish is this?" with a photo (or a photo sent without a word):
/// the offline demo sees no image, so it answers from the image's name —
/// and says so.
fn about_a_photo(said: &str, whole: &str) -> Option<Reply> {
    let asks = ["what dish", "which dish", "what is this", "what's this", "what is it"];
    if !said.trim().is_empty() && !asks.iter().any(|a| said.contains(a)) {
        return None;
    }
    let marker = "[the visitor attached an image: \"";
    let at = whole.find(marker)? + marker.len();
    let name = whole[at..].split('"').next()?;
    let dish =
        DISH_WORDS.iter().filter_map(|(word, _)| name.find(word).map(|at| (*word, at))).min_by_key(|(_, at)| *at);
    Some(Reply::Text(match dish {
        Some((word, _)) => format!(
            "Going by the photo's name, “{name}”, that looks like our **{word}**. (I'm the offline demo \
             model: I read the file's name, not the picture; a vision model would look at the image itself.)"
        ),
        None => format!(
            "I'm the offline demo model: I can't see images, and the photo's name, “{name}”, names no dish of \
             ours. Connect a vision model to have the picture itself looked at."
        ),
    }))
}

/// The Acme Bistro's phrases, when its tools are offered: "add two
/// margheritas (no basil)", "remove a margherita", "what's in my cart",
/// "check out", "clear my cart".
fn bistro_phrase(said: &str, tools: &[String]) -> Option<Reply> {
    let offered = |name: &str| tools.iter().any(|t| t == name);
    let call = |name: &str, arguments: Value| Some(Reply::Call { name: name.into(), arguments });
    if offered("clear_cart") && (said.contains("clear") || said.contains("empty")) && said.contains("cart") {
        return call("clear_cart", json!({}));
    }
    // The MenuCart's Checkout sends its catalogue's words, in any language.
    let checkout_button = widget::wire::i18n::LANGUAGES
        .iter()
        .any(|lang| said.trim() == widget::wire::i18n::text(lang, "checkout_message").to_lowercase());
    if offered("create_checkout")
        && (checkout_button || said.contains("check out") || said.contains("checkout") || said.contains("pay"))
    {
        return call("create_checkout", json!({}));
    }
    if offered("show_menu") && said.contains("cart") && !said.contains("add") && !said.contains("remove") {
        return call("show_menu", json!({}));
    }
    let (item, position) = dish_in(said)?;
    if offered("remove_from_cart") && (said.contains("remove") || said.contains("drop") || said.contains("take off")) {
        return call("remove_from_cart", json!({ "item": item }));
    }
    if offered("add_to_cart") && (said.contains("add") || said.contains("order") || said.contains("i'd like")) {
        let mut arguments = json!({ "item": item, "quantity": quantity_before(&said[..position]) });
        if let (Some(open), Some(close)) = (said.find('('), said.rfind(')'))
            && open < close
        {
            let notes = said[open + 1..close].trim();
            if !notes.is_empty() {
                arguments["notes"] = notes.into();
            }
        }
        return Some(Reply::Call { name: "add_to_cart".into(), arguments });
    }
    None
}

/// The first dish mentioned and where.
fn dish_in(said: &str) -> Option<(&'static str, usize)> {
    DISH_WORDS.iter().filter_map(|(word, id)| said.find(word).map(|at| (*id, at))).min_by_key(|(_, at)| *at)
}

/// The words that name a dish of the bistro's, and its menu id.
const DISH_WORDS: [(&str, &str); 9] = [
    ("margherita", "stone_pizza"),
    ("pizza", "stone_pizza"),
    ("roast", "roast_bowl"),
    ("bowl", "roast_bowl"),
    ("salad", "house_salad"),
    ("tart", "lemon_tart"),
    ("lemon", "lemon_tart"),
    ("water", "sparkling"),
    ("sparkling", "sparkling"),
];

/// The number said just before the dish: digits or a word; one otherwise.
fn quantity_before(text: &str) -> u32 {
    const NUMBERS: [&str; 10] = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    text.split(|c: char| !c.is_alphanumeric())
        .rev()
        .filter(|w| !w.is_empty())
        .take(3)
        .find_map(|w| w.parse::<u32>().ok().or_else(|| NUMBERS.iter().position(|n| *n == w).map(|i| i as u32 + 1)))
        .filter(|n| (1..=20).contains(n))
        .unwrap_or(1)
}

fn help(tools: &[String]) -> String {
    if tools.is_empty() {
        return "I'm the offline demo model. No tools are connected right now, so I can only chat.".into();
    }
    let searches = tools.iter().any(|t| t == "search_knowledge" || t.ends_with("__search_knowledge"));
    let names: Vec<String> =
        tools.iter().filter(|t| !t.ends_with("search_knowledge")).map(|t| format!("“{}”", phrase(t))).collect();
    let mut text =
        String::from("I'm the offline demo model: I follow simple rules instead of understanding everything.");
    if !names.is_empty() {
        text.push_str(&format!(" Ask me for one of these and I'll run it: {}.", names.join(", ")));
    }
    if searches {
        text.push_str(
            " Or ask me a question, such as “Do you deliver to Brookside?”, and I'll look in the help center.",
        );
    }
    text
}

/// The words that call `tool`, as its help names it: `_`, `-` and a
/// source's `__` prefix read as single spaces (`get-tiny-image`,
/// `everything__get_sum` → "get tiny image", "everything get sum").
fn phrase(tool: &str) -> String {
    tool.replace(['_', '-'], " ").split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Whether the visitor writes in Spanish: the demo answers its menu and
/// its help in Spanish then (the widget's other languages get English).
fn spanish(said: &str) -> bool {
    const WORDS: [&str; 12] = [
        "qué",
        "que",
        "hola",
        "menú",
        "carta",
        "quiero",
        "añade",
        "por favor",
        "cuánto",
        "tienen",
        "platos",
        "gracias",
    ];
    said.contains(['¿', '¡'])
        || said.split(|c: char| !c.is_alphanumeric()).filter(|w| WORDS.contains(w)).count() >= 2
        || said.split(|c: char| !c.is_alphanumeric()).any(|w| matches!(w, "menú" | "añade" | "hola"))
}

/// The demo's help, in Spanish.
fn ayuda(tools: &[String]) -> String {
    let mut text =
        String::from("Soy el modelo de demostración sin conexión: sigo reglas sencillas en lugar de entenderlo todo.");
    if tools.iter().any(|t| t == "show_menu") {
        text.push_str(" Pídeme el menú («¿qué hay en el menú?») y te lo enseño.");
    }
    text
}

/// Whether the visitor asks something (rather than asks for something to be done).
fn is_question(said: &str) -> bool {
    let said = said.trim();
    let openers = [
        "what", "when", "where", "which", "who", "why", "how", "do ", "does", "can ", "could", "is ", "are ", "will",
        "should", "may ",
    ];
    said.ends_with('?') || openers.iter().any(|o| said.starts_with(o))
}

/// A knowledge search's passages, answered as the demo can: the sentence
/// of the best passage that shares the most words with the question,
/// cited by its id; or, with nothing found, that it does not know.
fn from_knowledge(results: &[Value], asked: &str) -> String {
    let Some(best) = results.first() else {
        return "I don't know: the help center doesn't cover that. You could ask the restaurant directly.".into();
    };
    let id = best.get("id").and_then(Value::as_str).unwrap_or("S1");
    let text = best.get("text").and_then(Value::as_str).unwrap_or_default();
    let words: Vec<&str> = asked.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() >= 4).collect();
    let stem = |w: &str| w.chars().take(5).collect::<String>();
    let sentence = text
        .split_inclusive(['.', '!', '?', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .enumerate()
        .max_by_key(|(at, s)| {
            let lower = s.to_lowercase();
            (words.iter().filter(|w| lower.contains(&stem(w))).count(), std::cmp::Reverse(*at))
        })
        .map_or(text, |(_, s)| s);
    format!("{sentence} [{id}]")
}

/// The text of a message's `content`, whether a string or an array of parts.
fn content_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

fn describe_result(content: &str, asked: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(content) else {
        return "The tool answered, but not in a form I can read.".into();
    };
    if let (Some(results), Some(_)) = (value.get("results").and_then(Value::as_array), value.get("note")) {
        return from_knowledge(results, asked);
    }
    if let Some(error) = value.get("error").and_then(Value::as_str) {
        return format!("I couldn't do that: {error}");
    }
    if asked.contains("cart")
        && let Some(lines) = value.pointer("/cart/lines").and_then(Value::as_array)
    {
        if lines.is_empty() {
            return "Your cart is empty.".into();
        }
        let mut text = String::from("In your cart:\n");
        for line in lines {
            let name = line.get("name").and_then(Value::as_str).unwrap_or("(dish)");
            let quantity = line.get("quantity").and_then(Value::as_i64).unwrap_or(0);
            let total = line.get("line_total").and_then(Value::as_i64).unwrap_or(0);
            let notes = line.get("notes").and_then(Value::as_str).filter(|n| !n.is_empty());
            text.push_str(&format!(
                "\n- {quantity} × **{name}**{} — ${total}",
                notes.map(|n| format!(" ({n})")).unwrap_or_default()
            ));
        }
        let subtotal = value.pointer("/cart/subtotal").and_then(Value::as_i64).unwrap_or(0);
        text.push_str(&format!("\n\nSubtotal: **${subtotal}**."));
        return text;
    }
    if let Some(items) = value.get("items").and_then(Value::as_array) {
        // The cards show the dishes; the reply sums them up instead of retyping them.
        let prices: Vec<u64> = items.iter().filter_map(|i| i.get("price").and_then(Value::as_u64)).collect();
        if spanish(asked) {
            let mut text = format!("Aquí está nuestro menú: **{} platos**", items.len());
            if let (Some(low), Some(high)) = (prices.iter().min(), prices.iter().max()) {
                text.push_str(&format!(", de {low} a {high} dólares"));
            }
            text.push_str(". ¿Quieres que añada alguno a tu pedido?");
            return text;
        }
        let mut kinds: Vec<&str> = Vec::new();
        for kind in items.iter().filter_map(|i| i.get("kind").and_then(Value::as_str)) {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        let dishes = if items.len() == 1 { "dish" } else { "dishes" };
        let mut text = format!("Here is the menu: **{} {dishes}**", items.len());
        if !kinds.is_empty() {
            text.push_str(&format!(" across {}", kinds.join(", ")));
        }
        if let (Some(low), Some(high)) = (prices.iter().min(), prices.iter().max()) {
            text.push_str(&format!(", from ${low} to ${high}"));
        }
        text.push('.');
        if let Some(status) = value.get("status").and_then(Value::as_str) {
            text.push_str(&format!("\n\n{status}"));
        }
        return text;
    }
    // An MCP tool's result: what it said, in its words.
    if let Some(text) = value.get("text").and_then(Value::as_str).filter(|t| !t.trim().is_empty()) {
        return text.chars().take(500).collect();
    }
    match value.get("status").and_then(Value::as_str) {
        Some(status) => status.to_owned(),
        None => "Done.".into(),
    }
}

fn completion_id() -> String {
    crate::ids::new_id("chatcmpl")
}

fn complete_reply(reply: Reply, model: &str, prompt_tokens: u64) -> Value {
    let created = crate::ids::now_secs();
    let (message, finish, completion_tokens) = match reply {
        Reply::Text(text) => {
            let n = (text.len() as u64).div_ceil(4);
            (json!({"role": "assistant", "content": text}), "stop", n)
        }
        Reply::Call { name, arguments } => {
            let arguments = arguments.to_string();
            let n = ((name.len() + arguments.len()) as u64).div_ceil(4);
            let call = json!({"id": crate::ids::new_id("call"), "type": "function",
                "function": {"name": name, "arguments": arguments}});
            (json!({"role": "assistant", "content": null, "tool_calls": [call]}), "tool_calls", n)
        }
    };
    json!({
        "id": completion_id(), "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })
}

fn stream_reply(reply: Reply, model: String, prompt_tokens: u64) -> Response {
    let id = completion_id();
    let created = crate::ids::now_secs();
    let chunk = move |delta: Value, finish: Option<&str>| -> String {
        let body = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {body}\n\n")
    };
    let mut pieces: Vec<String> = vec![chunk(json!({"role": "assistant"}), None)];
    let completion_tokens;
    match reply {
        Reply::Text(text) => {
            completion_tokens = (text.len() as u64).div_ceil(4);
            for piece in split_for_streaming(&text) {
                pieces.push(chunk(json!({"content": piece}), None));
            }
            pieces.push(chunk(json!({}), Some("stop")));
        }
        Reply::Call { name, arguments } => {
            let arguments = arguments.to_string();
            completion_tokens = ((name.len() + arguments.len()) as u64).div_ceil(4);
            let call_id = crate::ids::new_id("call");
            pieces.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
            pieces.push(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}), None));
            pieces.push(chunk(json!({}), Some("tool_calls")));
        }
    }
    let usage = json!({"id": "usage", "object": "chat.completion.chunk", "created": created, "model": "demo",
        "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens}});
    pieces.push(format!("data: {usage}\n\n"));
    pieces.push("data: [DONE]\n\n".into());

    let stream = futures::stream::iter(pieces.into_iter().enumerate()).then(|(i, piece)| async move {
        if i > 0 {
            tokio::time::sleep(PIECE_DELAY).await;
        }
        Ok::<_, Infallible>(piece)
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .expect("static headers are valid")
}

use futures::StreamExt as _;

/// A few words a piece, keeping whitespace, so the text streams visibly.
fn split_for_streaming(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for ch in text.chars() {
        current.push(ch);
        if ch == ' ' || ch == '\n' {
            words += 1;
            if words == 3 {
                pieces.push(std::mem::take(&mut current));
                words = 0;
            }
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

fn error_response(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": {"message": message, "type": "invalid_request_error"}}))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    #[test]
    fn asking_for_the_menu_calls_the_menu_tool() {
        let reply = decide(&[user("Show me the menu, please")], &["show_menu".into()]);
        assert_eq!(reply, Reply::Call { name: "show_menu".into(), arguments: json!({}) });
    }

    #[test]
    fn a_tool_named_in_words_is_called() {
        let reply = decide(&[user("please list tasks")], &["create_task".into(), "list_tasks".into()]);
        assert_eq!(reply, Reply::Call { name: "list_tasks".into(), arguments: json!({}) });
    }

    #[test]
    fn its_help_names_each_tool_in_the_words_that_call_it() {
        let tools: Vec<String> = ["get-tiny-image", "everything__get_sum", "show_menu"].map(String::from).to_vec();
        let Reply::Text(help) = decide(&[user("what can you do?")], &tools) else { panic!("a help text") };
        assert!(help.contains("“get tiny image”, “everything get sum”, “show menu”"), "{help}");
        for (asked, tool) in
            [("get tiny image please", "get-tiny-image"), ("everything  get sum", "everything__get_sum")]
        {
            assert!(
                matches!(decide(&[user(asked)], &tools), Reply::Call { ref name, .. } if name == tool),
                "{asked} calls {tool}"
            );
        }
    }

    #[test]
    fn without_a_matching_tool_it_explains_itself() {
        let Reply::Text(text) = decide(&[user("what's the weather")], &["show_menu".into()]) else { panic!() };
        assert!(text.contains("offline demo model") && text.contains("show menu"));
    }

    #[test]
    fn a_menu_result_is_summed_up_not_retyped() {
        let result = json!({"status": "Menu ready.", "items": [
            {"name": "Lemon Tart", "price": 8, "kind": "Desserts"},
            {"name": "Sparkling Water", "price": 4, "kind": "Drinks"},
        ]});
        let messages = [
            user("menu"),
            json!({"role": "assistant", "tool_calls": []}),
            json!({"role": "tool", "tool_call_id": "c", "content": result.to_string()}),
        ];
        let Reply::Text(text) = decide(&messages, &["show_menu".into()]) else { panic!() };
        assert!(text.starts_with("Here is the menu: **2 dishes** across Desserts, Drinks, from $4 to $8."), "{text}");
        assert!(text.ends_with("Menu ready."));
    }

    #[test]
    fn a_question_in_spanish_is_answered_in_spanish() {
        let tools = vec!["show_menu".to_owned()];
        let asked = user("¿Qué hay en el menú?");
        assert!(
            matches!(decide(std::slice::from_ref(&asked), &tools), Reply::Call { ref name, .. } if name == "show_menu")
        );
        let result = json!({"items": [{"name": "Lemon Tart", "price": 8}, {"name": "Sparkling Water", "price": 4}]});
        let messages = [
            asked,
            json!({"role": "assistant", "tool_calls": []}),
            json!({"role": "tool", "tool_call_id": "c", "content": result.to_string()}),
        ];
        let Reply::Text(text) = decide(&messages, &tools) else { panic!() };
        assert!(text.starts_with("Aquí está nuestro menú: **2 platos**, de 4 a 8 dólares."), "{text}");
        let Reply::Text(help) = decide(&[user("hola, ¿cómo estás?")], &tools) else { panic!() };
        assert!(help.starts_with("Soy el modelo de demostración"), "{help}");
        let Reply::Text(english) = decide(&[user("what's the weather")], &tools) else { panic!() };
        assert!(english.contains("offline demo model"), "English stays English: {english}");
    }

    fn bistro_tools() -> Vec<String> {
        ["show_menu", "add_to_cart", "remove_from_cart", "create_checkout", "clear_cart"].map(String::from).to_vec()
    }

    #[test]
    fn the_bistro_phrases_become_the_right_calls() {
        let tools = bistro_tools();
        let cases = [
            (
                "add two margheritas (no basil)",
                "add_to_cart",
                json!({"item": "stone_pizza", "quantity": 2, "notes": "no basil"}),
            ),
            ("Add a lemon tart please", "add_to_cart", json!({"item": "lemon_tart", "quantity": 1})),
            ("add 3 sparkling water", "add_to_cart", json!({"item": "sparkling", "quantity": 3})),
            ("remove a margherita", "remove_from_cart", json!({"item": "stone_pizza"})),
            ("what's in my cart?", "show_menu", json!({})),
            ("check out", "create_checkout", json!({})),
            ("Ich möchte meine Bestellung abschließen", "create_checkout", json!({})),
            ("注文を確定してください", "create_checkout", json!({})),
            ("clear my cart", "clear_cart", json!({})),
        ];
        for (said, name, arguments) in cases {
            assert_eq!(decide(&[user(said)], &tools), Reply::Call { name: name.into(), arguments }, "{said}");
        }
    }

    #[test]
    fn a_cart_question_is_answered_from_the_cart() {
        let result = json!({"status": "ready", "items": [], "cart": {"subtotal": 28,
            "lines": [{"name": "Stone-baked Margherita", "quantity": 2, "notes": "no basil", "line_total": 28}]}});
        let messages = [
            user("what's in my cart"),
            json!({"role": "assistant", "tool_calls": []}),
            json!({"role": "tool", "tool_call_id": "c", "content": result.to_string()}),
        ];
        let Reply::Text(text) = decide(&messages, &bistro_tools()) else { panic!() };
        assert!(text.contains("2 × **Stone-baked Margherita** (no basil) — $28"), "{text}");
        assert!(text.contains("Subtotal: **$28**"), "{text}");
    }

    #[test]
    fn streaming_pieces_join_back_to_the_text() {
        let text = "Here is the menu:\n\n- **A** — $1";
        assert_eq!(split_for_streaming(text).concat(), text);
        assert!(split_for_streaming(text).len() > 1);
    }
}
