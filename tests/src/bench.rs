//! The benchmarks' setups and single iterations, shared by `benches/xcsh.rs` (which times them
//! with criterion) and `tests/bench_setup.rs` (which runs each once, so `cargo test` proves
//! every benchmark can run without timing anything).
//!
//! - [`calls`]: one trivial tool reached three ways (compiled in, plugin, MCP over stdio) and
//!   preview + `resolve` round trips;
//! - [`load`]: N distinct copies of a plugin loaded by the loader or by raw `dlopen`;
//! - [`store`]: push + pop on the pending-action store, alone and contended;
//! - [`tree`]: `ast_edit` and the `ast-grep` CLI on the same generated source tree.

/// Read a `/proc` status-style field (`VmRSS:`, `Shmem:`, ...) in KiB.
pub fn proc_kib(file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
}

/// This process's resident memory, in KiB (`/proc/self/status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resident {
    /// `VmRSS`: everything below.
    pub rss: u64,
    /// `RssAnon`: heap, stacks, written data pages.
    pub anon: u64,
    /// `RssFile`: mapped file pages (shared with the page cache).
    pub file: u64,
    /// `RssShmem`: mapped pages of in-memory files (memfd, tmpfs).
    pub shmem: u64,
}

/// This process's resident memory now.
pub fn resident() -> Resident {
    let field = |name| proc_kib("/proc/self/status", name).unwrap_or(0);
    Resident {
        rss: field("VmRSS:"),
        anon: field("RssAnon:"),
        file: field("RssFile:"),
        shmem: field("RssShmem:"),
    }
}

/// The machine's shared memory in use (`Shmem` of `/proc/meminfo`, KiB): where in-memory
/// files (memfd) live, which a process's RSS counts only for the pages it touched.
pub fn shmem_kib() -> u64 {
    proc_kib("/proc/meminfo", "Shmem:").unwrap_or(0)
}

/// What the objects a `cc`-built crate compiled (`<profile dir>/build/<crate>-*/out/*.o`, the
/// newest build) put into a linked program: the sizes of their code and data sections as
/// binutils' `size -A` reports them (`.text*`, `.rodata*`, `.data*`, `.eh_frame`; not `.bss`,
/// which takes no room on disk, nor debug or note sections), in bytes. For the sizes row: a
/// grammar `xcsh-plugins` ships and `ast-grep` does not.
pub fn c_objects_bytes(profile_dir: &std::path::Path, krate: &str) -> Result<u64, String> {
    let build = profile_dir.join("build");
    let prefix = format!("{krate}-");
    let newest = std::fs::read_dir(&build)
        .map_err(|e| format!("{}: {e}", build.display()))?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path().join("out"))
        .filter(|out| out.is_dir())
        .max_by_key(|out| out.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| format!("no build output of {krate} in {}", build.display()))?;
    let objects: Vec<_> = std::fs::read_dir(&newest)
        .map_err(|e| format!("{}: {e}", newest.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "o"))
        .collect();
    if objects.is_empty() {
        return Err(format!("no object files in {}", newest.display()));
    }
    let output = std::process::Command::new("size")
        .arg("-A")
        .args(&objects)
        .output()
        .map_err(|e| format!("cannot run binutils' `size`: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let loaded = |name: &str| {
        [".text", ".rodata", ".data", ".eh_frame"]
            .iter()
            .any(|kind| name.starts_with(kind))
    };
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (name, size) = (fields.next()?, fields.next()?);
            loaded(name).then(|| size.parse::<u64>().ok()).flatten()
        })
        .sum())
}

/// Write every dirty page to disk (`sync`), so the writeback of a setup's files (a generated
/// tree, fresh copies) does not land inside the next timed measurement. Best effort.
pub fn flush_writes() {
    let _ = std::process::Command::new("sync").status();
}

pub mod calls {
    //! Call overhead: `bench_echo` compiled into the host ([`BuiltinEcho`]), loaded from the
    //! `fixture-bench` plugin, and served by `xcsh-plugins mcp` to an `rmcp` client.

    use std::path::Path;
    use std::process::Stdio;

    use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
    use rmcp::service::{RoleClient, RunningService};
    use rmcp::ServiceExt;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{json, Value};
    use xcsh_loader::store::BoxFuture;
    use xcsh_loader::{
        AgentToolResult, CallContext, Isolation, PluginError, Session, Tool, ToolHints, ToolOrigin,
        ToolOutcome, ToolSpec,
    };

    /// The tool every call benchmark calls.
    pub const ECHO: &str = "bench_echo";

