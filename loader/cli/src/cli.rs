//! The command line's grammar: each subcommand and the options it takes, as clap types.
//!
//! Every option appears under exactly the subcommands it changes, so each `--help` lists only
//! what matters there, and an option that would change nothing is refused by clap as unknown.
//! Scripts written for earlier versions put the session options before the subcommand
//! (`xcsh-plugins --plugin lib.so call ...`): that form still parses (hidden from the top-level
//! help), and [`Cli::into_command`] moves those options onto the subcommand, with the same
//! usage error (exit 2) when the subcommand does not take one.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::call::CallArgs;
use crate::check::CheckArgs;
use crate::demo::DemoArgs;
use crate::describe::DescribeArgs;
use crate::error::CliError;
use crate::new::NewArgs;
use crate::package::install::{InstallArgs, RemoveArgs, UpdateArgs};
use crate::package::pack::PackArgs;
use crate::trust_commands::{TrustArgs, UntrustArgs};

/// Load, inspect and run xcsh native tool plugins.
#[derive(Debug, Parser)]
#[command(
    name = "xcsh-plugins",
    about,
    after_help = "Options go after the command: `xcsh-plugins <COMMAND> --help` lists each one's."
)]
pub struct Cli {
    /// Session options given before the subcommand (the earlier form; hidden from `--help`).
    #[command(flatten)]
    early: EarlyOptions,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load everything and print each tool with its parameters, and each load error (exit 1
    /// on any load error).
    List(ListArgs),
    /// Print one tool's description and its full parameter schema.
    Describe(DescribeArgs),
    /// Run one tool in a fresh session, then resolve what it left pending.
    ///
    /// What the tool leaves pending is resolved newest first: applied with --apply, discarded
    /// with --discard, otherwise asked about on a terminal, otherwise discarded: nothing is
    /// applied without a decision. --no-input asks nothing, neither this nor the plugins'
    /// questions. The reason each action's apply or reject receives is --reason; without it,
    /// --discard gives "discarded with --discard", a discard no one decided gives "no decision
    /// given (non-interactive); nothing applied", and the terminal asks for one.
    Call(CallArgs),
    /// Serve the loaded tools over MCP on stdio (one session per process).
    Mcp(McpArgs),
    /// Load each plugin alone and validate it (ABI, tools, schemas); exit 1 on any problem.
    Check(CheckArgs),
    /// Scaffold a plugin crate that builds and loads as is.
    New(NewArgs),
    /// Walk through preview, resolve and rendering on the bundled plugins in a scratch directory.
    Demo(DemoArgs),
    /// Let project-local plugins (a project's .xcsh/tools/) load: record each file's path and SHA-256.
    Trust(TrustArgs),
    /// Remove trust entries (files, or every entry under a directory).
    Untrust(UntrustArgs),
    /// Pack a NAME.xcsh-plugin folder for every host's installer: npm packages (for `omp
    /// install` and `npx -y`), .mcpb bundles, and the folder as an archive.
    Pack(PackArgs),
    /// Install a packed tool into ~/.xcsh/agent/tools/ (or the project's .xcsh/tools/ with
    /// --project), verified and pinned.
    Install(InstallArgs),
    /// Update installed tools from where they came from (say what changes, re-pin).
    Update(UpdateArgs),
    /// Remove an installed tool.
    Remove(RemoveArgs),
    /// Write a publisher key pair (minisign format) for `pack --sign`.
    Keygen(KeygenArgs),
    /// Accept a packed tool's new publisher key (or, without KEY, its unsigned versions).
    AcceptKey(AcceptKeyArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout: `xcsh-plugins man > xcsh-plugins.1`.
    Man,
}

/// Which plugins a session loads.
#[derive(Debug, Default, Clone, Args)]
pub struct PluginArgs {
    /// A plugin file, or a directory of plugins (repeatable; searched first).
    #[arg(long = "plugin", value_name = "PATH")]
    pub plugins: Vec<PathBuf>,
    /// Do not search the project's .xcsh/tools/ (under --cwd) nor ~/.xcsh/agent/tools/.
    #[arg(long)]
    pub no_default_dirs: bool,
    /// Make any load error fatal: report them all and exit 1 before anything runs or is
    /// served (by default the plugins that loaded are used and the errors are reported).
    #[arg(long)]
    pub require_all_plugins: bool,
    /// Offer only the plugins' tools, not those compiled into this program (`ast_edit`): what
    /// a packed tool's `bin` and `.mcpb` bundle serve.
    #[arg(long)]
    pub no_builtins: bool,
}

/// The session's working directory.
#[derive(Debug, Default, Clone, Args)]
pub struct CwdArg {
    /// The session's working directory; relative paths in tool arguments resolve against it.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// Where plugin code runs and what its processes may do.
#[derive(Debug, Default, Clone, Args)]
pub struct SandboxArgs {
    /// Where plugin code runs: `process` (each plugin library in a child process of its own;
    /// the default on Linux, macOS and Windows) or `in-process` (inside this process; the only
    /// mode elsewhere).
    #[arg(long, value_name = "MODE")]
    pub isolation: Option<xcsh_loader::Isolation>,
    /// Let plugin processes write under PATH too (repeatable); by default they may write only
    /// under --cwd and a private temporary directory.
    #[arg(long = "allow-write", value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,
    /// Let plugin processes read under PATH too (repeatable); by default they may read only
    /// the system's directories, --cwd, the plugin's own directory, their temporary directory
    /// and the --allow-write paths (not your home, not the shared /tmp).
    #[arg(long = "allow-read", value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,
    /// Pass this variable of the environment to plugin processes (repeatable; a trailing `*`
    /// passes every variable with that prefix, as in MYTOOL_*). By default they get only
    /// PATH, HOME, USER, LANG, LC_*, TERM, TZ and a TMPDIR of their own.
    #[arg(long = "pass-env", value_name = "NAME", value_parser = xcsh_loader::sandbox::parse_env_pattern)]
    pub pass_env: Vec<String>,
    /// Refuse to load plugins that cannot be sandboxed (no Landlock, or --isolation in-process)
    /// instead of warning.
    #[arg(long)]
    pub require_sandbox: bool,
    /// The address-space limit of each plugin process: bytes, or with K, M, G (default 4G).
    #[arg(long, value_name = "SIZE", value_parser = xcsh_loader::sandbox::parse_size)]
    pub memory_limit: Option<u64>,
    /// Deny plugin processes the network: no socket but a Unix stream pair (no TCP, UDP, raw,
    /// packet or netlink socket, no connection to a Unix socket outside; seccomp, and Landlock
    /// ABI 4 for TCP).
    #[arg(long)]
    pub deny_network: bool,
}

/// Whether changed plugin files are reloaded while the session runs.
#[derive(Debug, Default, Clone, Args)]
pub struct ReloadArg {
    /// Keep running the plugin content checked at start, even when a plugin file changes (by
    /// default, under process isolation, a changed plugin is checked again and reloaded).
    #[arg(long)]
    pub no_reload: bool,
}

/// When idle plugin processes are stopped, for the commands that keep a session open.
#[derive(Debug, Default, Clone, Args)]
pub struct IdleArg {
    /// Stop a plugin's process after it has been idle this long (no call, no apply or reject,
    /// nothing it pushed still pending): 500ms, 30s, 5m, or off (never). Default 30s. Its next
    /// call starts it again. FILE=DURATION sets it for one plugin (libfoo.so=5m, or a path);
    /// repeatable. No effect in-process.
    #[arg(long = "stop-idle-after", value_name = "DURATION")]
    pub stop_idle_after: Vec<xcsh_loader::StopIdleAfter>,
}

/// Whether plugins' tool definitions may come from the user's cache.
#[derive(Debug, Default, Clone, Args)]
pub struct CacheArg {
    /// Start every plugin's process now to learn its tools, and neither read nor write the
    /// cache of earlier runs (by default, under process isolation, a plugin whose definitions
    /// are cached for this very file starts at the first call of one of its tools).
    #[arg(long)]
    pub no_cache: bool,
}

/// `--json`, for the commands whose result is a report.
#[derive(Debug, Default, Clone, Args)]
pub struct JsonArg {
    /// Machine-readable output: one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Everything that shapes a session: which plugins, where it runs, the sandbox.
#[derive(Debug, Default, Clone, Args)]
pub struct SessionArgs {
    #[command(flatten)]
    pub plugins: PluginArgs,
    #[command(flatten)]
    pub cwd: CwdArg,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    #[command(flatten)]
    pub cache: CacheArg,
}

/// `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// List the tools `install` put in ~/.xcsh/agent/tools/ and the project's .xcsh/tools/
    /// (version, source, publisher key) instead of loading anything.
    #[arg(long)]
    pub installed: bool,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// `keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The directory to write xcsh-sign.key and xcsh-sign.pub into.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `accept-key`.
#[derive(Debug, Args)]
pub struct AcceptKeyArgs {
    /// The packed tool's npm name (`@scope/name`), as the refusal names it.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The publisher key to accept (the base64 minisign public key the refusal names); none
    /// accepts unsigned versions.
    #[arg(value_name = "KEY")]
    pub key: Option<String>,
}

/// `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub reload: ReloadArg,
    #[command(flatten)]
    pub idle: IdleArg,
}

/// `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The options of the earlier form, given before the subcommand.
#[derive(Debug, Default, Args)]
struct EarlyOptions {
    #[command(flatten)]
    session: SessionArgs,
    #[command(flatten)]
    reload: ReloadArg,
    #[command(flatten)]
    idle: IdleArg,
    #[command(flatten)]
    output: JsonArg,
}

/// Where a subcommand keeps each group of options (`None`: it does not take them).
#[derive(Default)]
struct Slots<'a> {
    plugins: Option<&'a mut PluginArgs>,
    cwd: Option<&'a mut CwdArg>,
    sandbox: Option<&'a mut SandboxArgs>,
    cache: Option<&'a mut CacheArg>,
    reload: Option<&'a mut ReloadArg>,
    idle: Option<&'a mut IdleArg>,
    output: Option<&'a mut JsonArg>,
}

impl Command {
    /// This subcommand's name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::List(_) => "list",
            Command::Describe(_) => "describe",
            Command::Call(_) => "call",
            Command::Mcp(_) => "mcp",
            Command::Check(_) => "check",
            Command::New(_) => "new",
            Command::Demo(_) => "demo",
            Command::Trust(_) => "trust",
            Command::Untrust(_) => "untrust",
            Command::Pack(_) => "pack",
            Command::Install(_) => "install",
            Command::Update(_) => "update",
            Command::Remove(_) => "remove",
            Command::Keygen(_) => "keygen",
            Command::AcceptKey(_) => "accept-key",
            Command::Completions(_) => "completions",
            Command::Man => "man",
        }
    }

