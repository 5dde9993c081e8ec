//! The user guide (`docs/guide/`, an mdBook) and the README, read as the tests that follow
//! their text read them: a page by name, its fenced code blocks, a Rust block as the compiler
//! sees it (rustdoc's and mdBook's hidden `# ` lines dropped).

use std::path::PathBuf;

use crate::workspace_root;

/// The guide's page sources: `docs/guide/src/`.
pub fn src_dir() -> PathBuf {
    workspace_root().join("docs/guide/src")
}

/// The text of one guide page, by its file name without `.md` (`"write"`, `"ship"`).
pub fn page(name: &str) -> String {
    let path = src_dir().join(format!("{name}.md"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the guide has no page {}: {e}", path.display()))
}

/// The README's text.
pub fn readme() -> String {
    std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md is readable")
}

/// The pages `SUMMARY.md` lists, in its order, by file name without `.md`.
pub fn summary_pages() -> Vec<String> {
    let summary = page("SUMMARY");
    let mut pages = Vec::new();
    for (at, _) in summary.match_indices("](") {
        let rest = &summary[at + 2..];
        let target = &rest[..rest.find(')').expect("a closed link in SUMMARY.md")];
        pages.push(target.trim_end_matches(".md").to_owned());
    }
    pages
}

/// The part of a Markdown text under the heading `heading` (`"## Install"`), up to the next
/// heading of the same level or the end.
pub fn section(text: &str, heading: &str) -> String {
    let level = heading.split(' ').next().unwrap_or("#");
    let start = text
        .find(&format!("{heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let rest = &text[start + heading.len() + 1..];
    let end = rest.find(&format!("\n{level} ")).unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// The fenced code blocks of a Markdown text, in order: (info string, body).
pub fn blocks(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let mut code = String::new();
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                break;
            }
            code.push_str(line);
            code.push('\n');
        }
        found.push((info.trim().to_owned(), code));
    }
    found
}

/// The bodies of the blocks fenced `sh`.
pub fn sh_blocks(text: &str) -> Vec<String> {
    blocks(text)
        .into_iter()
        .filter(|(info, _)| info == "sh")
        .map(|(_, code)| code)
        .collect()
}

/// The Rust blocks (`rust`, `rust,test_harness`, ...), as the reader sees them: without the
/// lines rustdoc and mdBook hide (`# ` or a lone `#`), which only the doctests compile.
pub fn rust_blocks(text: &str) -> Vec<String> {
    blocks(text)
        .into_iter()
        .filter(|(info, _)| info.split(',').next() == Some("rust"))
        .map(|(_, code)| visible(&code))
        .collect()
}

/// A Rust block's visible lines.
pub fn visible(code: &str) -> String {
    code.lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            !(trimmed == "#" || trimmed.starts_with("# "))
        })
        .map(|line| format!("{line}\n"))
        .collect()
}
