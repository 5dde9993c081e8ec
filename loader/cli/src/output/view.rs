//! A tool's [`View`] drawn for a terminal: the status line, then each block, sections shown
//! expanded (a terminal scrolls; there is nothing to click open). Colours follow the view's
//! theme roles and only when the output gets colour ([`RenderStyle::color`]: a terminal
//! without `NO_COLOR`); lines are cut at the width. Pipes and `--json` never get here: they
//! keep the result's text.
//!
//! The session already cleaned and bounded the view (`xcsh_loader::tool::drawable`), so the
//! text here has no control characters; [`sanitize`] runs once more all the same, as on
//! everything else this binary prints from a plugin.

use xcsh_loader::render::sanitize;
use xcsh_loader::RenderStyle;
use xcsh_plugin_api::view::{Block, DiffKind, Role, State, View};

/// `view` as lines for a terminal of `style`'s width, with colour when `style` says so.
pub fn draw(view: &View, style: RenderStyle) -> String {
    let mut lines = Vec::new();
    if let Some(status) = &view.status {
        let (icon, role) = match status.state {
            State::Success => ("✔", Role::Success),
            State::Warning => ("⚠", Role::Warning),
            State::Error => ("✖", Role::Error),
            State::Pending | State::Unknown => ("○", Role::Accent),
        };
        let mut line = format!(
            "{} {}",
            paint(icon, role, style),
            bold(&sanitize(&status.title), style)
        );
        if let Some(description) = &status.description {
            line.push_str(&format!(
                "  {}",
                paint(&sanitize(description), Role::Muted, style)
            ));
        }
        if let Some(badge) = &status.badge {
            line.push_str(&format!(
                "  {}",
                paint(&format!("[{}]", sanitize(&badge.label)), badge.role, style)
            ));
        }
        for fact in &status.meta {
            line.push_str(&format!(
                "  {}",
                paint(&format!("· {}", sanitize(fact)), Role::Muted, style)
            ));
        }
        lines.push(line);
    }
    for block in &view.blocks {
        draw_block(block, style, &mut lines);
    }
    lines
        .iter()
        .map(|line| cut(line, style.width))
        .collect::<Vec<_>>()
        .join("\n")
}

fn draw_block(block: &Block, style: RenderStyle, lines: &mut Vec<String>) {
    match block {
        Block::Text { spans } => {
            let mut line = String::from("  ");
            for span in spans {
                let mut parts = span.text.split('\n');
                if let Some(first) = parts.next() {
                    line.push_str(&paint(&sanitize(first), span.role, style));
                }
                for next in parts {
                    lines.push(std::mem::replace(&mut line, String::from("  ")));
                    line.push_str(&paint(&sanitize(next), span.role, style));
                }
            }
            lines.push(line);
        }
        Block::Files { files } => {
            for file in files {
                let mut line = format!("  {}", paint(&sanitize(&file.path), Role::Accent, style));
                if let Some(note) = &file.note {
                    line.push_str(&format!("  {}", paint(&sanitize(note), Role::Muted, style)));
                }
                lines.push(line);
            }
        }
        Block::Diff {
            path,
            lines: diff,
            omitted,
        } => {
            lines.push(format!("  {}", paint(&sanitize(path), Role::Accent, style)));
            for line in diff {
                let (marker, role) = match line.kind {
                    DiffKind::Added => ('+', Role::Success),
                    DiffKind::Removed => ('-', Role::Error),
                    DiffKind::Context | DiffKind::Unknown => (' ', Role::ToolOutput),
                };
                lines.push(format!(
                    "  {}",
                    paint(&format!("{marker} {}", sanitize(&line.text)), role, style)
                ));
            }
            if *omitted > 0 {
                lines.push(format!(
                    "  {}",
                    paint(&format!("… {omitted} more lines"), Role::Muted, style)
                ));
            }
        }
        Block::Table {
            columns,
            rows,
            omitted,
        } => {
            let cells = |row: &[String]| row.iter().map(|c| sanitize(c)).collect::<Vec<_>>();
            let header = cells(columns);
            let body: Vec<Vec<String>> = rows.iter().map(|row| cells(row)).collect();
            let mut widths: Vec<usize> = header.iter().map(|c| c.chars().count()).collect();
            for row in &body {
                for (i, cell) in row.iter().enumerate() {
                    let width = cell.chars().count();
                    match widths.get_mut(i) {
                        Some(w) => *w = (*w).max(width),
                        None => widths.push(width),
                    }
                }
            }
            let join = |row: &[String]| {
                let padded: Vec<String> = row
                    .iter()
                    .enumerate()
                    .map(|(i, cell)| {
                        let pad = widths.get(i).copied().unwrap_or(0);
                        format!("{cell:<pad$}")
                    })
                    .collect();
                format!("  {}", padded.join("  ").trim_end())
            };
            lines.push(paint(&join(&header), Role::Muted, style));
            for row in &body {
                lines.push(join(row));
            }
            if *omitted > 0 {
                lines.push(format!(
                    "  {}",
                    paint(&format!("… {omitted} more rows"), Role::Muted, style)
                ));
            }
        }
        Block::Section { expanded, .. } => {
            for block in expanded {
                draw_block(block, style, lines);
            }
        }
        Block::Unknown => {}
    }
}

