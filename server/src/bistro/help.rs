//! The Acme Bistro's help center: a few pages a real site would have
//! (opening hours, allergens, delivery area, refunds), each with the
//! site's navigation, header, footer and a cookie banner around its
//! content, and a sitemap listing them — what the demo workspace's
//! knowledge source reads (issue #45).

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

/// The help center's sitemap, under the demo host.
pub const SITEMAP_PATH: &str = "/bistro/help/sitemap.xml";

/// Each page: its address, title and body (trusted HTML, ours).
const PAGES: [(&str, &str, &str); 4] = [
    (
        "hours",
        "Opening hours",
        r#"<h2 id="weekly">Every week</h2>
<p>We are open Tuesday to Sunday from noon to 10 pm. We are closed on Mondays. The kitchen takes its last orders at 9:30 pm.</p>
<h2 id="holidays">Holidays</h2>
<p>We close on 25 December and 1 January. On other public holidays we keep our Sunday hours.</p>"#,
    ),
    (
        "allergens",
        "Allergens",
        r#"<h2 id="dishes">Allergens in our dishes</h2>
<ul><li>Stone-baked Margherita: gluten and milk.</li><li>Harvest Roast Bowl: sesame.</li>
<li>House Garden Salad: mustard.</li><li>Lemon Tart: gluten, eggs and milk.</li><li>Sparkling Water: none.</li></ul>
<h2 id="kitchen">Our kitchen</h2>
<p>Our kitchen handles nuts, so we cannot promise that any dish is free of traces of nuts. Tell us about an allergy when you order.</p>"#,
    ),
    (
        "delivery",
        "Delivery area",
        r#"<h2 id="area">Where we deliver</h2>
<p>We deliver within 5 km of the restaurant: Old Town, Brookside, Riverside and the Harbour district. We do not deliver to the airport.</p>
<h2 id="times">Delivery times and fees</h2>
<p>A delivery takes 30 to 45 minutes. Orders over $30 are delivered free; smaller orders cost $4 to deliver.</p>"#,
    ),
    (
        "refunds",
        "Refunds",
        r#"<h2 id="wrong-order">Something wrong with your order</h2>
<p>Tell us within 24 hours if a dish was missing or wrong and we refund it to your card within 5 business days.</p>
<h2 id="cancel">Cancelling an order</h2>
<p>An order can be cancelled for a full refund until the kitchen starts cooking it, usually 5 minutes after it is placed.</p>"#,
    ),
];

/// `GET /bistro/help/{page}`.
pub(super) async fn help_page(Path(page): Path<String>) -> Response {
    let Some((slug, title, body)) = PAGES.iter().find(|(slug, ..)| *slug == page) else {
        return (StatusCode::NOT_FOUND, "No such help page").into_response();
    };
    let nav: String = PAGES.iter().map(|(s, t, _)| format!("<li><a href=\"/bistro/help/{s}\">{t}</a></li>")).collect();
    Html(format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} · Acme Bistro help</title></head>
<body>
<header class="site-header"><a href="/">Acme Bistro</a> <a href="/bistro/menu">Menu</a> <a href="/bistro/help/{slug}">Help</a></header>
<div id="cookie-banner">We use cookies to remember your cart. <button>Accept</button></div>
<nav aria-label="Help topics"><ul>{nav}</ul></nav>
<main><article><h1>{title}</h1>
{body}
</article></main>
<footer>© Acme Bistro · 1 Harbour Street · <a href="/bistro/help/refunds">Refunds</a></footer>
</body></html>"#
    ))
    .into_response()
}

/// `GET /bistro/help/sitemap.xml`, with the addresses the request came to.
pub(super) async fn sitemap(headers: axum::http::HeaderMap) -> Response {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    let host: String =
        host.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '-' | '[' | ']')).collect();
    let urls: String =
        PAGES.iter().map(|(slug, ..)| format!("<url><loc>http://{host}/bistro/help/{slug}</loc></url>")).collect();
    (
        [(header::CONTENT_TYPE, "application/xml")],
        format!(r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>"#),
    )
        .into_response()
}
