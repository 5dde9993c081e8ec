//! Test fixture: the faults of issue 13, which no panic guard can contain. In a host that
//! loads this in-process, most of these tools kill the host: only load it under process
//! isolation (or call only `ping`, `print`, `sleep`, `spin` and `wait_for_cancel` in-process).

use std::time::{Duration, Instant};

use xcsh_plugin_api::{
    export_plugin, json, AgentToolResult, CustomTool, CustomToolApi, CustomToolPendingAction,
    PluginError, ToolContext, ToolSet, Value,
};

#[derive(Clone, Copy)]
enum Fault {
    /// Answers `pong`: the "next call works" check and the benchmarks' trivial tool.
    Ping,
    /// The process id the tool runs in.
    Pid,
    Segfault,
    Abort,
    StackOverflow,
    Exit,
    /// Returns, then a thread aborts the process 300 ms later.
    AbortLater,
    /// `std::thread::sleep` for an hour.
    Sleep,
    /// A busy loop that never looks at cancellation.
    Spin,
    /// Spins until `ctx.is_cancelled()`, then says so.
    WaitForCancel,
    /// Prints to stdout and stderr.
    Print,
    /// Pushes a pending action whose apply writes `applied.txt` in the cwd.
    Preview,
    /// Writes a frame header announcing 4 GiB, then garbage, to every socket of its process
    /// (under process isolation: the protocol socket).
    Garble,
    /// Writes `{"path"}` (`"x"`); answers `wrote` or `error: <io error>` (issue 14).
    WriteFile,
    /// Renames `{"from"}` to `{"to"}`; answers `renamed` or `error: <io error>`.
    Rename,
    /// Runs `sh -c {"command"}`; answers `exit <status>` and its stderr.
    Shell,
    /// Allocates and touches 16 MiB blocks until an allocation fails (the process aborts).
    AllocBomb,
    /// Connects to `{"addr"}` over TCP (127.0.0.1 only); answers `connected` or
    /// `error: <io error>`.
    Connect,
    /// Asks the host to keep this process running while idle (`{"keep": true}`) or lets
    /// that go (`{"keep": false}`); answers its process id (issue 28).
    KeepAlive,
    /// Sleeps `{"ms"}` milliseconds, then answers its process id (a call longer than the
    /// idle time).
    Nap,
    /// Pushes a pending action whose apply and reject answer the process id they run in.
    PidPreview,
}

/// `params[key]` as a string, or a tool error naming it.
fn string_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, PluginError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PluginError::new(format!("missing string parameter \"{key}\"")))
}

/// `wrote`-style success text, or `error: <cause>`.
fn outcome(done: &str, result: std::io::Result<()>) -> AgentToolResult {
    AgentToolResult::text(match result {
        Ok(()) => done.to_owned(),
        Err(error) => format!("error: {error}"),
    })
}

struct CrashTool {
    name: &'static str,
    fault: Fault,
    api: CustomToolApi,
}

/// Overflows the stack, on purpose.
#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let buffer = std::hint::black_box([depth; 64]);
    recurse(depth + 1) + buffer[3]
}

