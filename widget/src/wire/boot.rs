//! What the widget page tells the widget at boot, the Caddie host bar's
//! content, and the host's theme — nothing secret, everything validated.

use serde::{Deserialize, Serialize};

/// What the widget page tells the widget at boot (rendered by the server
/// into a `<meta name="ca-boot">` tag): nothing secret.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WidgetBoot {
    pub workspace_id: String,
    /// Origins allowed to embed the widget and hand it a token.
    pub allowed_origins: Vec<String>,
    /// True when the built-in offline demo model answers.
    pub demo_model: bool,
    /// The assistant's display name.
    pub title: String,
    /// The host page's look, validated by the server.
    #[serde(default)]
    pub theme: Theme,
    /// The embed token, only for the full-page app launched from Caddie:
    /// there is no host page to hand one over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Where the full-page app asks for a fresh token when its own runs
    /// out (`POST`, same origin, the session's cookie; answers `{"token"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_path: Option<String>,
    /// The Caddie host bar, when launched from Caddie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caddie: Option<CaddieBar>,
    /// The visitor's language (one of `i18n::LANGUAGES`).
    #[serde(default)]
    pub lang: String,
    /// The widget's words in that language, in `i18n::Msg` order.
    #[serde(default)]
    pub words: Vec<String>,
    /// The workspace's start screen in that language: its greeting (none:
    /// the neutral default) and up to four suggested prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greeting: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// The media types a visitor may attach, comma-separated (a file
    /// input's `accept`); empty: the workspace takes no attachments.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub accept: String,
}

/// What the Caddie host bar shows (caddie-tool-contract-ct1.md §6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaddieBar {
    pub project_name: String,
    pub stage_label: String,
    /// The hub's project page (`ret`), checked against the hub's origin.
    pub return_url: String,
    /// `?tour=1`: the guided introduction hands in here and back with `?tour=done`.
    #[serde(default)]
    pub tour: bool,
    /// Embed mode (§9): the hub's origin, when the space is framed in the
    /// hub's project page — no host bar, and the `caddie-embed` bus talks
    /// to this origin only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_hub: Option<String>,
}

/// A workspace's start screen in each language it wrote one for: what
/// the empty chat greets the visitor with. One field per language the
/// widget speaks (`i18n::LANGUAGES`), so another is refused by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Welcome {
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "screen")]
    pub en: Option<StartScreen>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "screen")]
    pub es: Option<StartScreen>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "screen")]
    pub fr: Option<StartScreen>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "screen")]
    pub de: Option<StartScreen>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "screen")]
    pub ja: Option<StartScreen>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "screen")]
    pub ar: Option<StartScreen>,
}

/// A start screen only as a JSON object (serde would take `[]` for one too).
fn screen<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<StartScreen>, D::Error> {
    use serde::de::Error;
    match Option::<serde_json::Map<String, serde_json::Value>>::deserialize(deserializer)? {
        Some(object) => serde_json::from_value(serde_json::Value::Object(object)).map(Some).map_err(D::Error::custom),
        None => Ok(None),
    }
}

impl Welcome {
    /// Each language with its start screen, if it has one.
    pub fn screens(&self) -> [(&'static str, Option<&StartScreen>); 6] {
        [
            ("en", self.en.as_ref()),
            ("es", self.es.as_ref()),
            ("fr", self.fr.as_ref()),
            ("de", self.de.as_ref()),
            ("ja", self.ja.as_ref()),
            ("ar", self.ar.as_ref()),
        ]
    }

    /// The start screen of `lang`, if the workspace wrote one.
    pub fn of(&self, lang: &str) -> Option<&StartScreen> {
        self.screens().into_iter().find(|(l, _)| *l == lang).and_then(|(_, s)| s)
    }

    /// Why it cannot be kept, if it cannot: a greeting or prompt empty,
    /// too long or with control characters (a line break, say), more than
    /// four prompts.
    pub fn refusal(&self) -> Option<String> {
        let fits = |text: &str, max: usize| {
            !text.trim().is_empty() && text.chars().count() <= max && !text.chars().any(char::is_control)
        };
        for (lang, screen) in self.screens() {
            let Some(screen) = screen else { continue };
            if screen.greeting.as_deref().is_some_and(|g| !fits(g, 300)) {
                return Some(format!("welcome.{lang}.greeting: 1 to 300 characters on one line"));
            }
            if screen.prompts.len() > 4 || !screen.prompts.iter().all(|p| fits(p, 100)) {
                return Some(format!("welcome.{lang}.prompts: at most 4, each 1 to 100 characters on one line"));
            }
        }
        None
    }
}

/// The empty chat's greeting and suggested prompts in one language.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StartScreen {
    /// 1 to 300 characters on one line, not only spaces; none: the
    /// widget's neutral greeting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "ssr",
        schema(
            min_length = 1,
            max_length = 300,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub greeting: Option<String>,
    /// Up to four prompts the visitor sends with one click: each 1 to 100
    /// characters on one line, not only spaces.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_items = 4, value_type = Vec<PromptText>))]
    pub prompts: Vec<String>,
}

/// A suggested prompt, as the API's schema describes it.
#[cfg(feature = "ssr")]
#[derive(utoipa::ToSchema)]
#[schema(
    min_length = 1,
    max_length = 100,
    pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000-\\u001f\\u007f-\\u009f]*$"
)]
#[allow(dead_code)] // describes the strings of `prompts`
pub struct PromptText(String);

