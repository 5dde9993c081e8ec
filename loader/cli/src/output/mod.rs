//! The one place the binary writes its results: any [`Report`] as text (its [`Text`] form,
//! in `text`) or, with `--json`, as one JSON document on stdout.
//!
//! Also the output conventions every command shares: colour only on a terminal and without
//! `NO_COLOR`, the terminal width for the resolve renderer, and a stdout and stderr that go
//! quiet when their reader has gone ([`QuietOnClose`]): `xcsh-plugins list | head -1` is not an
//! error, so nothing panics or complains, the command still finishes what it was doing, and
//! the exit code is the command's own.

mod text;
mod view;

use std::io::{self, IsTerminal, Write};

use serde::Serialize;
use xcsh_loader::render::sanitize;
use xcsh_loader::RenderStyle;

use crate::error::CliError;
use crate::report::{ErrorMessage, ErrorReport, Report};
pub use text::Text;

fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether stdout gets colour.
pub fn stdout_color() -> bool {
    color_allowed() && io::stdout().is_terminal()
}

/// Whether stderr gets colour.
pub fn stderr_color() -> bool {
    color_allowed() && io::stderr().is_terminal()
}

/// The width to render to: `$COLUMNS` when set, else 100.
pub fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c >= 20)
        .unwrap_or(100)
}

/// A writer that treats a closed reader (`BrokenPipe`) as the end of its output: from then on
/// every write succeeds and goes nowhere. Rust ignores `SIGPIPE`, so without this a closed
/// pipe would surface as an error (or, through `println!`, a panic) in the middle of a command.
#[derive(Debug)]
pub struct QuietOnClose<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> QuietOnClose<W> {
    pub fn new(inner: W) -> Self {
        QuietOnClose {
            inner,
            closed: false,
        }
    }

    fn quiet<T>(&mut self, result: io::Result<T>, otherwise: T) -> io::Result<T> {
        match result {
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(otherwise)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for QuietOnClose<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.quiet(result, buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.quiet(result, ())
    }
}

/// Where text goes: results on `out`, problems on `err`, resolve blocks drawn in `style`.
pub struct Streams<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
    pub style: RenderStyle,
    /// Whether a result's view is drawn instead of its text: stdout is a terminal (colour or
    /// not). A pipe keeps the text.
    pub draws_views: bool,
}

/// The process's stdout and stderr, and whether reports are shown as text or JSON.
pub struct Output {
    json: bool,
    stdout: QuietOnClose<io::Stdout>,
    stderr: QuietOnClose<io::Stderr>,
}

impl Output {
    pub fn new(json: bool) -> Self {
        Output {
            json,
            stdout: QuietOnClose::new(io::stdout()),
            stderr: QuietOnClose::new(io::stderr()),
        }
    }

    /// Show a complete report: its text form, or one JSON document.
    pub fn emit<R: Report + Text>(&mut self, report: &R) -> io::Result<()> {
        if self.json {
            self.write_json(report)
        } else {
            self.step(report)
        }
    }

    /// Show part of a report while the command is still working (`call` shows the preview
    /// before it asks for a decision). Text only: with `--json` the whole report comes at the
    /// end, through [`Output::finish`].
    pub fn step<P: Text + ?Sized>(&mut self, part: &P) -> io::Result<()> {
        if self.json {
            return Ok(());
        }
        let style = RenderStyle {
            width: width(),
            color: stdout_color(),
        };
        part.write_text(&mut Streams {
            out: &mut self.stdout,
            err: &mut self.stderr,
            style,
            draws_views: io::stdout().is_terminal(),
        })?;
        self.flush()
    }

    /// End a report shown with [`Output::step`]: the JSON document with `--json`; nothing more
    /// as text, where every part was shown as it happened.
    pub fn finish<R: Report>(&mut self, report: &R) -> io::Result<()> {
        if self.json {
            self.write_json(report)
        } else {
            Ok(())
        }
    }

    /// Report a command that stopped without a report: one `error: ...` line on stderr, and
    /// with `--json` also `{"errors": [{"message"}]}` on stdout. Write failures are ignored:
    /// there is nowhere left to report them.
    pub fn error(&mut self, error: &CliError) {
        let lines: Vec<String> = error.message().lines().map(sanitize).collect();
        let _ = writeln!(self.stderr, "error: {}", lines.join("\n"));
        if self.json {
            let report = ErrorReport {
                errors: vec![ErrorMessage {
                    message: error.message().to_owned(),
                }],
            };
            let _ = self.write_json(&report);
        }
        let _ = self.flush();
    }

    /// Ask the user something on the terminal (no line break: the answer follows).
    pub fn prompt(&mut self, question: &str) -> io::Result<()> {
        write!(self.stdout, "{question}")?;
        self.stdout.flush()
    }

    /// Stdout, for the commands whose output is a walkthrough rather than a report (`new`,
    /// `demo`); it goes quiet like every other output here.
    pub fn stdout(&mut self) -> &mut dyn Write {
        &mut self.stdout
    }

    /// Flush both streams.
    pub fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush()?;
        self.stderr.flush()
    }

    fn write_json<R: Serialize + ?Sized>(&mut self, report: &R) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut self.stdout, report)?;
        writeln!(self.stdout)?;
        self.stdout.flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that has gone: every write fails with `BrokenPipe`.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    /// A disk that is full: every write fails with another error.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("no space left"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_reader_ends_the_output_quietly() {
        let mut stream = QuietOnClose::new(ClosedPipe);
        assert!(writeln!(stream, "first").is_ok());
        assert!(writeln!(stream, "second").is_ok());
        assert!(stream.flush().is_ok());
    }

    #[test]
    fn other_write_errors_are_still_errors() {
        let mut stream = QuietOnClose::new(Full);
        assert!(writeln!(stream, "lost").is_err());
    }
}
