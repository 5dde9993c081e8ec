//! The resolve renderer: a small framed block for a terminal.
//!
//! Everything shown comes from plugins (labels, reasons), so it is sanitised here: tabs become
//! spaces, control characters become visible symbols, and each line is cut to the width.

use serde_json::Value;

use crate::tool::ToolOutcome;

/// How to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderStyle {
    /// Maximum characters per line.
    pub width: usize,
    /// Emit ANSI colour and italics.
    pub color: bool,
}

impl Default for RenderStyle {
    fn default() -> Self {
        Self {
            width: 100,
            color: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tone {
    Success,
    Warning,
    Error,
}

impl Tone {
    fn icon(self) -> &'static str {
        match self {
            Tone::Success => "✔",
            Tone::Warning => "⊘",
            Tone::Error => "✖",
        }
    }

    fn ansi(self) -> &'static str {
        match self {
            Tone::Success => "\x1b[32m",
            Tone::Warning => "\x1b[33m",
            Tone::Error => "\x1b[31m",
        }
    }
}

/// Replace tabs and control characters so plugin text never drives the terminal.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            // C0 controls map to the Unicode "control pictures" block (␛ for ESC, ...).
            c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('␡'),
            // C1 controls (including the 8-bit CSI) and bidi overrides are dropped for a marker.
            c if ('\u{80}'..='\u{9f}').contains(&c)
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c) =>
            {
                out.push('\u{fffd}');
            }
            c => out.push(c),
        }
    }
    out
}

fn cut(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Render a `resolve` outcome as the framed block: empty line, header, empty line, reason
/// (italic), empty line. The apply/reject result text is not part of it.
pub fn render_resolve(outcome: &ToolOutcome, style: RenderStyle) -> String {
    let details = outcome.result.details.as_ref();
    let field = |key: &str| details.and_then(|d| d.get(key)).and_then(Value::as_str);
    let applied = field("action") == Some("apply");
    let tone = match (outcome.is_error, applied) {
        (true, _) => Tone::Error,
        (false, true) => Tone::Success,
        (false, false) => Tone::Warning,
    };
    // `Accept` only for a successful apply; a failed apply says so rather than `Discard`.
    let verb = match (applied, outcome.is_error) {
        (true, false) => "Accept",
        (true, true) => "Apply failed",
        (false, _) => "Discard",
    };
    let (summary, source) = match field("label") {
        None => ("pending action".to_owned(), None),
        Some(label) => match label.split_once(": ") {
            Some((source, summary)) => (summary.to_owned(), Some(source.to_owned())),
            None => (label.to_owned(), None),
        },
    };
    let mut header = format!("{} {verb}: {}", tone.icon(), sanitize(&summary));
    if let Some(source) = source {
        header.push_str(&format!(" [{}]", sanitize(&source)));
    }
    let reason = match field("reason").map(str::trim) {
        Some(reason) if !reason.is_empty() => reason,
        _ => "No reason provided",
    };
    let width = style.width.max(8);
    let header = cut(&header, width);
    let mut lines = vec![String::new()];
    lines.push(if style.color {
        format!("{}\x1b[1m{header}\x1b[0m", tone.ansi())
    } else {
        header
    });
    lines.push(String::new());
    // A multi-line reason stays multi-line, each line sanitised and cut to the width.
    for line in reason.lines() {
        let line = cut(&sanitize(line), width);
        lines.push(if style.color {
            format!("\x1b[3m{line}\x1b[0m")
        } else {
            line
        });
    }
    lines.push(String::new());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use xcsh_plugin_api::AgentToolResult;

    fn outcome(is_error: bool, details: Value) -> ToolOutcome {
        ToolOutcome {
            result: AgentToolResult::text("ignored").with_details(details),
            is_error,
        }
    }

    #[test]
    fn accept_with_badge() {
        let text = render_resolve(
            &outcome(
                false,
                json!({"action":"apply","reason":"ok","label":"AST Edit: 2 replacements in 1 file","sourceToolName":"ast_edit"}),
            ),
            RenderStyle::default(),
        );
        assert_eq!(
            text,
            "\n✔ Accept: 2 replacements in 1 file [AST Edit]\n\nok\n"
        );
    }

    #[test]
    fn discard_without_badge_or_reason() {
        let text = render_resolve(
            &outcome(
                false,
                json!({"action":"discard","reason":" ","label":"plain label"}),
            ),
            RenderStyle::default(),
        );
        assert_eq!(text, "\n⊘ Discard: plain label\n\nNo reason provided\n");
    }

    #[test]
    fn failed_apply_is_not_accept_and_missing_label_is_named() {
        let text = render_resolve(
            &outcome(true, json!({"action":"apply","reason":"r","label":null})),
            RenderStyle::default(),
        );
        assert!(text.contains("✖ Apply failed: pending action"), "{text}");
        assert!(
            !text.contains("Accept") && !text.contains("Discard"),
            "{text}"
        );
        let failed_discard = render_resolve(
            &outcome(
                true,
                json!({"action":"discard","reason":"r","label":"S: x"}),
            ),
            RenderStyle::default(),
        );
        assert!(
            failed_discard.contains("✖ Discard: x [S]"),
            "{failed_discard}"
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let text = render_resolve(
            &outcome(
                false,
                json!({"action":"apply","reason":"a\tb\x1b[2Jc\u{9b}31m","label":"Src: x\x07y"}),
            ),
            RenderStyle {
                width: 30,
                color: false,
            },
        );
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("a    b␛[2Jc"));
    }

    #[test]
    fn a_multi_line_reason_keeps_its_lines() {
        let text = render_resolve(
            &outcome(
                false,
                json!({"action":"apply","reason":"first\nsecond ␊ same line","label":"S: y"}),
            ),
            RenderStyle::default(),
        );
        assert_eq!(text, "\n✔ Accept: y [S]\n\nfirst\nsecond ␊ same line\n");
    }

    #[test]
    fn lines_are_cut_to_width_and_color_is_optional() {
        let long = "x".repeat(200);
        let text = render_resolve(
            &outcome(
                false,
                json!({"action":"discard","reason":long,"label":"S: y"}),
            ),
            RenderStyle {
                width: 20,
                color: true,
            },
        );
        assert!(text.contains("\x1b[3m"));
        for line in text.lines() {
            let visible: String = line
                .replace("\x1b[3m", "")
                .replace("\x1b[0m", "")
                .replace("\x1b[33m", "")
                .replace("\x1b[1m", "");
            assert!(visible.chars().count() <= 20, "{visible}");
        }
    }
}
