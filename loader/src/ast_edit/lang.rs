//! Which tree-sitter grammars this build carries, and how `ast_edit` picks one for a file: the
//! `lang` argument when given, otherwise the file's extension.
//!
//! `ast-grep-language` names every language it knows, but only the grammars enabled by its cargo
//! features are compiled; touching any other one hits `unimplemented!` inside the crate. So every
//! language goes through [`ENABLED`] before it is used.

use std::path::Path;

use ast_grep_language::{Language, SupportLang};

/// The grammars compiled in: keep in step with the `tree-sitter-*` features of
/// `ast-grep-language` in `loader/Cargo.toml` (`typescript` brings both TypeScript and TSX).
pub const ENABLED: &[SupportLang] = &[
    SupportLang::Rust,
    SupportLang::TypeScript,
    SupportLang::Tsx,
    SupportLang::JavaScript,
    SupportLang::Python,
];

/// The lowercase name shown to users.
pub fn name(lang: SupportLang) -> &'static str {
    match lang {
        SupportLang::Rust => "rust",
        SupportLang::TypeScript => "typescript",
        SupportLang::Tsx => "tsx",
        SupportLang::JavaScript => "javascript",
        SupportLang::Python => "python",
        SupportLang::Bash => "bash",
        SupportLang::C => "c",
        SupportLang::Cpp => "cpp",
        SupportLang::CSharp => "csharp",
        SupportLang::Css => "css",
        SupportLang::Dart => "dart",
        SupportLang::Elixir => "elixir",
        SupportLang::Go => "go",
        SupportLang::Haskell => "haskell",
        SupportLang::Hcl => "hcl",
        SupportLang::Html => "html",
        SupportLang::Java => "java",
        SupportLang::Json => "json",
        SupportLang::Kotlin => "kotlin",
        SupportLang::Lua => "lua",
        SupportLang::Markdown => "markdown",
        SupportLang::Nix => "nix",
        SupportLang::Php => "php",
        SupportLang::Ruby => "ruby",
        SupportLang::Scala => "scala",
        SupportLang::Solidity => "solidity",
        SupportLang::Swift => "swift",
        SupportLang::Yaml => "yaml",
        SupportLang::Zig => "zig",
    }
}

/// `rust, typescript, tsx, javascript, python`.
pub fn enabled_names() -> String {
    ENABLED
        .iter()
        .map(|&l| name(l))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `lang`'s grammar is compiled in.
pub fn is_enabled(lang: SupportLang) -> bool {
    ENABLED.contains(&lang)
}

/// Parse the `lang` argument (a name or alias such as `rs`, `ts`, `py`, case-insensitive).
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