    fn slots(&mut self) -> Slots<'_> {
        match self {
            Command::List(args) => Slots {
                output: Some(&mut args.output),
                ..Slots::of_session(&mut args.session)
            },
            Command::Describe(args) => Slots {
                output: Some(&mut args.output),
                ..Slots::of_session(&mut args.session)
            },
            Command::Call(args) => Slots {
                reload: Some(&mut args.reload),
                idle: Some(&mut args.idle),
                output: Some(&mut args.output),
                ..Slots::of_session(&mut args.session)
            },
            Command::Mcp(args) => Slots {
                reload: Some(&mut args.reload),
                idle: Some(&mut args.idle),
                ..Slots::of_session(&mut args.session)
            },
            Command::Check(args) => Slots {
                cwd: Some(&mut args.cwd),
                sandbox: Some(&mut args.sandbox),
                output: Some(&mut args.output),
                ..Slots::default()
            },
            Command::Trust(args) => Slots {
                output: Some(&mut args.output),
                ..Slots::default()
            },
            Command::Untrust(args) => Slots {
                output: Some(&mut args.output),
                ..Slots::default()
            },
            Command::Pack(args) => Slots {
                output: Some(&mut args.output),
                ..Slots::default()
            },
            Command::Install(args) => Slots {
                cwd: Some(&mut args.place.cwd),
                output: Some(&mut args.output),
                ..Slots::default()
            },
            Command::Update(args) => Slots {
                cwd: Some(&mut args.place.cwd),
                output: Some(&mut args.output),
                ..Slots::default()
            },
            Command::Remove(args) => Slots {
                cwd: Some(&mut args.place.cwd),
                output: Some(&mut args.output),
                ..Slots::default()
            },
            Command::New(_)
            | Command::Demo(_)
            | Command::Keygen(_)
            | Command::AcceptKey(_)
            | Command::Completions(_)
            | Command::Man => Slots::default(),
        }
    }
}

