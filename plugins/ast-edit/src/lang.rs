//! Which tree-sitter grammars this build carries, and how `ast_edit` picks one for a file: the
//! `lang` argument when given (any name or alias ast-grep accepts), otherwise the file's
//! extension as ast-grep maps it (`SupportLang::from_path`).
//!
//! `ast-grep-language` names every language it knows, but only the grammars enabled by its cargo
//! features are compiled; touching any other one hits `unimplemented!` inside the crate. So every
//! language goes through [`enabled`] before it is used. With this crate's `all-languages`
//! feature that is every language ast-grep ships; without it, the core five.

use std::path::Path;
use std::sync::LazyLock;

use ast_grep_language::{Language, SupportLang};

/// The grammars compiled in without the `all-languages` feature: keep in step with the
/// `tree-sitter-*` features of `ast-grep-language` in `Cargo.toml` (`typescript` brings both
/// TypeScript and TSX).
#[cfg(not(feature = "all-languages"))]
const CORE: &[SupportLang] = &[
    SupportLang::Rust,
    SupportLang::TypeScript,
    SupportLang::Tsx,
    SupportLang::JavaScript,
    SupportLang::Python,
];

/// Every language whose grammar is compiled in.
pub fn enabled() -> &'static [SupportLang] {
    #[cfg(feature = "all-languages")]
    return SupportLang::all_langs();
    #[cfg(not(feature = "all-languages"))]
    CORE
}

/// The lowercase name shown to users (`rust`, `csharp`, `typescript`), which ast-grep also
/// accepts as `lang`.
pub fn name(lang: SupportLang) -> String {
    lang.to_string().to_lowercase()
}

/// The enabled languages, `bash, c, cpp, ...`, sorted.
pub fn enabled_names() -> &'static str {
    static NAMES: LazyLock<String> = LazyLock::new(|| {
        let mut names: Vec<String> = enabled().iter().map(|&l| name(l)).collect();
        names.sort();
        names.join(", ")
    });
    &NAMES
}

/// Whether `lang`'s grammar is compiled in.
pub fn is_enabled(lang: SupportLang) -> bool {
    enabled().contains(&lang)
}

/// Parse the `lang` argument (a name or alias such as `rs`, `ts`, `py`, `golang`, `c++`,
/// case-insensitive), as ast-grep does.
pub fn parse(raw: &str) -> Result<SupportLang, String> {
    let trimmed = raw.trim();
    match trimmed.parse::<SupportLang>() {
        Ok(lang) if is_enabled(lang) => Ok(lang),
        Ok(lang) => Err(format!(
            "Language `{trimmed}` ({}) is not enabled in this build; supported languages: {}",
            name(lang),
            enabled_names()
        )),
        Err(_) => Err(format!(
            "Unknown language `{trimmed}`; supported languages: {}",
            enabled_names()
        )),
    }
}

/// The language a file's extension names, whether or not its grammar is compiled in.
pub fn guess(path: &Path) -> Option<SupportLang> {
    SupportLang::from_path(path)
}

/// The compiled-in language for a file's extension, if any.
pub fn from_path(path: &Path) -> Option<SupportLang> {
    guess(path).filter(|&lang| is_enabled(lang))
}
