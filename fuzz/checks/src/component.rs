//! A tool result's `component`: whatever the JSON, a component kept has a
//! valid kind, an object as data within its size, at most eight distinct
//! valid tool names; and the widget's reader of the bistro's `menu_cart`
//! data never panics on it (its totals included).

use crate::json;
use arbitrary::Unstructured;
use server::component::{MAX_DATA_BYTES, MAX_TOOLS, from_output};
use widget::wire::MenuCartData;

/// One input: the fuzzer's bytes.
pub fn check(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(component) = json(&mut u, 5) else { return };
    let output = serde_json::json!({ "component": component });
    let Some(kept) = from_output(&output) else { return };
    let kind = kept.kind.as_bytes();
    assert!(kind.len() <= 40 && kind[0].is_ascii_lowercase(), "{:?}", kept.kind);
    assert!(kind.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_'), "{:?}", kept.kind);
    assert!(kept.data.is_object() && kept.data.to_string().len() <= MAX_DATA_BYTES);
    assert!(kept.tools.len() <= MAX_TOOLS);
    for (i, tool) in kept.tools.iter().enumerate() {
        assert!(server::host::valid_tool_name(tool) && !kept.tools[..i].contains(tool), "{:?}", kept.tools);
    }
    if let Ok(menu) = serde_json::from_value::<MenuCartData>(kept.data) {
        let _ = menu.display_total();
        let _ = menu.groups();
        for item in &menu.items {
            let _ = (menu.quantity(&item.id), menu.notes(&item.id));
        }
    }
}