impl<'a> Slots<'a> {
    /// The slots of a command that builds a session from `session`.
    fn of_session(session: &'a mut SessionArgs) -> Self {
        Slots {
            plugins: Some(&mut session.plugins),
            cwd: Some(&mut session.cwd),
            sandbox: Some(&mut session.sandbox),
            cache: Some(&mut session.cache),
            ..Slots::default()
        }
    }
}

impl Cli {
    /// The subcommand, with the options given before it moved onto it; an option it does not
    /// take is a usage error naming the option and the subcommand.
    pub fn into_command(self) -> Result<Command, CliError> {
        let Cli { early, mut command } = self;
        let name = command.name();
        let slots = command.slots();
        let mut unused: Vec<&'static str> = Vec::new();
        let SessionArgs {
            plugins,
            cwd,
            sandbox,
            cache,
        } = early.session;
        merge(plugins, slots.plugins, &mut unused, |from, into| {
            into.plugins.splice(0..0, from.plugins);
            into.no_default_dirs |= from.no_default_dirs;
            into.require_all_plugins |= from.require_all_plugins;
            into.no_builtins |= from.no_builtins;
        });
        merge(cwd, slots.cwd, &mut unused, |from, into| {
            into.cwd = into.cwd.take().or(from.cwd);
        });
        merge(sandbox, slots.sandbox, &mut unused, |from, into| {
            into.isolation = into.isolation.or(from.isolation);
            into.allow_write.splice(0..0, from.allow_write);
            into.allow_read.splice(0..0, from.allow_read);
            into.pass_env.splice(0..0, from.pass_env);
            into.require_sandbox |= from.require_sandbox;
            into.memory_limit = into.memory_limit.or(from.memory_limit);
            into.deny_network |= from.deny_network;
        });
        merge(cache, slots.cache, &mut unused, |from, into| {
            into.no_cache |= from.no_cache;
        });
        merge(early.reload, slots.reload, &mut unused, |from, into| {
            into.no_reload |= from.no_reload;
        });
        merge(early.idle, slots.idle, &mut unused, |from, into| {
            into.stop_idle_after.splice(0..0, from.stop_idle_after);
        });
        merge(early.output, slots.output, &mut unused, |from, into| {
            into.json |= from.json;
        });
        match unused.as_slice() {
            [] => Ok(command),
            options => Err(CliError::Usage(format!(
                "{} changes nothing for `xcsh-plugins {name}`: remove it (`xcsh-plugins {name} \
                 --help` lists the options it takes)",
                options.join(", ")
            ))),
        }
    }
}

