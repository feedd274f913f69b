//! The Acme Bistro demo host: its tools over the Remote Tools contract, the
//! signed checkout link and the pay page, and the demo model's phrases.

use serde_json::{Value, json};

use crate::helpers::{Db, TestApp, of, pending, spawn_app};

/// Calls the bistro's own API as the assistant does.
async fn call(app: &TestApp, path: &str, tool: &str, arguments: Value, user: &str) -> (u16, Value) {
    call_as(app, path, tool, "c1", arguments, user).await
}

/// Calls the bistro's API as tool call `call_id`.
async fn call_as(app: &TestApp, path: &str, tool: &str, call_id: &str, arguments: Value, user: &str) -> (u16, Value) {
    let response = app
        .post(
            &format!("/bistro/api/tools/{path}"),
            app.state.bistro.secret.expose(),
            &json!({"tool": tool, "callId": call_id, "arguments": arguments,
            "execution": {"workspaceId": "ws_demo", "externalUserId": user, "permissions": [], "requestId": "r"}}),
        )
        .await;
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

async fn execute(app: &TestApp, tool: &str, arguments: Value, user: &str) -> (u16, Value) {
    call(app, "execute", tool, arguments, user).await
}

#[tokio::test]
async fn the_menu_has_the_five_stable_dishes_and_the_users_cart() {
    let app = spawn_app(Db::Sqlite).start().await;
    let (status, body) = execute(&app, "show_menu", json!({}), "u1").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> =
        body["output"]["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["stone_pizza", "roast_bowl", "house_salad", "lemon_tart", "sparkling"]);
    assert_eq!(body["output"]["items"][0]["price"], 14);
    assert_eq!(body["output"]["cart"]["lines"], json!([]));
    assert_eq!(body["output"]["display"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn the_cart_is_kept_per_user_with_line_totals_and_subtotals() {
    let app = spawn_app(Db::Sqlite).start().await;
    let (status, added) =
        execute(&app, "add_to_cart", json!({"item": "stone_pizza", "quantity": 2, "notes": "no basil"}), "u1").await;
    assert_eq!(status, 200);
    assert_eq!(
        (added["output"]["line_total"].as_i64(), added["output"]["cart_subtotal"].as_i64()),
        (Some(28), Some(28))
    );
    let (_, added) = execute(&app, "add_to_cart", json!({"item": "lemon_tart"}), "u1").await;
    assert_eq!(added["output"]["quantity"], 1, "quantity defaults to 1");
    assert_eq!(added["output"]["cart_subtotal"], 36);

    let (_, other) = execute(&app, "show_menu", json!({}), "u2").await;
    assert_eq!(other["output"]["cart"]["lines"], json!([]), "another user's cart is empty");

    let (_, removed) = execute(&app, "remove_from_cart", json!({"item": "stone_pizza"}), "u1").await;
    assert_eq!(
        (removed["output"]["line_total"].as_i64(), removed["output"]["cart_subtotal"].as_i64()),
        (Some(14), Some(22))
    );
    let (status, _) = execute(&app, "remove_from_cart", json!({"item": "sparkling"}), "u1").await;
    assert_eq!(status, 200, "removing what is not there is not an error");
    let (_, menu) = execute(&app, "show_menu", json!({}), "u1").await;
    assert_eq!(menu["output"]["cart"]["lines"][0]["notes"], "no basil", "notes are kept per line");

    let (status, _) = execute(&app, "clear_cart", json!({}), "u1").await;
    assert_eq!(status, 200);
    let (_, menu) = execute(&app, "show_menu", json!({}), "u1").await;
    assert_eq!(menu["output"]["cart"]["subtotal"], 0);
}

#[tokio::test]
async fn bad_arguments_and_bad_secrets_are_refused() {
    let app = spawn_app(Db::Sqlite).start().await;
    for args in [
        json!({"item": "caviar"}),
        json!({"item": "stone_pizza", "quantity": 0}),
        json!({"item": "stone_pizza", "quantity": 1.5}),
        json!({}),
    ] {
        let (status, body) = execute(&app, "add_to_cart", args.clone(), "u1").await;
        assert_eq!(status, 400, "{args}");
        assert!(body["error"].is_string());
    }
    let (status, _) = execute(&app, "create_checkout", json!({}), "u1").await;
    assert_eq!(status, 400, "an empty cart cannot check out");
    let (status, _) = execute(&app, "order_champagne", json!({}), "u1").await;
    assert_eq!(status, 404);
    let response = app.get("/bistro/api/tools", "wrong").await;
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn checkout_links_are_signed_expire_and_refuse_tampering() {
    let app = spawn_app(Db::Sqlite).start().await;
    execute(&app, "add_to_cart", json!({"item": "stone_pizza", "quantity": 2}), "u1").await;
    execute(&app, "add_to_cart", json!({"item": "sparkling"}), "u1").await;
    let (_, preview) = call(&app, "preview", "create_checkout", json!({}), "u1").await;
    assert!(preview["preview"].as_str().unwrap().contains("total $32"), "{preview}");
    let (status, body) = execute(&app, "create_checkout", json!({}), "u1").await;
    assert_eq!(status, 200);
    let url = body["output"]["checkoutUrl"].as_str().unwrap().to_owned();
    assert!(url.contains("cart=stone_pizzax2-sparklingx1&total=32&src=context-assistant"), "{url}");
    assert!(body["output"]["expires_at"].as_str().unwrap().ends_with('Z'));

    let page = |url: String| {
        let client = app.client.clone();
        async move { client.get(url).send().await.unwrap().text().await.unwrap() }
    };
    let good = page(url.clone()).await;
    assert!(good.contains(r#"data-total="32""#) && good.contains("nothing is charged"), "{good}");
    for tampered in [
        url.replace("total=32", "total=1"),
        url.replace("stone_pizzax2", "stone_pizzax9"),
        url.replace("sig=", "sig=00"),
        url.split("&sig=").next().unwrap().to_owned(),
    ] {
        assert!(page(tampered.clone()).await.contains("Cart expired — start again"), "{tampered}");
    }
    // A correctly signed link past its expiry.
    let stale = server::bistro::checkout::sign(
        &app.state.bistro.checkout_key,
        "stone_pizzax2",
        28,
        server::ids::now_secs() - 1,
    );
    assert!(page(app.url(&format!("/bistro/pay?{stale}"))).await.contains("Cart expired — start again"));
}

#[tokio::test]
async fn an_order_by_language_goes_through_apply() {
    let app = spawn_app(Db::Sqlite).start().await;
    let token = app.demo_token("diner_1").await;

    let events = app.turn(&token, None, "add two margheritas (no basil)").await;
    let action = pending(&events);
    assert_eq!(action["preview"], "Add 2 × Stone-baked Margherita (no basil) to your order — $28");
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let apply = format!("/v1/actions/{}/apply", action["action_id"].as_str().unwrap());
    let applied = app.post_empty(&apply, &token).await.text().await.unwrap();
    let applied = crate::helpers::parse_sse(&applied);
    assert!(of(&applied, "message")[0]["text"].as_str().unwrap().contains("Cart subtotal: $28"));

    let cart = app.turn(&token, Some(&conversation), "what's in my cart?").await;
    let text = of(&cart, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("2 × **Stone-baked Margherita** (no basil) — $28"), "{text}");

    let clear = app.turn(&token, Some(&conversation), "clear my cart").await;
    assert_eq!(pending(&clear)["confirmations_required"], 2);
}

#[tokio::test]
async fn a_sold_out_dish_is_shown_but_cannot_be_added_or_checked_out() {
    let app = spawn_app(Db::Sqlite).env("CA_BISTRO_SOLD_OUT", "lemon_tart").start().await;
    let (_, menu) = execute(&app, "show_menu", json!({}), "u1").await;
    let tart = menu["output"]["items"].as_array().unwrap().iter().find(|i| i["id"] == "lemon_tart").unwrap().clone();
    assert_eq!(tart["available"], false);
    assert_eq!(menu["output"]["items"][0]["available"], true);

    let (status, body) = execute(&app, "add_to_cart", json!({"item": "lemon_tart"}), "u1").await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("sold out"));

    // A cart that already holds it (sold out after it was added) cannot check out.
    server::bistro::cart::add(&app.state.pool, "ws_demo:u1", "lemon_tart", 1, None).await.unwrap();
    let (status, body) = execute(&app, "create_checkout", json!({}), "u1").await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("sold out"));
}

#[tokio::test]
async fn the_menu_cart_component_carries_the_menu_the_cart_and_only_safe_tools() {
    let app = spawn_app(Db::Sqlite).start().await;
    let (_, menu) = execute(&app, "show_menu", json!({}), "u1").await;
    let component = &menu["output"]["component"];
    assert_eq!(component["kind"], "menu_cart");
    assert_eq!(component["tools"], json!(["add_to_cart", "remove_from_cart", "set_notes"]), "never clear_cart");
    assert_eq!(component["update"], false);
    assert_eq!(component["data"]["items"].as_array().unwrap().len(), 5);
    assert_eq!(component["data"]["cart"]["lines"], json!([]));

    let (_, added) = execute(&app, "add_to_cart", json!({"item": "sparkling", "quantity": 3}), "u1").await;
    let component = &added["output"]["component"];
    assert_eq!(component["update"], true, "a cart change refreshes the menu on screen");
    assert_eq!(component["data"]["cart"]["lines"][0]["quantity"], 3);
    assert_eq!(component["data"]["cart"]["subtotal"], 12);
}

#[tokio::test]
async fn notes_can_be_changed_on_a_line_in_the_cart() {
    let app = spawn_app(Db::Sqlite).start().await;
    execute(&app, "add_to_cart", json!({"item": "stone_pizza"}), "u1").await;

    let (status, body) =
        execute(&app, "set_notes", json!({"item": "stone_pizza", "notes": "extra crispy"}), "u1").await;
    assert_eq!(status, 200);
    assert_eq!(body["output"]["cart"]["lines"][0]["notes"], "extra crispy");
    assert_eq!(body["output"]["cart"]["lines"][0]["quantity"], 1, "a note adds nothing");
    let (_, body) = execute(&app, "set_notes", json!({"item": "stone_pizza", "notes": ""}), "u1").await;
    assert_eq!(body["output"]["cart"]["lines"][0]["notes"], "");

    for (arguments, why) in [
        (json!({"item": "lemon_tart", "notes": "x"}), "not in the cart"),
        (json!({"item": "stone_pizza"}), "notes is required"),
        (json!({"item": "caviar", "notes": "x"}), "unknown item"),
    ] {
        let (status, body) = execute(&app, "set_notes", arguments, "u1").await;
        assert_eq!(status, 400, "{why}");
        assert!(body["error"].as_str().unwrap().contains(why), "{body}");
    }
}

#[tokio::test]
async fn the_context_carries_the_users_cart() {
    let app = spawn_app(Db::Sqlite).start().await;
    execute(&app, "add_to_cart", json!({"item": "lemon_tart", "quantity": 2}), "u1").await;
    let context = |user: &'static str| {
        let app = &app;
        async move {
            let response = app
                .get(
                    &format!("/bistro/api/context?workspaceId=ws_demo&externalUserId={user}"),
                    app.state.bistro.secret.expose(),
                )
                .await;
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.unwrap()
        }
    };
    let mine = context("u1").await;
    assert_eq!(mine["cart"]["lines"][0]["item"], "lemon_tart");
    assert_eq!(mine["cart"]["subtotal"], 16);
    assert_eq!(context("u2").await["cart"]["lines"], json!([]));
}

/// The user's own clicks on the menu: `+`, `−` and a note go straight to
/// the cart tools, `clear_cart` never does, and the next turn sees the cart.
#[tokio::test]
async fn the_menus_buttons_change_the_cart_and_the_assistant_sees_it() {
    let app = spawn_app(Db::Sqlite).start().await;
    let token = app.demo_token("diner_2").await;
    let events = app.turn(&token, None, "show me the menu").await;
    let shown = of(&events, "component");
    assert_eq!(shown.len(), 1);
    let component_id = shown[0]["component_id"].as_str().unwrap().to_owned();
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let click = |tool: &'static str, arguments: Value| {
        let (app, token, component_id) = (&app, &token, &component_id);
        async move {
            let response = app
                .post(
                    &format!("/v1/components/{component_id}/call"),
                    token,
                    &json!({"tool": tool, "arguments": arguments}),
                )
                .await;
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };

    click("add_to_cart", json!({"item": "stone_pizza", "quantity": 1})).await;
    let (status, body) = click("add_to_cart", json!({"item": "stone_pizza", "quantity": 1})).await;
    assert_eq!(status, 200);
    assert_eq!(body["component"]["data"]["cart"]["lines"][0]["quantity"], 2);
    click("add_to_cart", json!({"item": "lemon_tart"})).await;
    let (_, body) = click("remove_from_cart", json!({"item": "stone_pizza"})).await;
    assert_eq!(body["component"]["data"]["cart"]["subtotal"], 22);
    let (status, _) = click("set_notes", json!({"item": "lemon_tart", "notes": "no cream"})).await;
    assert_eq!(status, 200);
    let (status, body) = click("clear_cart", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("tool_not_declared")));

    let cart = app.turn(&token, Some(&conversation), "what's in my cart?").await;
    let text = of(&cart, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("1 × **Stone-baked Margherita**"), "{text}");
    assert!(text.contains("1 × **Lemon Tart** (no cream)"), "{text}");
}

#[tokio::test]
async fn a_dish_sold_out_after_checkout_cannot_be_paid_for() {
    let app = spawn_app(Db::Sqlite).env("CA_BISTRO_SOLD_OUT", "lemon_tart").start().await;
    // A link minted while the tart was still available (signed as create_checkout signs it).
    let exp = server::ids::now_secs() + 600;
    let before = server::bistro::checkout::sign(&app.state.bistro.checkout_key, "stone_pizzax1-lemon_tartx1", 22, exp);
    let page = app.client.get(app.url(&format!("/bistro/pay?{before}"))).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Sold out — start again") && page.contains("Lemon Tart sold out"), "{page}");
    assert!(!page.contains("data-total"), "no order to pay");
    let fine = server::bistro::checkout::sign(&app.state.bistro.checkout_key, "stone_pizzax1", 14, exp);
    let page = app.client.get(app.url(&format!("/bistro/pay?{fine}"))).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"data-total="14""#), "{page}");
}

/// The kitchen marks `item` available or sold out; the status and board.
async fn kitchen(app: &TestApp, item: &str, available: bool, secret: &str) -> (u16, Value) {
    let response = app
        .client
        .put(app.url(&format!("/bistro/api/kitchen/{item}")))
        .bearer_auth(secret)
        .json(&json!({ "available": available }))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

fn dish<'a>(board: &'a Value, item: &str) -> &'a Value {
    board["dishes"].as_array().unwrap().iter().find(|d| d["item"] == item).unwrap()
}

#[tokio::test]
async fn the_kitchen_marks_dishes_sold_out_while_the_bistro_runs() {
    let app = spawn_app(Db::Sqlite).env("CA_BISTRO_SOLD_OUT", "sparkling").start().await;
    let secret = app.state.bistro.secret.expose().to_owned();
    assert_eq!(kitchen(&app, "lemon_tart", false, "wrong").await.0, 401);
    assert_eq!(kitchen(&app, "caviar", false, &secret).await.0, 404);
    let (status, body) = kitchen(&app, "sparkling", true, &secret).await;
    assert_eq!((status, body["error"].as_str()), (409, Some("sold out by configuration (CA_BISTRO_SOLD_OUT)")));

    let (status, board) = kitchen(&app, "lemon_tart", false, &secret).await;
    assert_eq!(status, 200);
    assert_eq!(
        (dish(&board, "lemon_tart")["available"].as_bool(), dish(&board, "lemon_tart")["fixed"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(dish(&board, "sparkling")["fixed"], true);
    let (_, menu) = execute(&app, "show_menu", json!({}), "u1").await;
    let available = |id: &str| {
        menu["output"]["items"].as_array().unwrap().iter().find(|i| i["id"] == id).unwrap()["available"].clone()
    };
    assert_eq!((available("lemon_tart"), available("stone_pizza")), (json!(false), json!(true)));
    assert_eq!(execute(&app, "add_to_cart", json!({"item": "lemon_tart"}), "u1").await.0, 400);

    let (_, board) = kitchen(&app, "lemon_tart", true, &secret).await;
    assert_eq!(dish(&board, "lemon_tart")["available"], true);
    assert_eq!(execute(&app, "add_to_cart", json!({"item": "lemon_tart"}), "u1").await.0, 200);
}

#[tokio::test]
async fn an_execute_whose_preview_no_longer_holds_is_stale_and_runs_nothing() {
    let app = spawn_app(Db::Sqlite).start().await;
    let secret = app.state.bistro.secret.expose().to_owned();
    // Previewed while available, sold out before the Apply: 409 stale, not added.
    let (status, _) = call_as(&app, "preview", "add_to_cart", "c_add", json!({"item": "lemon_tart"}), "u1").await;
    assert_eq!(status, 200);
    kitchen(&app, "lemon_tart", false, &secret).await;
    let (status, body) = call_as(&app, "execute", "add_to_cart", "c_add", json!({"item": "lemon_tart"}), "u1").await;
    assert_eq!((status, body["stale"].as_bool()), (409, Some(true)), "{body}");
    assert!(body["error"].as_str().unwrap().contains("Lemon Tart is sold out"), "{body}");
    // A call never previewed (a component's direct call) is simply refused.
    let (status, body) = call_as(&app, "execute", "add_to_cart", "c_other", json!({"item": "lemon_tart"}), "u1").await;
    assert_eq!((status, body.get("stale")), (400, None));
    kitchen(&app, "lemon_tart", true, &secret).await;

    // A checkout previewed, then the cart changes (the menu's + button): stale.
    execute(&app, "add_to_cart", json!({"item": "stone_pizza"}), "u1").await;
    let (_, shown) = call_as(&app, "preview", "create_checkout", "c_pay", json!({}), "u1").await;
    assert!(shown["preview"].as_str().unwrap().contains("total $14"), "{shown}");
    execute(&app, "add_to_cart", json!({"item": "sparkling"}), "u1").await;
    let (status, body) = call_as(&app, "execute", "create_checkout", "c_pay", json!({}), "u1").await;
    assert_eq!((status, body["stale"].as_bool()), (409, Some(true)), "{body}");
    assert!(body["error"].as_str().unwrap().contains("total $18"), "{body}");

    // The fresh preview holds: it runs, once; a replay of the same call is not stale.
    let (_, fresh) = call_as(&app, "preview", "create_checkout", "c_pay2", json!({}), "u1").await;
    assert!(fresh["preview"].as_str().unwrap().contains("total $18"));
    let (status, paid) = call_as(&app, "execute", "create_checkout", "c_pay2", json!({}), "u1").await;
    assert_eq!(status, 200, "{paid}");
    assert!(paid["output"]["checkoutUrl"].as_str().unwrap().contains("total=18"), "{paid}");
}

#[tokio::test]
async fn a_dish_sold_out_between_preview_and_apply_is_offered_again_without_it() {
    let app = spawn_app(Db::Sqlite).start().await;
    let secret = app.state.bistro.secret.expose().to_owned();
    let token = app.demo_token("diner_1").await;
    let apply = |id: String| {
        let (app, token) = (&app, &token);
        async move {
            let answer = app.post_empty(&format!("/v1/actions/{id}/apply"), token).await.text().await.unwrap();
            crate::helpers::parse_sse(&answer)
        }
    };
    let first = app.turn(&token, None, "add a margherita").await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let add = pending(&first)["action_id"].as_str().unwrap().to_owned();
    apply(add).await;
    let tart = pending(&app.turn(&token, Some(&conversation), "add a lemon tart").await)["action_id"]
        .as_str()
        .unwrap()
        .to_owned();
    apply(tart).await;

    let checkout = pending(&app.turn(&token, Some(&conversation), "check out").await);
    assert!(checkout["preview"].as_str().unwrap().contains("total $22"), "{checkout}");
    // The last tart goes while the diner reads the preview.
    kitchen(&app, "lemon_tart", false, &secret).await;
    let applied = apply(checkout["action_id"].as_str().unwrap().to_owned()).await;
    let fresh = pending(&applied);
    assert_eq!(fresh["replaces"], checkout["action_id"]);
    let preview = fresh["preview"].as_str().unwrap();
    assert!(
        preview.contains("total $14") && preview.contains("Lemon Tart sold out: left out of this order"),
        "{preview}"
    );
    assert!(of(&applied, "message")[0]["text"].as_str().unwrap().contains("changed in the app since you saw it"));

    let paid = apply(fresh["action_id"].as_str().unwrap().to_owned()).await;
    let cards = of(&paid, "display");
    assert!(cards[0]["cards"][0]["title"].as_str().unwrap().contains("Pay $14"), "{cards:?}");
    let text = of(&paid, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("Sold out and left out: Lemon Tart"), "{text}");
}