    /// Its arguments.
    pub fn echo_args() -> Value {
        json!({"text": "hello"})
    }

    /// What it returns for [`echo_args`].
    pub const ECHO_TEXT: &str = "echo: hello";

    // The same type, doc comments included (they become the schema), as in
    // `plugins/fixture-bench`.
    /// Arguments: the text to echo.
    #[derive(Deserialize, JsonSchema)]
    struct EchoParams {
        /// Text to echo back.
        text: String,
    }

    /// `bench_echo` compiled into the host: the same logic as the plugin's (parse the JSON
    /// arguments, return a short text), as a [`Tool`] the session runs like any other.
    pub struct BuiltinEcho {
        spec: ToolSpec,
    }

    impl Default for BuiltinEcho {
        fn default() -> Self {
            Self {
                spec: ToolSpec {
                    name: ECHO.to_owned(),
                    label: "Bench Echo".to_owned(),
                    description: "Returns its text (benchmark fixture)".to_owned(),
                    parameters: xcsh_plugin_api::schema_of::<EchoParams>(),
                    hidden: false,
                    deferrable: false,
                    hints: ToolHints::default(),
                    origin: ToolOrigin::Builtin,
                },
            }
        }
    }

    impl Tool for BuiltinEcho {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }

        fn execute(
            &self,
            _tool_call_id: String,
            arguments: Value,
            _ctx: CallContext,
        ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
            Box::pin(async move {
                let params: EchoParams = serde_json::from_value(arguments)
                    .map_err(|e| PluginError::new(format!("Invalid arguments: {e}")))?;
                Ok(AgentToolResult::text(format!("echo: {}", params.text)))
            })
        }
    }

    /// A session whose only tool is [`BuiltinEcho`].
    pub fn builtin_session(cwd: &Path) -> Session {
        Session::builder(cwd)
            .default_dirs(false)
            .builtin(std::sync::Arc::new(BuiltinEcho::default()))
            .build()
    }

    /// A session that loads exactly `plugin` in-process, its futures polled on the caller's
    /// task (the lowest-overhead mode, which these rows have always measured); `Err` lists
    /// the load errors.
    pub fn plugin_session(cwd: &Path, plugin: &Path) -> Result<Session, String> {
        session_with(
            Session::builder(cwd)
                .isolation(Isolation::InProcess)
                .inline_plugin_calls(true),
            plugin,
        )
    }

    /// A session that loads exactly `plugin` with `builder`'s settings; `Err` lists the load
    /// errors.
    pub fn session_with(
        builder: xcsh_loader::SessionBuilder,
        plugin: &Path,
    ) -> Result<Session, String> {
        let session = builder.default_dirs(false).plugin(plugin).build();
        if session.load_errors().is_empty() {
            Ok(session)
        } else {
            Err(format!(
                "loading {}: {:?}",
                plugin.display(),
                session.load_errors()
            ))
        }
    }

    /// One call of `bench_echo` through a session.
    pub async fn call_echo(session: &Session) -> ToolOutcome {
        session.call(ECHO, echo_args()).await
    }

    /// Preview with `tool`, then `resolve` apply: one round trip; the outcome of `resolve`.
    /// Takes the steering messages the push queued, as a host does before its next request.
    pub async fn round_trip(session: &Session, tool: &str, args: Value) -> ToolOutcome {
        let preview = session.call(tool, args).await;
        if preview.is_error {
            return preview;
        }
        let applied = session
            .call("resolve", json!({"action": "apply", "reason": "bench"}))
            .await;
        session.take_steering_messages();
        applied
    }

    /// Start `command` (an `xcsh-plugins ... mcp` of `cli`) with its stdin and stdout piped,
    /// its stderr dropped and killed on drop, and initialize an `rmcp` client on its stdio.
    pub(crate) async fn serve_stdio(
        mut command: tokio::process::Command,
        cli: &Path,
    ) -> Result<(RunningService<RoleClient, ()>, tokio::process::Child), String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", cli.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("no stdio pipes".to_owned());
        };
        let client =
            ().serve((stdout, stdin))
                .await
                .map_err(|e| format!("MCP initialize failed: {e}"))?;
        Ok((client, child))
    }

    /// `xcsh-plugins ... mcp` as a child process, with an `rmcp` client on its stdio.
    pub struct McpServer {
        client: RunningService<RoleClient, ()>,
        child: tokio::process::Child,
    }

    impl McpServer {
        /// Start `cli --no-default-dirs --isolation in-process --plugin <plugin> --cwd <cwd>
        /// mcp` and initialize.
        /// Needs a tokio runtime with IO enabled.
        pub async fn start(cli: &Path, plugin: &Path, cwd: &Path) -> Result<Self, String> {
            // In-process, as this row has always measured: the MCP transport's own cost.
            let mut command = tokio::process::Command::new(cli);
            command
                .arg("--no-default-dirs")
                .args(["--isolation", "in-process"])
                .arg("--plugin")
                .arg(plugin)
                .arg("--cwd")
                .arg(cwd)
                .arg("mcp");
            let (client, child) = serve_stdio(command, cli).await?;
            Ok(Self { client, child })
        }

        /// One `tools/call` of `bench_echo`.
        pub async fn call_echo(&self) -> Result<CallToolResult, String> {
            let Value::Object(arguments) = echo_args() else {
                return Err("arguments must be an object".to_owned());
            };
            self.client
                .call_tool(CallToolRequestParams::new(ECHO).with_arguments(arguments))
                .await
                .map_err(|e| format!("tools/call failed: {e}"))
        }

        /// Close the client and end the server.
        pub async fn stop(mut self) {
            let _ = self.client.cancel().await;
            let _ = self.child.kill().await;
        }
    }

    /// The text blocks of an MCP result, joined by `\n`.
    pub fn mcp_text(result: &CallToolResult) -> String {
        result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub mod load {
    //! Loading N distinct copies of a plugin: by the loader (a session over the directory of
    //! copies, every check on) and by raw `libloading::Library::new` + one symbol lookup.
    //!
    //! A file can be loaded only once per process (later loads of the same path or inode
    //! return the loaded library), so every measurement runs on copies this process has never
    //! loaded; the benchmark runs each one in a fresh child process.

    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use serde::{Deserialize, Serialize};
    use xcsh_loader::{Isolation, LoadError, LoadErrorKind, Session};

    use super::Resident;

    /// What one load measurement saw.
    #[derive(Debug, Clone, Copy, Serialize, Deserialize)]
    pub struct LoadSample {
        /// Files loaded.
        pub loaded: usize,
        /// Wall time of loading them all.
        pub nanos: u64,
        /// This process's resident memory before loading (KiB).
        pub before: Resident,
        /// And after.
        pub after: Resident,
        /// The machine's `Shmem` before loading (KiB).
        pub shmem_before_kib: u64,
        /// And after.
        pub shmem_after_kib: u64,
    }

    impl LoadSample {
        /// The wall time.
        pub fn elapsed(&self) -> Duration {
            Duration::from_nanos(self.nanos)
        }

        /// `VmRSS` added, KiB.
        pub fn rss_added_kib(&self) -> f64 {
            self.after.rss as f64 - self.before.rss as f64
        }

        /// In-memory file pages added machine-wide that this process has not mapped (a memfd
        /// holds the whole file; only the touched pages of its mapping count in `VmRSS`), KiB.
        pub fn unmapped_shmem_added_kib(&self) -> f64 {
            let machine = self.shmem_after_kib as f64 - self.shmem_before_kib as f64;
            let mapped = self.after.shmem as f64 - self.before.shmem as f64;
            machine - mapped
        }

        /// All memory loading added: `VmRSS` plus the unmapped in-memory file pages, KiB.
        pub fn memory_added_kib(&self) -> f64 {
            self.rss_added_kib() + self.unmapped_shmem_added_kib().max(0.0)
        }
    }

    fn measure(
        loaded: usize,
        work: impl FnOnce() -> Result<(), String>,
    ) -> Result<LoadSample, String> {
        let (before, shmem_before_kib) = (super::resident(), super::shmem_kib());
        let start = Instant::now();
        work()?;
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Ok(LoadSample {
            loaded,
            nanos,
            before,
            after: super::resident(),
            shmem_before_kib,
            shmem_after_kib: super::shmem_kib(),
        })
    }

    /// Copy `source` to `n` distinct files `lib<stem>_<i>.so` in `dir` (created, mode 0700).
    pub fn copy_plugin(source: &Path, dir: &Path, n: usize) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let stem = source
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("libplugin");
        let suffix = std::env::consts::DLL_SUFFIX;
        (0..n)
            .map(|i| {
                let target = dir.join(format!("{stem}_{i:03}{suffix}"));
                std::fs::copy(source, &target)?;
                Ok(target)
            })
            .collect()
    }

    /// The plugin files in `dir`, sorted.
    pub fn plugin_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let suffix = std::env::consts::DLL_SUFFIX;
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        files.sort();
        Ok(files)
    }

    /// Load every plugin in `dir` with the loader: one session, `--plugin <dir>`, no default
    /// directories. Copies of one plugin all define the same tool, so every copy after the
    /// first must end in exactly one `NameConflict` (its tool not registered); distinct plugins
    /// in none. Any other load error fails the measurement. The session stays alive until
    /// measured.
    pub fn with_loader(cwd: &Path, dir: &Path, plugins: Plugins) -> Result<LoadSample, String> {
        let n = plugin_files(dir).map_err(|e| e.to_string())?.len();
        let mut session = None;
        let sample = measure(n, || {
            session = Some(
                Session::builder(cwd)
                    .default_dirs(false)
                    .isolation(Isolation::InProcess)
                    .plugin(dir)
                    .build(),
            );
            Ok(())
        })?;
        let session = session.ok_or("no session")?;
        let unexpected: Vec<&LoadError> = session
            .load_errors()
            .iter()
            .filter(|e| !matches!(e.kind, LoadErrorKind::NameConflict { .. }))
            .collect();
        let conflicts = session.load_errors().len() - unexpected.len();
        let expected = match plugins {
            Plugins::Copies => n.saturating_sub(1),
            Plugins::Distinct => 0,
        };
        if !unexpected.is_empty() || conflicts != expected || session.tools().is_empty() {
            return Err(format!(
                "loading {n} copies: {conflicts} name conflicts, unexpected: {unexpected:?}"
            ));
        }
        Ok(sample)
    }

    /// What a directory given to [`with_loader`] holds.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Plugins {
        /// Byte-identical copies of one plugin ([`copy_plugin`]).
        Copies,
        /// Plugins with tools of their own (`idle::distinct_plugins`).
        Distinct,
    }

    /// Load every plugin in `dir` with raw `libloading::Library::new` and look up the root
    /// module symbol once in each. The libraries stay loaded.
    pub fn raw(dir: &Path) -> Result<LoadSample, String> {
        let files = plugin_files(dir).map_err(|e| e.to_string())?;
        let symbol = format!("{}\0", xcsh_plugin_api::ffi::ROOT_MODULE_SYMBOL);
        measure(files.len(), || {
            for file in &files {
                // SAFETY: the files are copies of a plugin built from this workspace; loading
                // runs its constructors, which is what a host does with any plugin.
                let library = unsafe { libloading::Library::new(file) }
                    .map_err(|e| format!("{}: {e}", file.display()))?;
                // SAFETY: only the address is read; nothing is called through it.
                let root = unsafe { library.get::<*const ()>(symbol.as_bytes()) }
                    .map_err(|e| format!("{}: {e}", file.display()))?;
                std::hint::black_box(*root);
                std::mem::forget(library);
            }
            Ok(())
        })
    }
}