/// A group of options that can say which of its flags were given.
trait Given {
    fn given(&self) -> Vec<&'static str>;
}

fn set(flags: &[(bool, &'static str)]) -> Vec<&'static str> {
    flags
        .iter()
        .filter_map(|(given, name)| given.then_some(*name))
        .collect()
}

impl Given for PluginArgs {
    fn given(&self) -> Vec<&'static str> {
        set(&[
            (!self.plugins.is_empty(), "--plugin"),
            (self.no_default_dirs, "--no-default-dirs"),
            (self.require_all_plugins, "--require-all-plugins"),
            (self.no_builtins, "--no-builtins"),
        ])
    }
}

impl Given for CwdArg {
    fn given(&self) -> Vec<&'static str> {
        set(&[(self.cwd.is_some(), "--cwd")])
    }
}

impl Given for SandboxArgs {
    fn given(&self) -> Vec<&'static str> {
        set(&[
            (self.isolation.is_some(), "--isolation"),
            (!self.allow_write.is_empty(), "--allow-write"),
            (!self.allow_read.is_empty(), "--allow-read"),
            (!self.pass_env.is_empty(), "--pass-env"),
            (self.require_sandbox, "--require-sandbox"),
            (self.memory_limit.is_some(), "--memory-limit"),
            (self.deny_network, "--deny-network"),
        ])
    }
}

