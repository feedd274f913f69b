//! The bistro's own pages: the menu the cards link to, and the demo's
//! stand-in for a payment page, which verifies a signed checkout link.

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::checkout;
use super::menu::{BistroState, MENU};

#[derive(Deserialize)]
pub(super) struct PayQuery {
    cart: Option<String>,
    total: Option<String>,
    src: Option<String>,
    exp: Option<String>,
    sig: Option<String>,
}

/// The demo's stand-in for pay.acme.example: it shows the verified order
/// and takes no payment; a link that does not verify starts over.
pub(super) async fn pay_page(State(state): State<BistroState>, Query(q): Query<PayQuery>) -> Response {
    let verified = checkout::verify(
        &state.bistro.checkout_key,
        q.cart.as_deref(),
        q.total.as_deref(),
        q.src.as_deref(),
        q.exp.as_deref(),
        q.sig.as_deref(),
        crate::ids::now_secs(),
    );
    // Availability is checked again here, as the contract asks: a dish
    // that sold out after the link was minted cannot be paid for.
    let stock = match state.stock().await {
        Ok(stock) => stock,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "bistro: cannot read what is sold out");
            return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "The kitchen's system failed; try again.")
                .into_response();
        }
    };
    let sold_out: Vec<&'static str> = match &verified {
        Ok(order) => order
            .lines
            .iter()
            .filter(|(id, _)| !stock.is_available(id))
            .filter_map(|(id, _)| MENU.iter().find(|m| m.id == *id).map(|m| m.name))
            .collect(),
        Err(_) => Vec::new(),
    };
    let body = match verified {
        Ok(_) if !sold_out.is_empty() => {
            tracing::info!(dishes = ?sold_out, "checkout refused: sold out since the link was made");
            format!(
                "<h1>Sold out — start again</h1><p>{} sold out since this order was made, and nothing was \
                 charged. Go back to the chat to change your order.</p><p><a href=\"/\">Back to Acme Bistro</a></p>",
                sold_out.join(", ")
            )
        }
        Ok(order) => {
            let mut rows = String::new();
            for (id, quantity) in &order.lines {
                let item = MENU.iter().find(|m| m.id == *id).expect("verified ids are on the menu");
                rows.push_str(&format!(
                    "<tr><td>{quantity} × {}</td><td class=\"price\">${}</td></tr>",
                    item.name,
                    item.price * quantity
                ));
            }
            format!(
                "<h1>Your order</h1><table class=\"order\">{rows}<tr class=\"total\"><th>Total</th>\
                 <th class=\"price\" data-total=\"{total}\">${total}</th></tr></table>\
                 <p class=\"demo-note\">This is a demo checkout: no card is asked for and nothing is charged.</p>",
                total = order.total
            )
        }
        Err(reason) => {
            tracing::info!(?reason, "checkout link refused");
            "<h1>Cart expired — start again</h1><p>This checkout link is no longer valid. \
             Go back to the chat and check out again.</p><p><a href=\"/\">Back to Acme Bistro</a></p>"
                .to_owned()
        }
    };
    let mut response = Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Checkout · Acme Bistro</title><link rel=\"stylesheet\" href=\"/demo.css\"></head>\
         <body class=\"bistro\"><main>{body}</main></body></html>"
    ))
    .into_response();
    // The signed link must not leak onwards through a Referer.
    response.headers_mut().insert(header::REFERRER_POLICY, axum::http::HeaderValue::from_static("no-referrer"));
    response.headers_mut().insert(header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    response
}

/// The page the menu cards link to.
pub(super) async fn menu_page() -> Html<String> {
    let mut rows = String::new();
    for item in MENU {
        rows.push_str(&format!(
            "<li id=\"{}\"><strong>{}</strong> <span>${}</span> <em>{}</em></li>",
            item.id, item.name, item.price, item.kind
        ));
    }
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Menu · Acme Bistro</title><link rel=\"stylesheet\" href=\"/demo.css\"></head>\
         <body class=\"bistro\"><main><h1>Acme Bistro menu</h1><ul class=\"menu\">{rows}</ul>\
         <p><a href=\"/\">Back to Acme Bistro</a></p></main></body></html>"
    ))
}
