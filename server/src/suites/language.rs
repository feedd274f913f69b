//! What language a reply is in, for `language:` expectations: whatlang's
//! trigram detection among the widget's six languages and the one
//! expected, by ISO 639-3 code (the common 639-1 codes are read too).

/// ISO 639-1 codes and their 639-3 equivalents, for the languages whatlang
/// detects that a host is likeliest to name.
const TWO_LETTER: &[(&str, &str)] = &[
    ("en", "eng"),
    ("es", "spa"),
    ("fr", "fra"),
    ("de", "deu"),
    ("ja", "jpn"),
    ("ar", "ara"),
    ("it", "ita"),
    ("pt", "por"),
    ("nl", "nld"),
    ("ru", "rus"),
    ("zh", "cmn"),
    ("ko", "kor"),
    ("pl", "pol"),
    ("tr", "tur"),
    ("sv", "swe"),
    ("da", "dan"),
    ("fi", "fin"),
    ("nb", "nob"),
    ("cs", "ces"),
    ("el", "ell"),
    ("he", "heb"),
    ("hi", "hin"),
    ("uk", "ukr"),
    ("hu", "hun"),
    ("ro", "ron"),
    ("id", "ind"),
    ("vi", "vie"),
    ("th", "tha"),
    ("fa", "pes"),
    ("ca", "cat"),
];

/// The 639-3 code `code` names (639-1 or 639-3, any case), if whatlang knows it.
fn lang(code: &str) -> Option<whatlang::Lang> {
    let code = code.trim().to_ascii_lowercase();
    let code = code.split(['-', '_']).next().unwrap_or_default();
    let three = TWO_LETTER.iter().find(|(two, _)| *two == code).map_or(code, |(_, three)| *three);
    whatlang::Lang::from_code(three)
}

/// Whether `code` names a language this can tell.
pub fn known(code: &str) -> bool {
    lang(code).is_some()
}

/// The widget's languages (`widget::wire::i18n::LANGUAGES`), as whatlang names them.
const WIDGET: [&str; 6] = ["eng", "spa", "fra", "deu", "jpn", "ara"];

/// A detector among the widget's languages and `also` (the one expected):
/// among every language whatlang knows, a short English reply naming a
/// "Margherita" reads as Italian or Latin.
fn detector(also: Option<whatlang::Lang>) -> whatlang::Detector {
    let mut list: Vec<whatlang::Lang> = WIDGET.iter().filter_map(|three| whatlang::Lang::from_code(*three)).collect();
    if let Some(lang) = also.filter(|l| !list.contains(l)) {
        list.push(lang);
    }
    whatlang::Detector::with_allowlist(list)
}

/// The language `text` is in (its 639-3 code), when it can be told.
pub fn detect(text: &str) -> Option<&'static str> {
    detector(None).detect_lang(text).map(|lang| lang.code())
}

/// Whether `text` is in the language `code` names.
pub fn is_in(text: &str, code: &str) -> bool {
    let Some(wanted) = lang(code) else { return false };
    detector(Some(wanted)).detect_lang(text) == Some(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_told_apart_by_language() {
        let spanish = "Aquí está el menú: cinco platos, de 9 a 18 dólares. ¿Quieres añadir algo al carrito?";
        assert!(is_in(spanish, "es") && is_in(spanish, "spa") && is_in(spanish, "es-MX"));
        assert!(!is_in(spanish, "en"));
        let english = "Here is the menu: five dishes, from nine to eighteen dollars. Shall I add one to your cart?";
        assert!(is_in(english, "en") && !is_in(english, "es"));
        assert_eq!(detect(english), Some("eng"));
        assert!(known("fr") && known("deu") && !known("klingon") && !known(""));
        assert!(is_in("Added 2 × Margherita to your cart.", "en"), "a short reply is not taken for Latin");
    }
}