impl Given for CacheArg {
    fn given(&self) -> Vec<&'static str> {
        set(&[(self.no_cache, "--no-cache")])
    }
}

impl Given for ReloadArg {
    fn given(&self) -> Vec<&'static str> {
        set(&[(self.no_reload, "--no-reload")])
    }
}

impl Given for IdleArg {
    fn given(&self) -> Vec<&'static str> {
        set(&[(!self.stop_idle_after.is_empty(), "--stop-idle-after")])
    }
}

impl Given for JsonArg {
    fn given(&self) -> Vec<&'static str> {
        set(&[(self.json, "--json")])
    }
}

/// Move `early` into `slot` with `join`, or note its flags as unused when there is no slot.
fn merge<T: Given>(
    early: T,
    slot: Option<&mut T>,
    unused: &mut Vec<&'static str>,
    join: impl FnOnce(T, &mut T),
) {
    match slot {
        Some(slot) => join(early, slot),
        None => unused.extend(early.given()),
    }
}

/// The clap command with the version line and the earlier form's options hidden.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command()
        .version(version_line())
        .mut_args(|arg| arg.hide(true))
}

/// `--version`: this binary's version and the plugin API versions it loads.
fn version_line() -> &'static str {
    // Built once per process; clap keeps `&'static str`s without its `string` feature.
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| {
        format!(
            "{} (loads plugins built against xcsh-plugin-api {} to {})",
            env!("CARGO_PKG_VERSION"),
            xcsh_plugin_api::OLDEST_SUPPORTED_API_VERSION,
            xcsh_plugin_api::API_VERSION
        )
    })
}

