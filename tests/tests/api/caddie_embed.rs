//! Embed mode (caddie-tool-contract-ct1.md §9), with the rig of `caddie.rs`:
//! the token redeemed from the fragment through `POST /api/embed/redeem`
//! (burn-first, like `/launch`), `frame-ancestors` naming the hub on the
//! embed routes only, and the in-frame identity — silent probe framed, a
//! popup for anything interactive.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Browser, Page, Rig, boot, now, prompts, sign};
use crate::helpers::Db;
use crate::on_both_databases;

on_both_databases!(the_embed_redeem_burns_first_and_a_replay_or_a_forgery_is_refused);

async fn redeem(browser: &mut Browser, body: &str) -> (u16, Value) {
    let url = format!("http://{}/api/embed/redeem", browser.app);
    let response = browser.client.post(url).header("content-type", "application/json").body(body.to_owned());
    let response = response.send().await.unwrap();
    let status = response.status().as_u16();
    assert_eq!(response.headers()["cache-control"], "no-store");
    (status, response.json().await.unwrap_or(Value::Null))
}

fn frame_ancestors(page: &Page) -> String {
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    csp.split(';').map(str::trim).find(|d| d.starts_with("frame-ancestors")).unwrap_or_default().to_owned()
}

/// The `attribute="…"` of the first element carrying it, unescaped.
fn attribute(body: &str, name: &str) -> Option<String> {
    let start = body.find(&format!("{name}=\""))? + name.len() + 2;
    let end = start + body[start..].find('"')?;
    Some(body[start..end].replace("&amp;", "&"))
}

async fn the_embed_redeem_burns_first_and_a_replay_or_a_forgery_is_refused(db: Db) {
    let rig = Rig::start(db, &["alice"]).await;
    let mut browser = rig.browser();
    let claims = rig.claims("alice");

    // A forgery with the genuine token's jti burns nothing.
    let forged = sign(&claims, b"a key the hub never had");
    assert_eq!(redeem(&mut browser, &json!({ "lt": forged }).to_string()).await.1["code"], "invalid_link");
    let (status, answer) = redeem(&mut browser, &json!({ "lt": rig.token(&claims) }).to_string()).await;
    assert_eq!(status, 200, "{answer}");
    let open = answer["open"].as_str().unwrap();
    let ctx = open.strip_prefix("/caddie/open?cctx=").unwrap().strip_suffix("&embed=1").unwrap();
    assert!(ctx.len() == 32 && ctx.bytes().all(|b| b.is_ascii_hexdigit()), "{open}");

    // The same token again, through either door: used.
    let (status, replay) = redeem(&mut browser, &json!({ "lt": rig.token(&claims) }).to_string()).await;
    assert_eq!((status, replay["code"].as_str()), (401, Some("link_expired")));
    assert_eq!(rig.browser().visit(&format!("/launch?lt={}", rig.token(&claims))).await.status, 401);
    // …and a token used at /launch cannot be redeemed in a frame.
    let launched = rig.claims("alice");
    assert_eq!(rig.launch_once(&launched).await.status(), 303);
    let (status, _) = redeem(&mut browser, &json!({ "lt": rig.token(&launched) }).to_string()).await;
    assert_eq!(status, 401);

    let mut expired = rig.claims("alice");
    expired["iat"] = json!(now() - 200);
    expired["exp"] = json!(now() - 80);
    let (status, answer) = redeem(&mut browser, &json!({ "lt": rig.token(&expired) }).to_string()).await;
    assert_eq!((status, answer["code"].as_str()), (401, Some("link_expired")));
    let mut ct2 = rig.claims("alice");
    ct2["ver"] = json!("ct2");
    let (status, answer) = redeem(&mut browser, &json!({ "lt": rig.token(&ct2) }).to_string()).await;
    assert_eq!((status, answer["code"].as_str()), (409, Some("contract_mismatch")));
    for bad in ["", "[]", "{}", "{\"lt\": 7}", "not json"] {
        let (status, answer) = redeem(&mut browser, bad).await;
        assert_eq!((status, answer["code"].as_str()), (400, Some("bad_request")), "{bad}");
    }
    let tour = rig.claims("alice");
    let (_, answer) = redeem(&mut browser, &json!({ "lt": rig.token(&tour), "tour": true }).to_string()).await;
    assert!(answer["open"].as_str().unwrap().ends_with("&embed=1&tour=1"), "{answer}");
}

#[tokio::test]
async fn only_the_embed_routes_may_be_framed_by_the_hub() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let hub = format!("frame-ancestors 'self' {}", rig.hub);
    let mut browser = rig.browser_at_idp("alice").await;

    let entry = browser.visit("/embed").await;
    assert_eq!(entry.status, 200);
    assert_eq!(frame_ancestors(&entry), hub);
    let csp = entry.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self';") && !csp.contains("unsafe-inline"), "{csp}");
    assert!(entry.body.contains("<script src=\"/caddie-embed.js\" defer></script>"));
    assert!(entry.body.contains(&format!("<meta name=\"ca-hub\" content=\"{}\">", rig.hub)));

    // The whole framed path names the hub; the same pages at top level do not.
    let (_, answer) = redeem(&mut browser, &json!({ "lt": rig.token(&rig.claims("alice")) }).to_string()).await;
    let space = browser.visit(answer["open"].as_str().unwrap()).await;
    assert_eq!(space.status, 200, "{} {}", space.url, space.body);
    assert!(space.url.ends_with("&embed=1"), "{}", space.url);
    assert_eq!(frame_ancestors(&space), hub);
    assert_eq!(boot(&space)["caddie"]["embed_hub"], rig.hub.as_str());
    assert!(!space.body.contains("ca-hostbar"), "no host bar inside the hub's page");
    assert!(space.body.contains("ca-embedded"));

    let top = browser.visit(&space.url.replace("&embed=1", "")).await;
    assert_eq!(top.status, 200);
    assert_eq!(frame_ancestors(&top), "frame-ancestors 'self'");
    assert!(boot(&top)["caddie"].get("embed_hub").is_none());
    assert!(top.body.contains("ca-hostbar"));

    let bad = "/caddie/open?cctx=nope";
    assert_eq!(frame_ancestors(&browser.visit(&format!("{bad}&embed=1")).await), hub);
    assert_eq!(frame_ancestors(&browser.visit(bad).await), "frame-ancestors 'self'");
    for path in ["/launch?lt=x", "/caddie/embed/signed-in", "/api/meta", "/health", "/caddie.css"] {
        let page = browser.visit(path).await;
        assert_eq!(frame_ancestors(&page), "frame-ancestors 'self'", "{path}");
    }
}

