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
    use super::Theme;

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
