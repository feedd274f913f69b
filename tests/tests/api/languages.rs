//! The widget in the visitor's language: the page's words, direction and
//! start screen, the loader's words, and the model told which language
//! to answer in (issue #19).

use serde_json::{Value, json};
use widget::wire::i18n::{self, Msg};

use crate::helpers::{Db, HostSpec, Rig, Step, TestApp, lookup_tool, of, spawn_app};
use crate::on_both_databases;

/// The widget page of `ws` as a browser asks for it.
async fn widget_page(
    app: &TestApp,
    query: &str,
    accept_language: Option<&str>,
) -> (reqwest::header::HeaderMap, String) {
    let mut request = app.client.get(app.url(&format!("/widget?{query}")));
    if let Some(languages) = accept_language {
        request = request.header("accept-language", languages);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    (headers, response.text().await.unwrap())
}

/// The boot data the page carries.
fn boot_of(html: &str) -> Value {
    let content = html.split(r#"name="ca-boot" content=""#).nth(1).unwrap().split('"').next().unwrap();
    serde_json::from_str(
        &content.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"),
    )
    .unwrap()
}

#[tokio::test]
async fn the_widget_page_speaks_the_hosts_language_else_the_browsers_else_english() {
    let app = spawn_app(Db::Sqlite).start().await;

    let (headers, html) = widget_page(&app, "ws=ws_demo&lang=ar", Some("de")).await;
    assert!(html.contains(r#"<html lang="ar" dir="rtl""#), "the host's choice wins: {html}");
    assert!(html.contains(&i18n::text("ar", "send")), "the composer's words are Arabic");
    assert_eq!(headers["vary"], "Accept-Language", "a cache keeps one page per language");
    let boot = boot_of(&html);
    assert_eq!(boot["lang"], "ar");
    let words = boot["words"].as_array().unwrap();
    assert_eq!(words.len(), Msg::ALL.len(), "every word, in order");
    assert_eq!(words[Msg::Placeholder as usize], i18n::text("ar", "placeholder"));

    let (_, html) = widget_page(&app, "ws=ws_demo", Some("pt-BR,de-CH;q=0.8,fr;q=0.5")).await;
    assert!(html.contains(r#"<html lang="de" dir="ltr""#), "the browser's first language the widget speaks");
    assert!(html.contains(&i18n::text("de", "new_conversation")));

    let (_, html) = widget_page(&app, "ws=ws_demo&lang=xx%22%3E", Some("it")).await;
    assert!(html.contains(r#"<html lang="en" dir="ltr""#), "else English");
    assert!(html.contains("Type a message…") || html.contains("Connecting…"));
}

#[tokio::test]
async fn the_loader_carries_every_languages_words_and_no_comments() {
    let app = spawn_app(Db::Sqlite).start().await;
    let js = app.client.get(app.url("/embed.js")).send().await.unwrap().text().await.unwrap();
    assert!(!js.contains("/*") && !js.contains("  "), "served minified");
    let table = js.split("WORDS=").nth(1).unwrap();
    let words: Value = serde_json::Deserializer::from_str(table).into_iter().next().unwrap().unwrap();
    for lang in i18n::LANGUAGES {
        let expected: Vec<String> = i18n::LOADER_KEYS.iter().map(|key| i18n::text(lang, key)).collect();
        assert_eq!(words[lang], json!(expected), "{lang}");
    }
    assert!(js.contains("data-lang"), "a host names the language on the script tag");
}

on_both_databases!(a_workspace_greets_visitors_in_their_language);

async fn a_workspace_greets_visitors_in_their_language(db: Db) {
    let rig = Rig::start(db, HostSpec::new(lookup_tool()), vec![Step::Text("hi")], &[]).await;
    let welcome = json!({
        "es": {"greeting": "¡Hola! Pregúntame por tu pedido.", "prompts": ["¿Dónde está mi pedido?", "Quiero devolver algo"]},
        "en": {"greeting": "<b>Hi</b> & welcome", "prompts": []},
    });
    let (status, shown) = rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({ "welcome": welcome })).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["welcome"]["es"]["prompts"][1], "Quiero devolver algo");
    let (_, read) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(read["welcome"], shown["welcome"]);
    // The widget page of an allowed origin's visitor.
    let ws = format!("ws={}", rig.workspace);

    let (_, spanish) = widget_page(&rig.app, &format!("{ws}&lang=es-MX"), None).await;
    assert!(spanish.contains("¡Hola! Pregúntame por tu pedido."), "{spanish}");
    assert!(spanish.contains(r#"class="ca-prompt""#) && spanish.contains("¿Dónde está mi pedido?"));
    let (_, english) = widget_page(&rig.app, &ws, None).await;
    assert!(english.contains("&lt;b&gt;Hi&lt;/b&gt; &amp; welcome"), "a greeting is text, never markup");
    assert!(!english.contains("<b>Hi</b>") && !english.contains(r#"class="ca-prompt""#));
    let (_, french) = widget_page(&rig.app, &format!("{ws}&lang=fr"), None).await;
    assert!(french.contains(&i18n::text("fr", "greeting")), "no French screen: the neutral greeting, in French");

    for (bad, field) in [
        (json!({"es": {"prompts": ["a", "b", "c", "d", "e"]}}), "welcome.es.prompts"),
        (json!({"de": {"greeting": "zwei\nZeilen"}}), "welcome.de.greeting"),
        (json!({"ja": {"greeting": "   "}}), "welcome.ja.greeting"),
        (json!({"pt": {"greeting": "Olá"}}), "pt"),
        (json!({"en": {"greeting": "hi", "script": "x"}}), "script"),
        (json!(["en"]), "welcome"),
    ] {
        let (status, refused) = rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({ "welcome": bad })).await;
        assert_eq!(status, 400, "{bad}: {refused}");
        assert!(refused["error"].as_str().unwrap().contains(field), "{bad}: {refused}");
    }
    let (_, unchanged) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(unchanged["welcome"], shown["welcome"], "a refused change keeps the last one");

    let (status, cleared) = rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({"welcome": {}})).await;
    assert_eq!((status, &cleared["welcome"]), (200, &json!({})));
    let (_, spanish) = widget_page(&rig.app, &format!("{ws}&lang=es"), None).await;
    assert!(spanish.contains(&i18n::text("es", "greeting")) && !spanish.contains("ca-prompt\""));
}

on_both_databases!(the_model_is_told_the_users_language_and_the_servers_notices_follow_it);

async fn the_model_is_told_the_users_language_and_the_servers_notices_follow_it(db: Db) {
    let rig = Rig::start(
        db,
        HostSpec::new(lookup_tool()),
        vec![Step::Call("lookup", json!({}))],
        &[("CA_MAX_ITERATIONS", "1")],
    )
    .await;
    let system =
        |n: usize| rig.model.requests.lock().unwrap()[n]["messages"][0]["content"].as_str().unwrap().to_owned();

    let body = json!({"message": "busca algo", "lang": "es-ES"});
    let response = rig.app.post("/v1/chat/turns", &rig.token, &body).await;
    let events = crate::helpers::parse_sse(&response.text().await.unwrap());
    assert!(system(0).contains("in Spanish"), "{}", system(0));
    let text = of(&events, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains(&i18n::text("es", "notice_iterations")), "the limit's notice in Spanish: {text}");
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();

    // A later turn that names no language keeps the conversation's.
    rig.app.turn(&rig.token, Some(&conversation), "otra vez").await;
    assert!(system(1).contains("in Spanish"), "{}", system(1));
    // One the widget does not speak changes nothing; a new conversation without one is English.
    let body = json!({"conversation_id": conversation, "message": "again", "lang": "pt-BR"});
    rig.app.post("/v1/chat/turns", &rig.token, &body).await.text().await.unwrap();
    assert!(system(2).contains("in Spanish"), "{}", system(2));
    // Another one it speaks moves the conversation to it, for later turns too.
    let body = json!({"conversation_id": conversation, "message": "again", "lang": "fr"});
    rig.app.post("/v1/chat/turns", &rig.token, &body).await.text().await.unwrap();
    assert!(system(3).contains("in French"), "{}", system(3));
    rig.app.turn(&rig.token, Some(&conversation), "encore").await;
    assert!(system(4).contains("in French"), "{}", system(4));
    let long = json!({"message": "hi", "lang": "x".repeat(36)});
    assert_eq!(rig.app.post("/v1/chat/turns", &rig.token, &long).await.status(), 400);
    let events = rig.say("find something").await;
    assert!(system(5).contains("in English"), "{}", system(5));
    let text = of(&events, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("more steps than I may take"), "{text}");
}