#[tokio::test]
async fn in_the_frame_the_sign_in_is_silent_and_anything_interactive_goes_to_a_popup() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut frame = rig.browser();

    // No session at the provider: the silent probe runs framed, then a card.
    let (_, answer) = redeem(&mut frame, &json!({ "lt": rig.token(&rig.claims("alice")) }).to_string()).await;
    let open = answer["open"].as_str().unwrap().to_owned();
    let card = frame.visit(&open).await;
    assert_eq!(card.status, 200, "{}", card.body);
    assert!(card.url.contains("/caddie/auth/callback?"), "{}", card.url);
    assert_eq!(prompts(&card.trail, &rig.op.issuer), [Some("none".to_owned())], "no password page in the frame");
    assert!(card.body.contains("<h1>Sign in to continue</h1>"));
    assert_eq!(attribute(&card.body, "data-event").as_deref(), Some("needs-auth"));
    assert_eq!(attribute(&card.body, "data-resume").as_deref(), Some(open.as_str()));
    let popup_url = attribute(&card.body, "data-popup").unwrap();
    assert_eq!(popup_url, "/caddie/login?interactive=1&next=%2Fcaddie%2Fembed%2Fsigned-in");
    assert_eq!(frame_ancestors(&card), format!("frame-ancestors 'self' {}", rig.hub));
    assert!(!frame.cookies.contains_key("ca_session"));

    // The popup (a top-level window sharing the cookies) signs in at the provider.
    let login = frame.visit(&popup_url).await;
    let done = rig.log_in_at_idp(&mut frame, &login, "alice").await;
    assert_eq!(done.status, 200);
    assert!(done.url.ends_with("/caddie/embed/signed-in"), "{}", done.url);
    assert!(done.body.contains("data-signed-in"));
    assert_eq!(frame_ancestors(&done), "frame-ancestors 'self'");

    // The frame resumes: the launch provisions as usual and lands framed.
    let space = frame.visit(&open).await;
    assert_eq!(space.status, 200, "{}", space.body);
    assert!(space.url.contains(&format!("/caddie/spaces/{}?cctx=", rig.workspace)) && space.url.ends_with("&embed=1"));
    assert_eq!(rig.grants().await, [(rig.workspace.clone(), "alice".to_owned(), 1)]);

    // Signed out (opted out of the silent probe): the card at once, no provider in the frame.
    let out = frame.go(Method::POST, "/caddie/logout", Some(&[])).await;
    assert_eq!(out.status, 200);
    let again = frame.visit(&format!("/caddie/spaces/{}?embed=1", rig.workspace)).await;
    assert!(again.body.contains("<h1>Sign in to continue</h1>"), "{}", again.body);
    assert!(prompts(&again.trail, &rig.op.issuer).is_empty(), "{:?}", again.trail);
}

#[tokio::test]
async fn framed_a_silent_sign_in_lands_at_once_and_switching_accounts_goes_to_the_popup() {
    let rig = Rig::start(Db::Sqlite, &["alice"]).await;
    let mut frame = rig.browser_at_idp("alice").await;
    let (_, answer) = redeem(&mut frame, &json!({ "lt": rig.token(&rig.claims("alice")) }).to_string()).await;
    let space = frame.visit(answer["open"].as_str().unwrap()).await;
    assert_eq!(space.status, 200, "{}", space.body);
    assert!(space.url.ends_with("&embed=1"));
    assert_eq!(prompts(&space.trail, &rig.op.issuer), [Some("none".to_owned())]);

    // Bob, signed in, opens a link made for alice inside the frame.
    let mut bob = rig.browser_at_idp("bob").await;
    let (_, answer) = redeem(&mut bob, &json!({ "lt": rig.token(&rig.claims("alice")) }).to_string()).await;
    let page = bob.visit(answer["open"].as_str().unwrap()).await;
    assert_eq!(page.status, 403);
    assert!(page.body.contains("This link was prepared for a different user."));
    assert!(!page.body.contains("alice"), "names nobody");
    assert!(page.body.contains("target=\"ca-sign-in\""), "the switch happens in the popup");
    let next = attribute(&page.body, "value").unwrap();
    assert_eq!(next, "/caddie/login?switch=1&next=%2Fcaddie%2Fembed%2Fsigned-in");
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains(&format!("form-action 'self' {}", rig.op.issuer)), "{csp}");
    assert_eq!(frame_ancestors(&page), format!("frame-ancestors 'self' {}", rig.hub));
    assert_eq!(rig.grants().await, [(rig.workspace.clone(), "alice".to_owned(), 1)], "bob got nothing");
}
