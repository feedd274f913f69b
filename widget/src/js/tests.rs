//! The JSON reader and the turn stream's reader, tested where they run.

use wasm_bindgen_test::wasm_bindgen_test;

use super::*;

fn json(text: &str) -> JsValue {
    let value = parse(text);
    assert!(!value.is_undefined(), "test JSON must parse: {text}");
    value
}

#[wasm_bindgen_test]
fn text_that_is_not_json_reads_as_nothing() {
    for text in ["", "{", "nope", "{\"a\": }"] {
        assert!(parse(text).is_undefined(), "{text}");
        assert_eq!(string(&parse(text), "a"), None);
    }
}

#[wasm_bindgen_test]
fn fields_are_read_from_objects_only_and_by_type() {
    let v = json(r#"{"s": "x", "n": 3, "b": true, "list": [1, "two"], "nested": {"s": "y"}}"#);
    assert_eq!(string(&v, "s").as_deref(), Some("x"));
    assert_eq!(string(&v, "n"), None, "a number is not a string");
    assert_eq!(boolean(&v, "b"), Some(true));
    assert_eq!(boolean(&v, "s"), None);
    assert_eq!(list(&v, "list").len(), 2);
    assert!(list(&v, "s").is_empty(), "a string is not a list");
    assert_eq!(string(&get(&v, "nested"), "s").as_deref(), Some("y"));
    // Arrays, null and primitives have no fields, whatever their indexes.
    assert!(get(&json(r#"["a"]"#), "0").is_undefined());
    assert!(get(&JsValue::NULL, "s").is_undefined());
    assert!(get(&json("\"text\""), "length").is_undefined());
}

#[wasm_bindgen_test]
fn counts_are_whole_non_negative_and_fit_u32() {
    let v = json(r#"{"a": 0, "b": 4294967295, "c": 4294967296, "d": -1, "e": 1.5, "f": "3", "g": 1e400}"#);
    assert_eq!(count(&v, "a"), Some(0));
    assert_eq!(count(&v, "b"), Some(u32::MAX));
    for key in ["c", "d", "e", "f", "g", "missing"] {
        assert_eq!(count(&v, key), None, "{key}");
    }
}

#[wasm_bindgen_test]
fn written_objects_round_trip_through_json() {
    let text = stringify(&object(&[("message", JsValue::from_str("a \"quote\" <b>")), ("id", text_or_null(None))]));
    assert_eq!(text, r#"{"message":"a \"quote\" <b>","id":null}"#);
    assert_eq!(string(&parse(&text), "message").as_deref(), Some("a \"quote\" <b>"));
}

#[wasm_bindgen_test]
fn a_pending_action_needs_its_id_tool_and_a_known_verb() {
    let action = pending_action(&json(
        r#"{"action_id": "act_1", "tool": "delete_task", "verb": "delete", "preview": "Delete “x”",
            "arguments": {"id": 1}, "confirmations_required": 2, "expires_at": "2026-12-01T00:00:00Z",
            "status": "confirmed_once"}"#,
    ))
    .unwrap();
    assert_eq!(action.verb, Verb::Delete);
    assert_eq!(action.status, ActionStatus::ConfirmedOnce);
    assert_eq!(action.confirmations_required, 2);
    // The widget never keeps the arguments: its PendingAction has no such field.
    for broken in [
        r#"{"tool": "t", "verb": "create"}"#,
        r#"{"action_id": "a", "verb": "create"}"#,
        r#"{"action_id": "a", "tool": "t", "verb": "remove"}"#,
        r#"{"action_id": "a", "tool": "t", "verb": "DELETE"}"#,
        r#"["action_id"]"#,
    ] {
        assert_eq!(pending_action(&json(broken)), None, "{broken}");
    }
    // Unknown or missing status: still waiting; any count but 2: one confirmation.
    let lax = pending_action(&json(
        r#"{"action_id": "a", "tool": "t", "verb": "update", "status": "weird",
        "confirmations_required": 7}"#,
    ))
    .unwrap();
    assert_eq!((lax.status, lax.confirmations_required, lax.preview.as_str()), (ActionStatus::Pending, 1, ""));
    assert_eq!(lax.replaces, None);
    // A fresh preview of a stale action names the one it replaces.
    let fresh = pending_action(&json(
        r#"{"action_id": "act_2", "tool": "t", "verb": "create", "replaces": "act_1", "status": "pending"}"#,
    ))
    .unwrap();
    assert_eq!(fresh.replaces.as_deref(), Some("act_1"));
}

#[wasm_bindgen_test]
fn cards_without_a_title_or_url_are_dropped() {
    let v = json(
        r#"{"cards": [{"title": "A", "url": "https://a.example", "badges": ["x", 3, "y"]},
                      {"title": "no url"}, {"url": "https://no-title.example"}, "text", null]}"#,
    );
    let cards = cards(&v, "cards");
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].badges, ["x", "y"], "only text badges");
    assert_eq!(cards[0].image, None);
}

