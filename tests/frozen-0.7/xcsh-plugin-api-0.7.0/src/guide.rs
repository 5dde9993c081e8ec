//! The user guide's pages (`docs/guide/src/*.md`) and the README, included as documentation so
//! that `cargo test -p xcsh-plugin-api --doc --features testing` compiles and runs their Rust
//! examples (mdBook's own `mdbook test` cannot link this workspace's crates). Compiled only
//! when rustdoc collects doctests: the paths reach outside this crate, so a packaged copy of
//! it (which has no `docs/`) builds, but does not run these.
//!
//! Every page is listed, also those without a Rust block today, so that an example added later
//! is tested too (`tests/tests/readme.rs` checks that the list matches `SUMMARY.md`).

macro_rules! pages {
    ($($name:ident => $path:literal,)*) => {
        $(
            #[doc = include_str!(concat!("../../", $path))]
            pub struct $name;
        )*
        /// The files included above, for the check against `SUMMARY.md`.
        pub const PAGES: &[&str] = &[$($path),*];
    };
}

pages! {
    Readme => "README.md",
    Introduction => "docs/guide/src/introduction.md",
    Install => "docs/guide/src/install.md",
    Write => "docs/guide/src/write.md",
    Test => "docs/guide/src/test.md",
    Ask => "docs/guide/src/ask.md",
    Exec => "docs/guide/src/exec.md",
    Pending => "docs/guide/src/pending.md",
    Files => "docs/guide/src/files.md",
    Ship => "docs/guide/src/ship.md",
    Trust => "docs/guide/src/trust.md",
    Isolation => "docs/guide/src/isolation.md",
    Mcp => "docs/guide/src/mcp.md",
    Runtime => "docs/guide/src/runtime.md",
    Embedding => "docs/guide/src/embedding.md",
    AstEdit => "docs/guide/src/ast-edit.md",
    Cli => "docs/guide/src/cli.md",
    Changelog => "docs/guide/src/changelog.md",
    Development => "docs/guide/src/development.md",
}