pub mod store {
    //! Push + pop on a [`PendingActionStore`], on one thread and on several at once.

    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    use xcsh_loader::{AgentToolResult, PendingAction, PendingActionStore};

    /// A pending action whose apply only returns a text.
    pub fn noop_action() -> PendingAction {
        PendingAction::new(
            "Bench: no-op",
            "bench",
            Box::new(|_reason, _ctx| Box::pin(async { Ok(AgentToolResult::text("applied")) })),
        )
    }

    /// `iters` times: push `action`, pop the top (which is then pushed next time). Returns
    /// the action held at the end. Panics if the store was empty at a pop (a store bug).
    pub fn push_pop(
        store: &PendingActionStore,
        action: PendingAction,
        iters: u64,
    ) -> PendingAction {
        let mut action = action;
        for _ in 0..iters {
            store.push(action);
            action = store
                .pop()
                .expect("the store lost an action between push and pop");
        }
        action
    }

    /// `threads` threads each do `iters` push + pop pairs on one shared store, started
    /// together; the wall time from the start to the last one's end.
    pub fn contended(threads: usize, iters: u64) -> Duration {
        let store = Arc::new(PendingActionStore::new());
        let start = Barrier::new(threads + 1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let (store, start) = (&store, &start);
                    scope.spawn(move || {
                        let action = noop_action();
                        start.wait();
                        std::hint::black_box(push_pop(store, action, iters));
                    })
                })
                .collect();
            start.wait();
            let began = Instant::now();
            for worker in workers {
                if let Err(panic) = worker.join() {
                    std::panic::resume_unwind(panic);
                }
            }
            let elapsed = began.elapsed();
            assert_eq!(store.count(), 0, "push + pop left actions behind");
            elapsed
        })
    }
}