/// What a host may set of the widget's look (through the loader's `init`
/// options). Every value is validated before it reaches CSS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Theme {
    /// `light` or `dark`; none follows `prefers-color-scheme`.
    pub mode: Option<String>,
    /// `#rrggbb`.
    pub accent: Option<String>,
    /// Corner radius in pixels, 0 to 32.
    pub radius: Option<u8>,
    /// A CSS font-family list of letters, digits, spaces, commas, quotes and hyphens.
    pub font: Option<String>,
}

impl Theme {
    /// Keeps only valid values.
    pub fn parse(mode: Option<&str>, accent: Option<&str>, radius: Option<&str>, font: Option<&str>) -> Self {
        let mode = mode.filter(|m| matches!(*m, "light" | "dark")).map(str::to_owned);
        let accent = accent
            .filter(|a| a.len() == 7 && a.starts_with('#') && a[1..].bytes().all(|b| b.is_ascii_hexdigit()))
            .map(str::to_owned);
        let radius = radius.and_then(|r| r.parse::<u8>().ok()).filter(|r| *r <= 32);
        let font = font
            .filter(|f| {
                (1..=120).contains(&f.len())
                    && f.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | ',' | '"' | '\'' | '-'))
            })
            .map(str::to_owned);
        Self { mode, accent, radius, font }
    }

    /// The CSS custom properties this theme sets, for a `:root` rule.
    pub fn css(&self) -> String {
        let mut css = String::new();
        if let Some(accent) = &self.accent {
            css.push_str(&format!("--ca-accent:{accent};"));
        }
        if let Some(radius) = self.radius {
            css.push_str(&format!("--ca-radius:{radius}px;"));
        }
        if let Some(font) = &self.font {
            css.push_str(&format!("--ca-font:{font};"));
        }
        css
    }
}

#[cfg(test)]
mod tests {
    use super::{StartScreen, Theme, Welcome};

    #[test]
    fn a_welcome_is_kept_only_in_shape() {
        let screen = |greeting: Option<&str>, prompts: &[&str]| StartScreen {
            greeting: greeting.map(str::to_owned),
            prompts: prompts.iter().map(|p| (*p).to_owned()).collect(),
        };
        let welcome = Welcome {
            ar: Some(screen(Some("مرحبا"), &["اعرض القائمة"])),
            en: Some(screen(None, &["a", "b", "c", "d"])),
            ..Welcome::default()
        };
        assert_eq!(welcome.refusal(), None);
        assert_eq!(welcome.of("ar").and_then(|s| s.greeting.as_deref()), Some("مرحبا"));
        assert_eq!(welcome.of("fr"), None);
        for bad in [
            screen(Some("  "), &[]),
            screen(Some(&"x".repeat(301)), &[]),
            screen(Some("two\nlines"), &[]),
            screen(None, &["a", "b", "c", "d", "e"]),
            screen(None, &[""]),
            screen(None, &["\u{2003}"]),
            screen(None, &[&"y".repeat(101)]),
        ] {
            let hostile = Welcome { de: Some(bad.clone()), ..Welcome::default() };
            assert!(hostile.refusal().is_some_and(|r| r.starts_with("welcome.de.")), "{bad:?}");
        }
        let other: Result<Welcome, _> = serde_json::from_str(r#"{"pt": {"greeting": "Olá"}}"#);
        assert!(other.unwrap_err().to_string().contains("unknown field `pt`"));
        for not_a_screen in [r#"{"es": []}"#, r#"{"es": ["hola"]}"#, r#"{"es": "hola"}"#] {
            assert!(serde_json::from_str::<Welcome>(not_a_screen).is_err(), "{not_a_screen}");
        }
        let none: Welcome = serde_json::from_str(r#"{"ar": null}"#).unwrap();
        assert_eq!(none, Welcome::default());
    }

    #[test]
    fn only_valid_theme_values_reach_css() {
        let t = Theme::parse(Some("dark"), Some("#aa3300"), Some("8"), Some("Inter, sans-serif"));
        assert_eq!(t.css(), "--ca-accent:#aa3300;--ca-radius:8px;--ca-font:Inter, sans-serif;");
        let hostile = Theme::parse(
            Some("dark;x"),
            Some("red;}body{display:none"),
            Some("999"),
            Some("x;}</style><script>alert(1)</script>"),
        );
        assert_eq!(hostile, Theme::default());
        assert_eq!(hostile.css(), "");
    }
}