/// `text` in `role`'s colour, when the output has colour.
fn paint(text: &str, role: Role, style: RenderStyle) -> String {
    let code = match role {
        Role::Success => "32",
        Role::Error => "31",
        Role::Warning => "33",
        Role::Muted => "2",
        Role::Accent => "36",
        Role::ToolOutput | Role::Unknown => return text.to_owned(),
    };
    if style.color && !text.is_empty() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

fn bold(text: &str, style: RenderStyle) -> String {
    if style.color {
        format!("\x1b[1m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// `line` cut to `width` visible characters (escape sequences do not count), with `…`.
fn cut(line: &str, width: usize) -> String {
    let mut visible = 0;
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            out.push(c);
            for c in chars.by_ref() {
                out.push(c);
                if c == 'm' {
                    break;
                }
            }
            continue;
        }
        if visible + 1 == width && chars.clone().any(|rest| rest != '\x1b') {
            out.push('…');
            if out.contains('\x1b') {
                out.push_str("\x1b[0m");
            }
            return out;
        }
        out.push(c);
        visible += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use xcsh_plugin_api::view::DiffLine;

    fn sample() -> View {
        View::status(State::Success, "AST Edit")
            .description("foo → bar")
            .badge("proposed", Role::Warning)
            .meta("2 files")
            .block(Block::section(
                [Block::line("collapsed only", Role::Muted)],
                [
                    Block::diff(
                        "src/a.rs",
                        [DiffLine::removed("foo(1)"), DiffLine::added("bar(1)")],
                    ),
                    Block::Table {
                        columns: vec!["file".into(), "changes".into()],
                        rows: vec![vec!["src/a.rs".into(), "2".into()]],
                        omitted: 3,
                    },
                ],
            ))
    }

    #[test]
    fn without_colour_the_view_is_plain_lines_with_sections_expanded() {
        let drawn = draw(
            &sample(),
            RenderStyle {
                width: 100,
                color: false,
            },
        );
        assert_eq!(
            drawn,
            "✔ AST Edit  foo → bar  [proposed]  · 2 files\n  src/a.rs\n  - foo(1)\n  + bar(1)\n  file      changes\n  src/a.rs  2\n  … 3 more rows"
        );
    }

    #[test]
    fn with_colour_roles_are_coloured_and_lines_cut_at_the_width() {
        let style = RenderStyle {
            width: 12,
            color: true,
        };
        let drawn = draw(&sample(), style);
        let first = drawn.lines().next().unwrap();
        assert!(
            first.starts_with("\x1b[32m✔\x1b[0m \x1b[1mAST Edit"),
            "{first:?}"
        );
        assert!(first.ends_with("…\x1b[0m"), "{first:?}");
        assert!(drawn.contains("\x1b[31m- foo(1)\x1b[0m"), "{drawn:?}");
        assert!(drawn.contains("\x1b[32m+ bar(1)\x1b[0m"), "{drawn:?}");
    }
}