pub mod tree {
    //! `ast_edit` beside `ast-grep run` on one generated tree of Rust, TypeScript and Python
    //! files: the same pattern and rewrite, the preview (`ast-grep run` without
    //! `--update-all`: it prints the changes) and the apply (`--update-all`).

    use std::path::Path;
    use std::process::{Command, Stdio};

    use serde_json::json;
    use xcsh_loader::{Session, ToolOutcome};

    /// The pattern every run rewrites.
    pub const PATTERN: &str = "foo($A)";
    /// Its rewrite.
    pub const REWRITE: &str = "bar($A)";

    /// What [`generate`] wrote.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Generated {
        /// Source files.
        pub files: usize,
        /// Calls [`PATTERN`] matches (single-argument `foo(...)` calls).
        pub matches: usize,
        /// Files with at least one match.
        pub files_with_matches: usize,
        /// Total bytes.
        pub bytes: usize,
    }

    const FUNCTIONS: usize = 12;

    fn rust(i: usize, calls: usize, two_arg: bool) -> String {
        let mut s = format!(
            "// Generated source file {i} (Rust).\nuse crate::util::{{baz, foo, qux}};\n\n"
        );
        for j in 0..FUNCTIONS {
            let call = if j < calls {
                format!("foo(x + {j})")
            } else {
                format!("baz(x, {j})")
            };
            s.push_str(&format!(
                "/// Function {j} of file {i}.\npub fn f{j}(x: i64) -> i64 {{\n    let y = {call};\n    let z = qux(y + {j});\n    if z > {j} {{\n        return baz(z, {j});\n    }}\n    z * 2\n}}\n\n"
            ));
        }
        if two_arg {
            s.push_str("pub fn tail(x: i64) -> i64 {\n    foo(x, 1)\n}\n");
        }
        s
    }

    fn typescript(i: usize, calls: usize, two_arg: bool) -> String {
        let mut s = format!(
            "// Generated source file {i} (TypeScript).\nimport {{ baz, foo, qux }} from \"./util\";\n\n"
        );
        for j in 0..FUNCTIONS {
            let call = if j < calls {
                format!("foo(x + {j})")
            } else {
                format!("baz(x, {j})")
            };
            s.push_str(&format!(
                "/** Function {j} of file {i}. */\nexport function f{j}(x: number): number {{\n  const y = {call};\n  const z = qux(y + {j});\n  if (z > {j}) {{\n    return baz(z, {j});\n  }}\n  return z * 2;\n}}\n\n"
            ));
        }
        if two_arg {
            s.push_str("export function tail(x: number): number {\n  return foo(x, 1);\n}\n");
        }
        s
    }

    fn python(i: usize, calls: usize, two_arg: bool) -> String {
        let mut s =
            format!("# Generated source file {i} (Python).\nfrom util import baz, foo, qux\n\n");
        for j in 0..FUNCTIONS {
            let call = if j < calls {
                format!("foo(x + {j})")
            } else {
                format!("baz(x, {j})")
            };
            s.push_str(&format!(
                "\ndef f{j}(x):\n    \"\"\"Function {j} of file {i}.\"\"\"\n    y = {call}\n    z = qux(y + {j})\n    if z > {j}:\n        return baz(z, {j})\n    return z * 2\n\n"
            ));
        }
        if two_arg {
            s.push_str("\ndef tail(x):\n    return foo(x, 1)\n");
        }
        s
    }

    /// Write `files` source files under `root` (a third each of `.rs`, `.ts` and `.py`, in 20
    /// packages of up to 10 directories). A quarter of the files call `foo` with one argument
    /// nowhere; the others do it in 1 to 6 of their 12 functions; every fifth file also has a
    /// two-argument `foo(x, 1)`, which the pattern must not match.
    pub fn generate(root: &Path, files: usize) -> std::io::Result<Generated> {
        let mut generated = Generated {
            files,
            matches: 0,
            files_with_matches: 0,
            bytes: 0,
        };
        for i in 0..files {
            let dir = root.join(format!("pkg{:02}/mod{:02}", i % 20, (i / 20) % 10));
            std::fs::create_dir_all(&dir)?;
            let calls = if i % 4 == 0 { 0 } else { 1 + (i * 7) % 6 };
            let two_arg = i % 5 == 0;
            let (name, content) = match i % 3 {
                0 => (format!("file{i:04}.rs"), rust(i, calls, two_arg)),
                1 => (format!("file{i:04}.ts"), typescript(i, calls, two_arg)),
                _ => (format!("file{i:04}.py"), python(i, calls, two_arg)),
            };
            std::fs::write(dir.join(name), &content)?;
            generated.matches += calls;
            generated.files_with_matches += usize::from(calls > 0);
            generated.bytes += content.len();
        }
        Ok(generated)
    }

    /// Copy the tree at `from` to `to` (regular files and directories).
    pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let target = to.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                copy_tree(&entry.path(), &target)?;
            } else {
                std::fs::copy(entry.path(), target)?;
            }
        }
        Ok(())
    }

    /// A session rooted at `root` with the built-in `ast_edit`.
    pub fn session(root: &Path) -> Session {
        Session::builder(root)
            .default_dirs(false)
            .builtin(xcsh_loader::ast_edit_tool().expect("the built-in ast_edit"))
            .build()
    }

    /// `ast_edit` over the whole tree: the preview (one pending action when anything matched).
    pub async fn preview(session: &Session) -> ToolOutcome {
        session
            .call(
                "ast_edit",
                json!({"ops": [{"pat": PATTERN, "out": REWRITE}]}),
            )
            .await
    }

    /// `resolve` the pending preview with `action` (`apply` or `discard`).
    pub async fn resolve(session: &Session, action: &str) -> ToolOutcome {
        let outcome = session
            .call("resolve", json!({"action": action, "reason": "bench"}))
            .await;
        session.take_steering_messages();
        outcome
    }

    /// `ast-grep run --pattern P --rewrite R` in `root` (a preview: it prints every change),
    /// with `--update-all` when `apply`. Returns what it printed.
    pub fn ast_grep(cli: &Path, root: &Path, apply: bool) -> Result<String, String> {
        let mut command = Command::new(cli);
        command
            .args(["run", "--pattern", PATTERN, "--rewrite", REWRITE])
            .current_dir(root)
            .stdin(Stdio::null());
        if apply {
            command.arg("--update-all");
        }
        let output = command
            .output()
            .map_err(|e| format!("cannot run {}: {e}", cli.display()))?;
        if !output.status.success() {
            return Err(format!(
                "ast-grep failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// `xcsh-plugins call ast_edit` with [`PATTERN`] and [`REWRITE`] in `root`, as a user runs
    /// it (a whole process, default options): the preview discarded, or applied when `apply`.
    /// Returns what it printed.
    pub fn ast_edit_cli(cli: &Path, root: &Path, apply: bool) -> Result<String, String> {
        let arguments = json!({"ops": [{"pat": PATTERN, "out": REWRITE}]}).to_string();
        let output = Command::new(cli)
            .args(["call", "ast_edit", &arguments])
            .arg(if apply { "--apply" } else { "--discard" })
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", cli.display()))?;
        if !output.status.success() {
            return Err(format!(
                "xcsh-plugins call ast_edit failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Whether two trees hold the same files with the same bytes; `Err` names a difference.
    pub fn same_tree(a: &Path, b: &Path) -> Result<(), String> {
        let mut names_a: Vec<_> = std::fs::read_dir(a)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        let mut names_b: Vec<_> = std::fs::read_dir(b)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        names_a.sort();
        names_b.sort();
        if names_a != names_b {
            return Err(format!(
                "{} and {} list different files",
                a.display(),
                b.display()
            ));
        }
        for name in names_a {
            let (pa, pb) = (a.join(&name), b.join(&name));
            if pa.is_dir() {
                same_tree(&pa, &pb)?;
            } else if std::fs::read(&pa).ok() != std::fs::read(&pb).ok() {
                return Err(format!("{} differs from {}", pa.display(), pb.display()));
            }
        }
        Ok(())
    }
}

pub mod isolation {
    //! Process isolation's costs: a call's round trip to a plugin child, a plugin's first
    //! call (spawn, handshake, `dlopen`), `list` over many isolated plugins, and a child's
    //! resident memory.

    use std::path::Path;
    use std::process::{Command, Output, Stdio};

    use xcsh_loader::{Isolation, Session};

    use super::calls::session_with;

    /// A session that loads exactly `plugin` in `isolation` (default settings otherwise),
    /// starting its process at build time: without the definitions cache (which would defer
    /// it, and is the user's).
    pub fn session(cwd: &Path, plugin: &Path, isolation: Isolation) -> Result<Session, String> {
        session_with(
            Session::builder(cwd)
                .isolation(isolation)
                .definitions_cache(false),
            plugin,
        )
    }

    /// The floor of any isolated call: one small message to another process and its answer,
    /// over a Unix stream socket, each side blocked in `read` (two thread wake-ups per round
    /// trip, no runtime, no framing, no serialisation). The other side is
    /// [`serve_ping_pong`], in a child process.
    pub struct PingPong {
        stream: std::os::unix::net::UnixStream,
        child: std::process::Child,
        _dir: tempfile::TempDir,
    }

    /// The size of each ping and pong: about an isolated call's request.
    const PING_BYTES: usize = 64;

    impl PingPong {
        /// Start `command` (which must run [`serve_ping_pong`] on the path it is given in
        /// `env`) and connect to it.
        pub fn start(mut command: Command, env: &str) -> std::io::Result<Self> {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("ping.sock");
            let listener = std::os::unix::net::UnixListener::bind(&path)?;
            let child = command.env(env, &path).stdin(Stdio::null()).spawn()?;
            let (stream, _) = listener.accept()?;
            Ok(Self {
                stream,
                child,
                _dir: dir,
            })
        }

        /// One ping and its pong.
        pub fn round_trip(&mut self) -> std::io::Result<()> {
            use std::io::{Read, Write};
            let mut buffer = [7u8; PING_BYTES];
            self.stream.write_all(&buffer)?;
            self.stream.read_exact(&mut buffer)
        }
    }

    impl Drop for PingPong {
        fn drop(&mut self) {
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
            let _ = self.child.wait();
        }
    }

    /// The child side of [`PingPong`]: answer every ping on the socket at `path` until it
    /// closes.
    pub fn serve_ping_pong(path: &Path) -> std::io::Result<()> {
        use std::io::{Read, Write};
        let mut stream = std::os::unix::net::UnixStream::connect(path)?;
        let mut buffer = [0u8; PING_BYTES];
        while stream.read_exact(&mut buffer).is_ok() {
            stream.write_all(&buffer)?;
        }
        Ok(())
    }

    /// Where `list` keeps plugins' tool definitions.
    #[derive(Debug, Clone, Copy)]
    pub enum DefinitionsCache<'a> {
        /// `--no-cache`: every plugin process starts, and the directory is not used.
        Off(&'a Path),
        /// The cache in this directory (`XCSH_CACHE_DIR`): an empty one is cold, one a
        /// `list` of the same plugins filled is warm.
        In(&'a Path),
    }

    /// `xcsh-plugins list --no-default-dirs --plugin <dir> --isolation <mode>`, as a user runs
    /// it, with its definitions cache in a directory of the benchmark's (never the user's).
    pub fn list(
        cli: &Path,
        dir: &Path,
        isolation: Isolation,
        cache: DefinitionsCache<'_>,
    ) -> std::io::Result<Output> {
        let mut command = Command::new(cli);
        command
            .args(["list", "--no-default-dirs", "--plugin"])
            .arg(dir)
            .args(["--isolation", isolation.as_str()]);
        let cache_dir = match cache {
            DefinitionsCache::Off(cache_dir) => {
                command.arg("--no-cache");
                cache_dir
            }
            DefinitionsCache::In(cache_dir) => cache_dir,
        };
        command
            .env("XCSH_CACHE_DIR", cache_dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
    }

    /// Resident memory of process `pid` (KiB): all of it, and the part mapped from the
    /// plugin library (its file or sealed copy, matched by `name` in `/proc/PID/smaps`).
    pub fn child_memory(pid: u32, name: &str) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let rss = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
        let mut plugin = 0;
        let mut in_plugin = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or_default();
            if first.contains('-') && !first.ends_with(':') {
                in_plugin = line.contains(name);
            } else if in_plugin && first == "Rss:" {
                plugin += line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        Some((rss, plugin))
    }
}

pub mod idle {
    //! Issue 28: what an idle MCP session over many plugins keeps (plugin processes, and the
    //! resident memory of the host plus its children), and what restarting a stopped plugin
    //! costs at its next call.

    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use rmcp::model::CallToolRequestParams;
    use rmcp::service::{RoleClient, RunningService};
    use serde_json::Value;

    use super::calls::{echo_args, mcp_text, serve_stdio, ECHO, ECHO_TEXT};

    /// Copy the `fixture-bench` plugin `source` to `n` distinct plugins in `dir` (0700), each
    /// with tools of its own: copy `NNN` has its number written over the plugin's copy marker
    /// (`xcsh-bench-copy=---`, the same length, so nothing else in the file moves), which
    /// names its tools `bench_echo_NNN` and `bench_preview_NNN`. Returns the echo tools'
    /// names, in order.
    pub fn distinct_plugins(source: &Path, dir: &Path, n: usize) -> std::io::Result<Vec<String>> {
        assert!(n <= 1000, "three digits per copy");
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let bytes = std::fs::read(source)?;
        let marker: &[u8] = b"xcsh-bench-copy=---";
        let at = bytes
            .windows(marker.len())
            .position(|w| w == marker)
            .ok_or_else(|| std::io::Error::other("no copy marker in the plugin"))?;
        let suffix = std::env::consts::DLL_SUFFIX;
        (0..n)
            .map(|i| {
                let mut copy = bytes.clone();
                copy[at + marker.len() - 3..at + marker.len()]
                    .copy_from_slice(format!("{i:03}").as_bytes());
                let target = dir.join(format!("libbench_idle_{i:03}{suffix}"));
                std::fs::write(&target, copy)?;
                Ok(format!("{ECHO}_{i:03}"))
            })
            .collect()
    }

    /// The plugin processes of process `pid` (its `xcsh-plugin-host` children).
    pub fn plugin_children(pid: u32) -> Vec<u32> {
        crate::child_pids(pid)
            .into_iter()
            .filter(|child| {
                std::fs::read_to_string(format!("/proc/{child}/comm"))
                    .is_ok_and(|comm| comm.starts_with("xcsh-plugin-hos"))
            })
            .collect()
    }

    /// What a session's processes hold at one moment.
    #[derive(Debug, Clone, Copy)]
    pub struct Footprint {
        /// Its plugin processes.
        pub plugin_processes: usize,
        /// The host's VmRSS, KiB.
        pub host_kib: u64,
        /// The host's plus every child's VmRSS, KiB.
        pub total_kib: u64,
    }

    /// The footprint of the session in process `pid` now.
    pub fn footprint(pid: u32) -> Footprint {
        let rss = |pid: u32| super::proc_kib(&format!("/proc/{pid}/status"), "VmRSS:").unwrap_or(0);
        let children = crate::child_pids(pid);
        let host_kib = rss(pid);
        Footprint {
            plugin_processes: plugin_children(pid).len(),
            host_kib,
            total_kib: host_kib + children.iter().map(|&c| rss(c)).sum::<u64>(),
        }
    }

    /// `xcsh-plugins mcp --no-default-dirs --plugin DIR [--stop-idle-after IDLE]` with its
    /// definitions cache in `cache`, and an `rmcp` client on its stdio.
    pub struct IdleSession {
        client: RunningService<RoleClient, ()>,
        child: tokio::process::Child,
    }

    impl IdleSession {
        /// Start it and initialize (`idle`: `None` keeps the default).
        pub async fn start(
            cli: &Path,
            dir: &Path,
            cwd: &Path,
            cache: &Path,
            idle: Option<&str>,
        ) -> Result<Self, String> {
            let mut command = tokio::process::Command::new(cli);
            command
                .args(["mcp", "--no-default-dirs", "--plugin"])
                .arg(dir)
                .arg("--cwd")
                .arg(cwd);
            if let Some(idle) = idle {
                command.args(["--stop-idle-after", idle]);
            }
            command.env("XCSH_CACHE_DIR", cache);
            let (client, child) = serve_stdio(command, cli).await?;
            Ok(Self { client, child })
        }

        /// The server's process id.
        pub fn pid(&self) -> u32 {
            self.child.id().unwrap_or(0)
        }

        /// `tools/list`: how many tools.
        pub async fn list(&self) -> Result<usize, String> {
            self.client
                .list_all_tools()
                .await
                .map(|tools| tools.len())
                .map_err(|e| format!("tools/list failed: {e}"))
        }

        /// Call `tool` (a renamed `bench_echo`) once; checks its answer.
        pub async fn call(&self, tool: &str) -> Result<(), String> {
            let Value::Object(arguments) = echo_args() else {
                return Err("arguments must be an object".to_owned());
            };
            let result = self
                .client
                .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
                .await
                .map_err(|e| format!("tools/call {tool} failed: {e}"))?;
            match mcp_text(&result) {
                text if text == ECHO_TEXT => Ok(()),
                text => Err(format!("{tool} answered {text:?}")),
            }
        }

        /// Close the client and end the server.
        pub async fn stop(mut self) {
            let _ = self.client.cancel().await;
            let _ = self.child.kill().await;
        }
    }

    /// Wait until process `pid` has no plugin process (at most `limit`); whether it got there.
    pub fn wait_for_no_plugin_process(pid: u32, limit: Duration) -> bool {
        let start = Instant::now();
        while !plugin_children(pid).is_empty() {
            if start.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// A session over `plugin` in process isolation that stops its process after `idle`
    /// (without the user's definitions cache).
    pub fn session(cwd: &Path, plugin: &PathBuf, idle: Option<Duration>) -> xcsh_loader::Session {
        xcsh_loader::Session::builder(cwd)
            .default_dirs(false)
            .isolation(xcsh_loader::Isolation::Process)
            .definitions_cache(false)
            .stop_idle_after(idle)
            .plugin(plugin)
            .build()
    }
}