/// Parse the process's arguments (clap reports a usage error itself, with exit 2).
pub fn parse() -> Cli {
    use clap::FromArgMatches;
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    fn parse_from(args: &[&str]) -> Result<Command, String> {
        let matches = command()
            .try_get_matches_from(std::iter::once("xcsh-plugins").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let cli = Cli::from_arg_matches(&matches).map_err(|e| e.to_string())?;
        cli.into_command().map_err(|e| e.message().to_owned())
    }

    #[test]
    fn the_clap_definition_is_consistent() {
        command().debug_assert();
    }

    /// `call --help` states the prompt rule once, with the reasons `decide` really passes.
    #[test]
    fn call_help_states_the_default_reasons() {
        let mut command = command();
        let call = command
            .find_subcommand_mut("call")
            .expect("a call subcommand");
        let help = call.render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for reason in [
            xcsh_loader::messages::DISCARD_FLAG_REASON,
            xcsh_loader::messages::NO_DECISION_REASON,
        ] {
            assert!(help.contains(&format!("\"{reason}\"")), "{reason}: {help}");
        }
    }

    #[test]
    fn options_before_the_subcommand_move_onto_it() {
        let Ok(Command::List(list)) =
            parse_from(&["--plugin", "a", "--json", "list", "--plugin", "b"])
        else {
            panic!("not a list");
        };
        assert_eq!(
            list.session.plugins.plugins,
            [PathBuf::from("a"), PathBuf::from("b")]
        );
        assert!(list.output.json);
    }

    #[test]
    fn an_option_a_subcommand_does_not_take_is_a_usage_error() {
        let error = parse_from(&["--json", "demo"]).err().unwrap_or_default();
        assert!(
            error.starts_with("--json changes nothing for `xcsh-plugins demo`"),
            "{error}"
        );
        let error = parse_from(&["demo", "--json"]).err().unwrap_or_default();
        assert!(error.contains("unexpected argument '--json'"), "{error}");
        let error = parse_from(&["--isolation", "process", "new", "x"])
            .err()
            .unwrap_or_default();
        assert!(error.contains("--isolation changes nothing"), "{error}");
    }

    #[test]
    fn the_version_names_the_api_range() {
        let line = version_line();
        assert!(
            line.contains(xcsh_plugin_api::OLDEST_SUPPORTED_API_VERSION),
            "{line}"
        );
        assert!(line.contains(xcsh_plugin_api::API_VERSION), "{line}");
    }

    /// The command lines of the README and of every page of the user guide
    /// (`docs/guide/src/*.md`), each cut into words as a shell would (quotes, `\`
    /// continuations, a trailing `# comment`, and what follows `&&`, `|`, `>`). `None` for a
    /// copy of this crate outside the repository (a published one), which has no README of the
    /// project: they are read when the test runs rather than compiled in, so that such a copy
    /// still builds its tests.
    fn readme_command_lines() -> Option<Vec<Vec<String>>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)?;
        if !root.join("Cargo.toml").is_file() {
            return None;
        }
        let mut docs = vec![std::fs::read_to_string(root.join("README.md"))
            .expect("the repository's README.md is readable")];
        let mut pages: Vec<_> = std::fs::read_dir(root.join("docs/guide/src"))
            .expect("the repository's guide is readable")
            .map(|entry| entry.expect("a guide page").path())
            .filter(|path| path.extension().is_some_and(|e| e == "md"))
            .collect();
        pages.sort();
        for page in pages {
            docs.push(std::fs::read_to_string(page).expect("a guide page is readable"));
        }
        let mut in_shell = false;
        let mut lines: Vec<String> = Vec::new();
        let mut pending = String::new();
        for line in docs.iter().flat_map(|doc| doc.lines()) {
            let trimmed = line.trim_start();
            if let Some(info) = trimmed.strip_prefix("```") {
                in_shell = !in_shell && (info == "sh" || info == "bash");
                continue;
            }
            if !in_shell {
                continue;
            }
            match trimmed.strip_suffix('\\') {
                Some(head) => pending.push_str(head),
                None => {
                    pending.push_str(trimmed);
                    lines.push(std::mem::take(&mut pending));
                }
            }
        }
        let mut commands = Vec::new();
        for line in lines {
            for segment in words(&line).split(|w| ["&&", "|", ";", ">", "#"].contains(&w.as_str()))
            {
                let Some(first) = segment.first() else {
                    continue;
                };
                if first == "xcsh-plugins" || first.ends_with("/xcsh-plugins") {
                    commands.push(segment.to_vec());
                }
            }
        }
        Some(commands)
    }

    /// Shell words: single and double quotes group, anything else splits on spaces.
    fn words(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word: Option<String> = None;
        let mut quote: Option<char> = None;
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => word.get_or_insert_with(String::new).push(c),
                (None, '\'' | '"') => {
                    quote = Some(c);
                    word.get_or_insert_with(String::new);
                }
                (None, c) if c.is_whitespace() => words.extend(word.take()),
                (None, c) => word.get_or_insert_with(String::new).push(c),
            }
        }
        words.extend(word);
        words
    }

    #[test]
    fn every_command_line_in_the_readme_and_the_guide_parses() {
        let Some(commands) = readme_command_lines() else {
            eprintln!("skipped: no repository around this crate, so no README to check");
            return;
        };
        assert!(commands.len() >= 10, "{commands:?}");
        for command_line in commands {
            let matches = command().try_get_matches_from(&command_line);
            let parsed = match matches {
                Ok(matches) => Cli::from_arg_matches(&matches)
                    .map_err(|e| e.to_string())
                    .and_then(|cli| cli.into_command().map_err(|e| e.message().to_owned())),
                // `--version` and `--help` end the parse on purpose.
                Err(e)
                    if matches!(
                        e.kind(),
                        clap::error::ErrorKind::DisplayVersion
                            | clap::error::ErrorKind::DisplayHelp
                    ) =>
                {
                    continue
                }
                Err(e) => Err(e.to_string()),
            };
            if let Err(error) = parsed {
                panic!(
                    "README or guide: `{}` does not parse: {error}",
                    command_line.join(" ")
                );
            }
        }
    }
}