#[wasm_bindgen_test]
fn the_boot_data_needs_a_workspace_and_keeps_only_text_origins() {
    let boot = boot(&json(
        r#"{"workspace_id": "ws_1", "allowed_origins": ["https://a.example", 5], "demo_model": true,
            "title": "Shop", "theme": {"mode": "dark", "radius": 300},
            "caddie": {"project_name": "P", "return_url": "https://hub.example/p", "tour": true}}"#,
    ))
    .unwrap();
    assert_eq!(boot.allowed_origins, ["https://a.example"]);
    assert!(boot.demo_model);
    assert_eq!(boot.theme.radius, None, "300 does not fit a u8");
    let bar = boot.caddie.unwrap();
    assert_eq!((bar.project_name.as_str(), bar.stage_label.as_str(), bar.tour), ("P", "", true));
    assert_eq!(super::boot(&json(r#"{"title": "no workspace"}"#)).map(|b| b.workspace_id), None);
    assert_eq!(super::bar(&json(r#"{"project_name": "P"}"#)), None, "a bar needs its way back");
}

#[wasm_bindgen_test]
fn the_boot_words_keep_their_places_and_prompts_only_text() {
    let ar = boot(&json(
        r#"{"workspace_id": "ws_1", "lang": "ar", "words": ["أ", 5, "ج"], "greeting": "مرحبا",
            "prompts": ["اعرض القائمة", {"x": 1}, "ساعدني"]}"#,
    ))
    .unwrap();
    assert_eq!(ar.lang, "ar");
    assert_eq!(ar.words, ["أ", "", "ج"], "a broken word keeps the others at their index");
    assert_eq!(ar.greeting.as_deref(), Some("مرحبا"));
    assert_eq!(ar.prompts, ["اعرض القائمة", "ساعدني"]);
    let bare = boot(&json(r#"{"workspace_id": "ws_1"}"#)).unwrap();
    assert!(bare.lang.is_empty() && bare.words.is_empty() && bare.greeting.is_none() && bare.prompts.is_empty());
}

#[wasm_bindgen_test]
fn a_message_role_is_a_known_word() {
    assert_eq!(role(&json(r#"{"role": "user"}"#)), Some(Role::User));
    assert_eq!(role(&json(r#"{"role": "assistant"}"#)), Some(Role::Assistant));
    assert_eq!(role(&json(r#"{"role": "system"}"#)), None);
}

#[wasm_bindgen_test]
fn a_menu_cart_reads_whole_or_not_at_all() {
    let menu = menu_cart(&json(
        r#"{"items": [{"id": "a", "name": "A", "price": 14, "kind": "Mains"},
                      {"id": "b", "name": "B", "price": 5, "kind": "Drinks", "available": false}],
            "cart": {"lines": [{"item": "a", "quantity": 2, "notes": "no basil"}, {"item": "b", "quantity": 1}]}}"#,
    ))
    .unwrap();
    assert_eq!(menu.items.len(), 2);
    assert!(menu.items[0].available && !menu.items[1].available);
    assert_eq!(menu.quantity("a"), 2);
    assert_eq!(menu.notes("a"), "no basil");
    assert_eq!(menu.notes("b"), "");
    assert_eq!(menu.display_total(), 33);
    // No cart: an empty one.
    assert!(menu_cart(&json(r#"{"items": []}"#)).unwrap().cart.lines.is_empty());
    for broken in [
        r#"{}"#,
        r#"{"items": "all"}"#,
        r#"{"items": [{"id": "a", "name": "A", "price": "14", "kind": "K"}]}"#,
        r#"{"items": [{"id": "a", "name": "A", "price": -1, "kind": "K"}]}"#,
        r#"{"items": [{"id": "a", "price": 1, "kind": "K"}]}"#,
        r#"{"items": [], "cart": {"lines": [{"item": "a", "quantity": 1.5}]}}"#,
        r#"{"items": [], "cart": {"lines": [{"quantity": 1}]}}"#,
    ] {
        assert_eq!(menu_cart(&json(broken)), None, "{broken}");
    }
}

// The turn stream's reader (`events` in dom.js). Its bytes come as a
// network cuts them: any cut gives the same events.

#[wasm_bindgen::prelude::wasm_bindgen(inline_js = "export function streamOf(chunks, lost) {
  let i = 0;
  return new ReadableStream({ pull(c) {
    if (i < chunks.length) c.enqueue(chunks[i++]); else if (lost) c.error(new TypeError('lost')); else c.close();
  } });
}")]
extern "C" {
    /// A body that gives `chunks` one read at a time, then ends (or breaks,
    /// when `lost`).
    #[wasm_bindgen(js_name = streamOf)]
    fn stream_of(chunks: &Array, lost: bool) -> web_sys::ReadableStream;
}

/// One event as read: its name, its data as JSON text ("" when the data
/// was not JSON), its id.
type Read = (String, String, Option<String>);

fn reader(chunks: &[&[u8]], lost: bool) -> Events {
    let array = Array::new();
    for chunk in chunks {
        array.push(&js_sys::Uint8Array::from(*chunk));
    }
    events(&stream_of(&array, lost))
}

async fn next(events: &Events) -> Result<Option<Read>, JsValue> {
    let event = wasm_bindgen_futures::JsFuture::from(events.next()).await?;
    if event.is_null() {
        return Ok(None);
    }
    Ok(Some((string(&event, "event").unwrap(), stringify(&get(&event, "data")), string(&event, "id"))))
}

async fn read_all(chunks: &[&[u8]]) -> Vec<Read> {
    let events = reader(chunks, false);
    let mut all = Vec::new();
    while let Some(event) = next(&events).await.expect("the stream is not lost") {
        all.push(event);
    }
    all
}

fn read(event: &str, data: &str, id: Option<&str>) -> Read {
    (event.to_owned(), data.to_owned(), id.map(str::to_owned))
}

#[wasm_bindgen_test]
async fn events_split_across_chunks_are_reassembled() {
    let events = read_all(&[b"event: text\ndata: {\"delta\":\"Hel", b"lo\"}\n\nevent: done\ndata: {}\n\n"]).await;
    assert_eq!(events, [read("text", r#"{"delta":"Hello"}"#, None), read("done", "{}", None)]);
}

#[wasm_bindgen_test]
async fn a_character_split_across_chunks_survives() {
    let bytes = "event: text\ndata: \"café\"\n\n".as_bytes();
    let cut = bytes.iter().position(|&b| b == 0xC3).unwrap() + 1;
    assert_eq!(read_all(&[&bytes[..cut], &bytes[cut..]]).await, [read("text", "\"café\"", None)]);
}

#[wasm_bindgen_test]
async fn comments_heartbeats_and_events_without_data_are_not_events() {
    let events = read_all(&[b": ping\n\nevent: text\n\ndata: [1,\r\ndata: 2]\r\n\r\n"]).await;
    assert_eq!(events, [read("message", "[1,2]", None)], "lines joined by a newline, CRLF or LF");
}

#[wasm_bindgen_test]
async fn an_events_id_is_kept_for_resuming_and_data_that_is_not_json_is_nothing() {
    let events = read_all(&[b"id: 7\nevent: text\ndata: {}\n\nevent: text\ndata: {\"a\n\n"]).await;
    assert_eq!(events, [read("text", "{}", Some("7")), read("text", "", None)]);
}

#[wasm_bindgen_test]
async fn a_lost_connection_rejects_after_the_events_that_came() {
    let events = reader(&[b"event: text\ndata: {}\n\nevent: done\ndata: {\"stop"], true);
    assert_eq!(next(&events).await.unwrap(), Some(read("text", "{}", None)));
    assert!(next(&events).await.is_err(), "a broken body is not an end");
}

#[wasm_bindgen_test]
async fn an_event_past_a_mebibyte_is_dropped_and_the_next_comes_whole() {
    let huge = format!("event: text\ndata: \"{}", "x".repeat((1 << 20) + 10));
    let events = read_all(&[huge.as_bytes(), b"\"\n\nevent: done\ndata: {}\n\n"]).await;
    assert_eq!(events, [read("done", "{}", None)]);
}

#[wasm_bindgen_test]
async fn however_the_bytes_are_cut_the_same_events_come_out() {
    let stream = "event: turn\ndata: {\"turn_id\":\"t1\"}\n\n: ping\n\nid: 3\nevent: text\ndata: {\"delta\":\"hé 🦀\"}\r\n\r\n\
                  event: text\ndata: [1,\ndata: 2]\n\nevent:\ndata: \"unnamed\"\n\n\
                  event: done\ndata: {\"stop_reason\":\"completed\"}\n\n";
    let bytes = stream.as_bytes();
    let whole = read_all(&[bytes]).await;
    assert_eq!(
        whole,
        [
            read("turn", r#"{"turn_id":"t1"}"#, None),
            read("text", r#"{"delta":"hé 🦀"}"#, Some("3")),
            read("text", "[1,2]", None),
            read("message", "\"unnamed\"", None),
            read("done", r#"{"stop_reason":"completed"}"#, None),
        ]
    );
    // Every single cut, then three cuts at a time where a fixed sequence says.
    for cut in 0..=bytes.len() {
        assert_eq!(read_all(&[&bytes[..cut], &bytes[cut..]]).await, whole, "cut at {cut}");
    }
    let mut seed = 0x2545_f491_u32;
    for _ in 0..300 {
        let mut cuts: Vec<usize> = (0..3)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                seed as usize % (bytes.len() + 1)
            })
            .collect();
        cuts.sort_unstable();
        let pieces = [&bytes[..cuts[0]], &bytes[cuts[0]..cuts[1]], &bytes[cuts[1]..cuts[2]], &bytes[cuts[2]..]];
        assert_eq!(read_all(&pieces).await, whole, "cuts at {cuts:?}");
    }
}
