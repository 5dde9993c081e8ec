//! Which tree-sitter grammars this build carries, and how `ast_edit` picks one for a file: the
//! `lang` argument when given (any name or alias ast-grep accepts), otherwise the file's
//! extension as ast-grep maps it (`SupportLang::from_path`).
//!
//! `ast-grep-language` names every language it knows, but only the grammars enabled by its cargo
//! features are compiled; touching any other one hits `unimplemented!` inside the crate. So every
//! language goes through [`enabled`] before it is used. With this crate's `all-languages`
//! feature that is every language ast-grep ships plus TLA+ (`tla`, `tlaplus`, files `*.tla`),
//! whose grammar ast-grep does not carry; without it, the core five.

use std::borrow::Cow;
use std::path::Path;
use std::sync::LazyLock;

use ast_grep_core::matcher::PatternBuilder;
use ast_grep_core::tree_sitter::{LanguageExt, StrDoc, TSLanguage};
use ast_grep_core::{Pattern, PatternError};
use ast_grep_language::{Language, SupportLang};

/// A language `ast_edit` can parse: one of ast-grep's, or TLA+.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lang {
    /// A language ast-grep ships.
    AstGrep(SupportLang),
    /// TLA+ and PlusCal (`tree-sitter-tlaplus`).
    #[cfg(feature = "all-languages")]
    TlaPlus,
}

/// TLA+ identifiers are `[A-Za-z0-9_]`: metavariables are written `$A` in patterns and parsed
/// as `_A` (what ast-grep does for other languages without `$` in identifiers).
#[cfg(feature = "all-languages")]
const TLA_EXPANDO: char = '_';

/// `$A`, `$$A`, `$$$A` and `$$$` → the expando character (ast-grep's own rule).
#[cfg(feature = "all-languages")]
fn expand_metavariables(expando: char, query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    let mut dollars = 0;
    for c in query.chars() {
        if c == '$' {
            dollars += 1;
            continue;
        }
        let sigil = if matches!(c, 'A'..='Z' | '_') || dollars == 3 {
            expando
        } else {
            '$'
        };
        out.extend(std::iter::repeat_n(sigil, dollars));
        dollars = 0;
        out.push(c);
    }
    let sigil = if dollars == 3 { expando } else { '$' };
    out.extend(std::iter::repeat_n(sigil, dollars));
    out
}

impl Language for Lang {
    fn pre_process_pattern<'q>(&self, query: &'q str) -> Cow<'q, str> {
        match self {
            Lang::AstGrep(lang) => lang.pre_process_pattern(query),
            #[cfg(feature = "all-languages")]
            Lang::TlaPlus => Cow::Owned(expand_metavariables(TLA_EXPANDO, query)),
        }
    }

    fn meta_var_char(&self) -> char {
        match self {
            Lang::AstGrep(lang) => lang.meta_var_char(),
            #[cfg(feature = "all-languages")]
            Lang::TlaPlus => '$',
        }
    }

    fn expando_char(&self) -> char {
        match self {
            Lang::AstGrep(lang) => lang.expando_char(),
            #[cfg(feature = "all-languages")]
            Lang::TlaPlus => TLA_EXPANDO,
        }
    }

    fn from_path<P: AsRef<Path>>(path: P) -> Option<Self> {
        from_extension(path.as_ref())
    }

    fn kind_to_id(&self, kind: &str) -> u16 {
        match self {
            Lang::AstGrep(lang) => lang.kind_to_id(kind),
            #[cfg(feature = "all-languages")]
            Lang::TlaPlus => self.get_ts_language().id_for_node_kind(kind, true),
        }
    }

    fn field_to_id(&self, field: &str) -> Option<u16> {
        match self {
            Lang::AstGrep(lang) => lang.field_to_id(field),
            #[cfg(feature = "all-languages")]
            Lang::TlaPlus => self
                .get_ts_language()
                .field_id_for_name(field)
                .map(|id| id.get()),
        }
    }

    fn build_pattern(&self, builder: &PatternBuilder) -> Result<Pattern, PatternError> {
        builder.build(|src| StrDoc::try_new(src, *self))
    }
}

impl LanguageExt for Lang {
    fn get_ts_language(&self) -> TSLanguage {
        match self {
            Lang::AstGrep(lang) => lang.get_ts_language(),
            #[cfg(feature = "all-languages")]
            Lang::TlaPlus => tree_sitter_tlaplus::LANGUAGE.into(),
        }
    }

    fn injectable_languages(&self) -> Option<&'static [&'static str]> {
        match self {
            Lang::AstGrep(lang) => lang.injectable_languages(),
            #[cfg(feature = "all-languages")]
            Lang::TlaPlus => None,
        }
    }
}

/// The language of a file's extension, as ast-grep infers it, or TLA+ for `.tla`.
fn from_extension(path: &Path) -> Option<Lang> {
    #[cfg(feature = "all-languages")]
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tla"))
    {
        return Some(Lang::TlaPlus);
    }
    SupportLang::from_path(path).map(Lang::AstGrep)
}

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
pub fn enabled() -> &'static [Lang] {
    static ENABLED: LazyLock<Vec<Lang>> = LazyLock::new(|| {
        #[cfg(feature = "all-languages")]
        let mut langs: Vec<Lang> = SupportLang::all_langs()
            .iter()
            .map(|&l| Lang::AstGrep(l))
            .collect();
        #[cfg(feature = "all-languages")]
        langs.push(Lang::TlaPlus);
        #[cfg(not(feature = "all-languages"))]
        let langs: Vec<Lang> = CORE.iter().map(|&l| Lang::AstGrep(l)).collect();
        langs
    });
    &ENABLED
}

/// The lowercase name shown to users (`rust`, `csharp`, `typescript`, `tlaplus`), which the
/// `lang` argument also accepts.
pub fn name(lang: Lang) -> String {
    match lang {
        Lang::AstGrep(lang) => lang.to_string().to_lowercase(),
        #[cfg(feature = "all-languages")]
        Lang::TlaPlus => "tlaplus".to_owned(),
    }
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
pub fn is_enabled(lang: Lang) -> bool {
    enabled().contains(&lang)
}

/// A `lang` argument: ast-grep's names and aliases, plus `tla`/`tlaplus`.
fn lang_from_name(name: &str) -> Option<Lang> {
    #[cfg(feature = "all-languages")]
    if name.eq_ignore_ascii_case("tla") || name.eq_ignore_ascii_case("tlaplus") {
        return Some(Lang::TlaPlus);
    }
    name.parse::<SupportLang>().ok().map(Lang::AstGrep)
}

/// Parse the `lang` argument (a name or alias such as `rs`, `ts`, `py`, `golang`, `c++`,
/// case-insensitive), as ast-grep does.
pub fn parse(raw: &str) -> Result<Lang, String> {
    let trimmed = raw.trim();
    match lang_from_name(trimmed).ok_or(()) {
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
pub fn guess(path: &Path) -> Option<Lang> {
    from_extension(path)
}

/// The compiled-in language for a file's extension, if any.
pub fn from_path(path: &Path) -> Option<Lang> {
    guess(path).filter(|&lang| is_enabled(lang))
}