impl CustomTool for CrashTool {
    type Params = Value;
    fn name(&self) -> &str {
        self.name
    }
    fn label(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "A tool that takes its process down, blocks, or prints"
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn deferrable(&self) -> bool {
        matches!(self.fault, Fault::Preview | Fault::PidPreview)
    }
    async fn execute(
        &self,
        _id: String,
        params: Value,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        match self.fault {
            Fault::Ping => Ok(AgentToolResult::text("pong")),
            Fault::Pid => Ok(AgentToolResult::text(host_pid().to_string())),
            Fault::Segfault => {
                let bad = std::ptr::null_mut::<u8>().wrapping_add(16);
                // SAFETY: it is not safe, on purpose: this tool exists to write through a bad
                // pointer and be killed by SIGSEGV.
                unsafe { std::ptr::write_volatile(bad, 1) };
                Ok(AgentToolResult::text("survived a bad write"))
            }
            Fault::Abort => std::process::abort(),
            Fault::StackOverflow => Ok(AgentToolResult::text(recurse(0).to_string())),
            Fault::Exit => std::process::exit(7),
            Fault::AbortLater => {
                std::thread::spawn(|| {
                    std::thread::sleep(Duration::from_millis(300));
                    std::process::abort();
                });
                Ok(AgentToolResult::text("returned; aborting in 300 ms"))
            }
            Fault::Sleep => {
                std::thread::sleep(Duration::from_secs(3600));
                Ok(AgentToolResult::text("woke up"))
            }
            Fault::Spin => {
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(3600) {
                    std::hint::spin_loop();
                }
                Ok(AgentToolResult::text("spun for an hour"))
            }
            Fault::WaitForCancel => {
                let start = Instant::now();
                while !ctx.is_cancelled() {
                    if start.elapsed() > Duration::from_secs(60) {
                        return Ok(AgentToolResult::text("never cancelled"));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(PluginError::new("saw the cancellation"))
            }
            Fault::Print => {
                println!("crash fixture says hello on stdout");
                eprintln!("crash fixture says hello on stderr");
                Ok(AgentToolResult::text("printed"))
            }
            Fault::Garble => {
                let garbled = garble_sockets();
                Ok(AgentToolResult::text(format!(
                    "garbled {garbled} socket(s)"
                )))
            }
            Fault::WriteFile => {
                let path = self.api.resolve_path(string_param(&params, "path")?);
                Ok(outcome("wrote", std::fs::write(path, b"x")))
            }
            Fault::Rename => {
                let from = self.api.resolve_path(string_param(&params, "from")?);
                let to = self.api.resolve_path(string_param(&params, "to")?);
                Ok(outcome("renamed", std::fs::rename(from, to)))
            }
            Fault::Shell => {
                let command = string_param(&params, "command")?;
                // Windows has no `sh`: its command interpreter runs the line there.
                let (shell, flag) = if cfg!(windows) {
                    ("cmd", "/c")
                } else {
                    ("sh", "-c")
                };
                let ran = std::process::Command::new(shell)
                    .args([flag, command])
                    .current_dir(self.api.cwd())
                    .output();
                Ok(AgentToolResult::text(match ran {
                    Ok(output) => format!(
                        "exit {}: {}",
                        output.status.code().unwrap_or(-1),
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                    Err(error) => format!("error: {error}"),
                }))
            }
            Fault::AllocBomb => {
                let mut blocks = Vec::new();
                loop {
                    blocks.push(vec![1u8; 16 << 20]);
                    std::hint::black_box(&blocks);
                    if blocks.len() > 1 << 16 {
                        return Ok(AgentToolResult::text("allocated 1 TiB"));
                    }
                }
            }
            Fault::Connect => {
                let addr: std::net::SocketAddr = string_param(&params, "addr")?
                    .parse()
                    .map_err(|e| PluginError::new(format!("bad address: {e}")))?;
                if !addr.ip().is_loopback() {
                    return Err(PluginError::new("only loopback addresses"));
                }
                let connected =
                    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map(drop);
                Ok(outcome("connected", connected))
            }
            Fault::KeepAlive => {
                let keep = params.get("keep").and_then(Value::as_bool).unwrap_or(true);
                self.api.keep_alive(keep);
                Ok(AgentToolResult::text(host_pid().to_string()))
            }
            Fault::Nap => {
                let ms = params.get("ms").and_then(Value::as_u64).unwrap_or(0);
                std::thread::sleep(Duration::from_millis(ms.min(60_000)));
                Ok(AgentToolResult::text(host_pid().to_string()))
            }
            Fault::PidPreview => {
                self.api.push_pending_action(
                    CustomToolPendingAction::new("Crash: answer the pid", |_reason| async {
                        Ok(AgentToolResult::text(format!("applied in {}", host_pid())))
                    })
                    .with_reject(|_reason| async {
                        Ok(Some(AgentToolResult::text(format!(
                            "rejected in {}",
                            host_pid()
                        ))))
                    })
                    .with_source_tool_name("pid_preview"),
                )?;
                Ok(AgentToolResult::text(host_pid().to_string()))
            }
            Fault::Preview => {
                let target = self.api.resolve_path("applied.txt");
                self.api.push_pending_action(
                    CustomToolPendingAction::new("Crash: write applied.txt", move |reason| {
                        let target = target.clone();
                        async move {
                            std::fs::write(&target, reason)
                                .map_err(|e| PluginError::new(e.to_string()))?;
                            Ok(AgentToolResult::text("wrote applied.txt"))
                        }
                    })
                    .with_source_tool_name("crash_preview"),
                )?;
                Ok(AgentToolResult::text("previewed"))
            }
        }
    }
}

/// Windows: the link's handles are not findable from plugin code (they are no standard handle
/// any more); nothing is garbled.
#[cfg(not(unix))]
fn garble_sockets() -> usize {
    0
}

/// Write garbage to every socket descriptor of this process; how many there were.
#[cfg(unix)]
fn garble_sockets() -> usize {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let mut garbled = 0;
    for entry in entries.flatten() {
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if is_socket {
            // SAFETY: `fd` is open (listed just now) and stays open: the `File` is never
            // dropped, so it is never closed here. Writing garbage to it is the point.
            let mut socket = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
            let _ = socket.write_all(b"\xff\xff\xff\xffnot a frame");
            garbled += 1;
        }
    }
    garbled
}

fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    let tools = [
        ("ping", Fault::Ping),
        ("pid", Fault::Pid),
        ("segfault", Fault::Segfault),
        ("abort", Fault::Abort),
        ("stack_overflow", Fault::StackOverflow),
        ("exit", Fault::Exit),
        ("abort_later", Fault::AbortLater),
        ("sleep", Fault::Sleep),
        ("spin", Fault::Spin),
        ("wait_for_cancel", Fault::WaitForCancel),
        ("print", Fault::Print),
        ("crash_preview", Fault::Preview),
        ("garble", Fault::Garble),
        ("write_file", Fault::WriteFile),
        ("rename", Fault::Rename),
        ("shell", Fault::Shell),
        ("alloc_bomb", Fault::AllocBomb),
        ("connect", Fault::Connect),
        ("keep_alive", Fault::KeepAlive),
        ("nap", Fault::Nap),
        ("pid_preview", Fault::PidPreview),
    ];
    Ok(tools
        .into_iter()
        .fold(ToolSet::new(), |set, (name, fault)| {
            set.with(CrashTool {
                name,
                fault,
                api: api.clone(),
            })
        }))
}

export_plugin!(factory);

/// This process's id as the host sees it: a plugin process lives in a PID namespace of its
/// own, where `std::process::id()` is a small number; `/proc` (the host's) names it by the
/// host's number.
fn host_pid() -> u32 {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|link| link.to_str()?.parse().ok())
        .unwrap_or_else(std::process::id)
}
