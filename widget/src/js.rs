//! Reading and writing JSON in the browser with the browser's own
//! `JSON.parse`/`JSON.stringify`, field by field. The widget's WASM carries
//! no JSON parser or serde deserializers this way (its size is a budget:
//! docs/benchmarks.md); the server keeps serde for the same wire types.

use js_sys::{Array, JSON, Object, Reflect};
use wasm_bindgen::JsValue;

use crate::wire::{
    ActionStatus, CaddieBar, DisplayCard, MenuCartCart, MenuCartData, MenuCartItem, MenuCartLine, PendingAction, Role,
    Theme, Verb, WidgetBoot,
};

/// The value of a JSON text; `undefined` when it is not JSON.
pub fn parse(text: &str) -> JsValue {
    JSON::parse(text).unwrap_or(JsValue::UNDEFINED)
}

pub fn stringify(value: &JsValue) -> String {
    JSON::stringify(value).ok().and_then(|s| s.as_string()).unwrap_or_default()
}

/// A field of an object (`undefined` for anything else).
pub fn get(value: &JsValue, key: &str) -> JsValue {
    if value.is_object() && !Array::is_array(value) {
        Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

pub fn string(value: &JsValue, key: &str) -> Option<String> {
    get(value, key).as_string()
}

pub fn boolean(value: &JsValue, key: &str) -> Option<bool> {
    get(value, key).as_bool()
}

/// A whole, non-negative number that fits `u32`.
pub fn count(value: &JsValue, key: &str) -> Option<u32> {
    get(value, key).as_f64().filter(|n| n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(n)).map(|n| n as u32)
}

/// The items of an array field; empty for anything else.
pub fn list(value: &JsValue, key: &str) -> Vec<JsValue> {
    let field = get(value, key);
    if Array::is_array(&field) { Array::from(&field).iter().collect() } else { Vec::new() }
}

/// An object of these fields.
pub fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&object, &JsValue::from_str(key), value);
    }
    object.into()
}

pub fn text_or_null(value: Option<&str>) -> JsValue {
    value.map_or(JsValue::NULL, JsValue::from_str)
}

pub fn boot(v: &JsValue) -> Option<WidgetBoot> {
    let theme = get(v, "theme");
    let caddie = get(v, "caddie");
    Some(WidgetBoot {
        workspace_id: string(v, "workspace_id")?,
        allowed_origins: list(v, "allowed_origins").iter().filter_map(JsValue::as_string).collect(),
        demo_model: boolean(v, "demo_model").unwrap_or(false),
        title: string(v, "title").unwrap_or_default(),
        theme: Theme {
            mode: string(&theme, "mode"),
            accent: string(&theme, "accent"),
            radius: count(&theme, "radius").and_then(|r| u8::try_from(r).ok()),
            font: string(&theme, "font"),
        },
        token: string(v, "token"),
        caddie: caddie.is_object().then(|| bar(&caddie)).flatten(),
    })
}

pub fn bar(v: &JsValue) -> Option<CaddieBar> {
    Some(CaddieBar {
        project_name: string(v, "project_name")?,
        stage_label: string(v, "stage_label").unwrap_or_default(),
        return_url: string(v, "return_url")?,
        tour: boolean(v, "tour").unwrap_or(false),
    })
}

pub fn card(v: &JsValue) -> Option<DisplayCard> {
    Some(DisplayCard {
        title: string(v, "title")?,
        url: string(v, "url")?,
        image: string(v, "image"),
        subtitle: string(v, "subtitle"),
        badges: list(v, "badges").iter().filter_map(JsValue::as_string).collect(),
    })
}

pub fn cards(v: &JsValue, key: &str) -> Vec<DisplayCard> {
    list(v, key).iter().filter_map(card).collect()
}

pub fn pending_action(v: &JsValue) -> Option<PendingAction> {
    Some(PendingAction {
        action_id: string(v, "action_id")?,
        tool: string(v, "tool")?,
        verb: Verb::parse(&string(v, "verb")?)?,
        preview: string(v, "preview").unwrap_or_default(),
        // The widget shows the host's preview, never the arguments.
        arguments: serde_json::Value::Null,
        confirmations_required: if count(v, "confirmations_required") == Some(2) { 2 } else { 1 },
        expires_at: string(v, "expires_at").unwrap_or_default(),
        status: string(v, "status").and_then(|s| ActionStatus::parse(&s)).unwrap_or(ActionStatus::Pending),
    })
}

/// A conversation message's role.
pub fn role(v: &JsValue) -> Option<Role> {
    Role::parse(&string(v, "role")?)
}

pub fn menu_cart(v: &JsValue) -> Option<MenuCartData> {
    let items = list(v, "items")
        .iter()
        .map(|i| {
            Some(MenuCartItem {
                id: string(i, "id")?,
                name: string(i, "name")?,
                price: count(i, "price")?,
                kind: string(i, "kind")?,
                available: boolean(i, "available").unwrap_or(true),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    if !Array::is_array(&get(v, "items")) {
        return None;
    }
    let lines = list(&get(v, "cart"), "lines")
        .iter()
        .map(|l| {
            Some(MenuCartLine {
                item: string(l, "item")?,
                quantity: count(l, "quantity")?,
                notes: string(l, "notes").unwrap_or_default(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(MenuCartData { items, cart: MenuCartCart { lines } })
}

/// These run in the browser's engine (Node's V8, through
/// `wasm-bindgen-test-runner`): the code the widget runs, not a serde
/// stand-in. `./dev test` runs them; see `widget_wasm_tests` there.
#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
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
        assert_eq!(action.arguments, serde_json::Value::Null, "the widget never keeps the arguments");
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
}
