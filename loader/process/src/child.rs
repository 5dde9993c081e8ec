//! Inside `xcsh-plugin-host`: load the plugin from the descriptor the host handed over, run
//! its factory, report its tools, then serve calls, applies and rejects until the host says
//! stop or goes away.
//!
//! Before anything else runs (the runtime, the library's constructors, any thread), the child
//! confines itself as the host's `--sandbox` policy says: resource limits, then Landlock
//! (reads, writes, TCP), then under `--deny-network` a seccomp filter on sockets; both bind
//! the calling thread and every thread and process it starts later. Its environment was
//! already cleaned by the host that started it (only the variables the policy names).
//!
//! Worker threads take turns reading the socket (leader/follower): the worker that reads a
//! call runs it itself, after making sure another worker reads on, so a plugin that blocks
//! never stops this child from reading a `Cancel`, and a trivial call costs no thread hop.
//!
//! Every call, apply and reject gets its [`CancelToken`] while the reader is still held, so a
//! `Cancel` read right after it is never lost. At `Shutdown` (or when the host is gone) every
//! one of them is cancelled, and the child exits once they have all ended (their futures
//! dropped: an apply has undone its staged changes), or after the grace period.

mod actions;

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use std::sync::atomic::AtomicUsize;

use crate::sandbox::apply_limits;
use actions::Pushes;
use xcsh_loader_core::for_layers::load_inherited;
use xcsh_loader_core::for_layers::protocol::{
    ChildMessage, FrameReader, FrameWriter, HostMessage, ToolDefinition, PROTOCOL_VERSION,
};
use xcsh_loader_core::for_layers::{
    die_with_parent, parent_is, take_link, take_plugin, ChildRead, ChildWrite,
};
use xcsh_loader_core::for_layers::{instantiate, KeepAliveSink, PluginTool, PushSink};
use xcsh_loader_core::plugin_log::PluginLogSink;
use xcsh_loader_core::sandbox::{Confinement, SandboxPolicy};
use xcsh_loader_core::store::PendingAction;
use xcsh_loader_core::tool::{ActionContext, CallContext, CancelToken, Tool, GRACE_PERIOD};
use xcsh_plugin_api::__private::lock;

/// What the host passes on the command line.
struct Arguments {
    protocol: u32,
    socket: i64,
    plugin_fd: i64,
    path: PathBuf,
    cwd: PathBuf,
    store: bool,
    /// The sandbox to set up before loading (JSON); none without `--sandbox`.
    sandbox: Option<SandboxPolicy>,
    /// `--probe`: load the library and check it, report, exit (no factory, no calls).
    probe: bool,
}

fn parse(mut args: impl Iterator<Item = std::ffi::OsString>) -> Result<Arguments, String> {
    let (mut protocol, mut socket, mut plugin_fd, mut path, mut cwd, mut store) =
        (None, None, None, None, None, false);
    let mut sandbox = None;
    let mut probe = false;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg:?} needs a value"));
        match arg.to_str() {
            Some("--protocol") => protocol = value()?.to_str().and_then(|v| v.parse().ok()),
            Some("--socket") => socket = value()?.to_str().and_then(|v| v.parse().ok()),
            Some("--plugin-fd") => plugin_fd = value()?.to_str().and_then(|v| v.parse().ok()),
            Some("--path") => path = Some(PathBuf::from(value()?)),
            Some("--cwd") => cwd = Some(PathBuf::from(value()?)),
            Some("--store") => store = true,
            Some("--probe") => probe = true,
            Some("--sandbox") => {
                let text = value()?;
                let policy = text
                    .to_str()
                    .and_then(|text| serde_json::from_str(text).ok())
                    .ok_or("--sandbox needs a JSON sandbox policy")?;
                sandbox = Some(policy);
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Ok(Arguments {
        protocol: protocol.ok_or("--protocol N is required")?,
        socket: socket.ok_or("--socket N is required")?,
        plugin_fd: plugin_fd.ok_or("--plugin-fd N is required")?,
        path: path.ok_or("--path is required")?,
        cwd: cwd.ok_or("--cwd is required")?,
        store,
        sandbox,
        probe,
    })
}

/// The `main` of `xcsh-plugin-host`. Not for people: the host starts it with a socket and a
/// plugin descriptor to inherit.
pub fn child_main() -> ExitCode {
    let arguments = match parse(std::env::args_os().skip(1)) {
        Ok(arguments) => arguments,
        Err(message) => {
            eprintln!(
                "xcsh-plugin-host: {message}\nthis program is started by the xcsh plugin loader, not by hand"
            );
            return ExitCode::from(2);
        }
    };
    let parent = std::env::var("XCSH_PLUGIN_HOST_PARENT")
        .ok()
        .and_then(|pid| pid.parse::<u32>().ok());
    if parent.is_none_or(|parent| !parent_is(parent) || die_with_parent(parent).is_err()) {
        eprintln!("xcsh-plugin-host: the process that started this one is gone");
        return ExitCode::from(2);
    }
    // Still the only thread of this process: it moves into a PID namespace of its own (so
    // that nothing it starts outlives it; see `contain`), then what Landlock confines
    // now covers every later thread, the plugin's included.
    #[cfg(target_os = "linux")]
    let programs_contained = crate::contain::contain_programs();
    // No PID namespaces: what the plugin starts may outlive it, and `list` says so; the host
    // still ends this process's group when it reaps it.
    #[cfg(all(unix, not(target_os = "linux")))]
    let programs_contained = false;
    // The host's Job Object holds this process and all it starts, and ends them together.
    #[cfg(windows)]
    let programs_contained = true;
    let confinement = arguments.sandbox.as_ref().map(|policy| {
        confine(policy).map(|mut confinement| {
            confinement.programs_contained = programs_contained;
            confinement
        })
    });
    // Only to poll plugin futures with `Handle::block_on` on the workers: plugin futures
    // bring their own runtime, so this one drives nothing.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("xcsh-plugin-host: cannot start a runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let code = serve(arguments, confinement, runtime.handle().clone());
    // Threads of plugin code may still be blocked: end the process without waiting for them.
    std::process::exit(code)
}

/// The writing end of the socket, shared by every thread of the child.
type Outgoing = Arc<FrameWriter<ChildWrite>>;

/// The plugin's keep-alive request ([`xcsh_loader_core::for_layers::KeepAliveSink`]): sent to the host
/// once the handshake is out (the host reads nothing else before the `Hello`), so a request
/// the factory made is remembered and sent right after it.
struct KeepAlive {
    outgoing: Outgoing,
    wanted: std::sync::atomic::AtomicBool,
    /// Set once the `Hello` was sent: from then on each request goes out as it is made.
    announced: std::sync::atomic::AtomicBool,
}

impl KeepAlive {
    fn request(&self, keep: bool) {
        self.wanted.store(keep, Ordering::SeqCst);
        if self.announced.load(Ordering::SeqCst) {
            self.outgoing.send(&ChildMessage::KeepAlive { keep });
        }
    }

    /// After the `Hello`: send what the factory asked for, if anything.
    fn announce(&self) {
        self.announced.store(true, Ordering::SeqCst);
        if self.wanted.load(Ordering::SeqCst) {
            self.outgoing.send(&ChildMessage::KeepAlive { keep: true });
        }
    }
}

/// What every worker thread of the child shares.
struct Shared {
    reader: Mutex<FrameReader<ChildRead>>,
    outgoing: Outgoing,
    tools: HashMap<String, Arc<PluginTool>>,
    /// The running calls, applies and rejects, by number (the host numbers them from one
    /// counter): each one's cancellation.
    calls: Mutex<HashMap<u64, CancelToken>>,
    /// Signalled whenever one of `calls` ends.
    call_ended: Condvar,
    pushes: Arc<Pushes>,
    /// Workers not busy with a message: one of them is (or will be) reading.
    idle: AtomicUsize,
    /// Polls plugin futures (`Handle::block_on`); they bring their own runtime.
    runtime: tokio::runtime::Handle,
    /// The calls' host-service requests waiting for the host's reply.
    requests: Arc<xcsh_loader_core::forward::HostAnswers>,
    /// Where the sandbox lets the plugin write (canonical), told to `exec`; `None` unconfined.
    writable: Option<Arc<[PathBuf]>>,
    cwd: PathBuf,
}

/// Set `policy`'s limits on this process and confine this thread: Landlock (reads, writes,
/// TCP), then under `deny_network` the seccomp filter that refuses sockets. The protocol
/// socket is inherited (one end of the host's `socketpair`), so the child needs no `socket`
/// call of its own afterwards.
fn confine(policy: &SandboxPolicy) -> Result<Confinement, String> {
    apply_limits(policy).map_err(|error| error.to_string())?;
    crate::sandbox::confine(policy).map_err(|error| error.to_string())
}

fn serve(
    arguments: Arguments,
    confinement: Option<Result<Confinement, String>>,
    runtime: tokio::runtime::Handle,
) -> i32 {
    let ((stream, writer), plugin) = match (
        take_link(arguments.socket),
        take_plugin(arguments.plugin_fd),
    ) {
        (Ok(link), Ok(plugin)) => (link, plugin),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("xcsh-plugin-host: bad inherited link or plugin file: {error}");
            return 2;
        }
    };
    let outgoing: Outgoing = Arc::new(FrameWriter::new(writer));
    if arguments.protocol != PROTOCOL_VERSION {
        let cause = format!(
            "{} speaks protocol {PROTOCOL_VERSION}, the loader {}; install the {} of the same build as the loader",
            xcsh_loader_core::isolate::PLUGIN_HOST_BIN,
            arguments.protocol,
            xcsh_loader_core::isolate::PLUGIN_HOST_BIN
        );
        outgoing.send(&ChildMessage::LoadFailed {
            kind: xcsh_loader_core::LoadErrorKind::PluginProcess { cause },
        });
        return 0;
    }
    let confinement = match confinement.transpose() {
        Ok(confinement) => confinement,
        Err(cause) => {
            outgoing.send(&ChildMessage::LoadFailed {
                kind: xcsh_loader_core::LoadErrorKind::PluginProcess { cause },
            });
            return 0;
        }
    };
    if arguments.probe {
        outgoing.send(&ChildMessage::Probing);
        // What loading in process runs: the library's constructors, the checks, and its
        // factory (whose own errors are the host's to report: only a crash is the verdict).
        let outcome = load_inherited(&arguments.path, plugin).map(|library| {
            let _ = instantiate(library, &arguments.path, &arguments.cwd, None, None, None);
        });
        outgoing.send(&ChildMessage::Probed {
            error: outcome.err().map(|error| error.kind),
        });
        return 0;
    }
    let pushes: Arc<Pushes> = Arc::default();
    let loaded = load(&arguments, plugin, &outgoing, &pushes, confinement);
    let tools = match loaded {
        Ok(tools) => tools,
        Err(kind) => {
            outgoing.send(&ChildMessage::LoadFailed { kind });
            return 0;
        }
    };
    let shared = Arc::new(Shared {
        reader: Mutex::new(FrameReader::new(stream)),
        outgoing,
        tools,
        calls: Mutex::default(),
        call_ended: Condvar::new(),
        pushes,
        idle: AtomicUsize::new(1),
        runtime,
        requests: Arc::default(),
        writable: arguments.sandbox.as_ref().map(|policy| {
            policy
                .writable
                .iter()
                .map(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()))
                .collect()
        }),
        cwd: arguments.cwd,
    });
    shared.pushes.serving.store(true, Ordering::SeqCst);
    work(&shared)
}

/// A worker: take the reader, read one message, hand the reader on, handle the message, and
/// again. Whenever the last idle worker starts on a message, a new worker is started first,
/// so the socket is always read (a `Cancel` arrives while every other worker runs plugin
/// code). A round trip wakes only the worker that reads the call.
fn work(shared: &Arc<Shared>) -> i32 {
    loop {
        let (message, cancel) = {
            let mut reader = lock(&shared.reader);
            let message = reader.next::<HostMessage>();
            let cancel = message.as_ref().ok().and_then(|m| register(shared, m));
            (message, cancel)
        };
        let message = match message {
            Ok(message) => message,
            // The host is gone or spoke garbage: nothing more to do.
            Err(_) => return stop(shared),
        };
        match message {
            HostMessage::Cancel { call } => {
                if let Some(cancel) = lock(&shared.calls).get(&call) {
                    cancel.cancel();
                }
                continue;
            }
            HostMessage::PushAnswered { action, refused } => {
                shared.pushes.answered(action, refused);
                continue;
            }
            HostMessage::ServiceReply { request, reply } => {
                shared.requests.answer(request, reply);
                continue;
            }
            HostMessage::Shutdown => return stop(shared),
            _ => {}
        }
        if shared.idle.fetch_sub(1, Ordering::SeqCst) == 1 {
            shared.idle.fetch_add(1, Ordering::SeqCst);
            let next = Arc::clone(shared);
            let spawned = std::thread::Builder::new()
                .name("xcsh-plugin-worker".to_owned())
                .spawn(move || std::process::exit(work(&next)));
            if spawned.is_err() {
                shared.idle.fetch_sub(1, Ordering::SeqCst);
            }
        }
        handle(shared, message, cancel.unwrap_or_default());
        shared.idle.fetch_add(1, Ordering::SeqCst);
    }
}

/// The cancellation of a call, apply or reject just read, registered before the next message
/// (perhaps its `Cancel`) can be read.
fn register(shared: &Shared, message: &HostMessage) -> Option<CancelToken> {
    let number = match message {
        HostMessage::Execute { call, .. } | HostMessage::SessionEvent { call, .. } => *call,
        HostMessage::Apply { request, .. } | HostMessage::Reject { request, .. } => *request,
        _ => return None,
    };
    let cancel = CancelToken::new();
    lock(&shared.calls).insert(number, cancel.clone());
    Some(cancel)
}

/// `number` ended (its future is gone): forget its cancellation.
fn ended(shared: &Shared, number: u64) {
    lock(&shared.calls).remove(&number);
    shared.call_ended.notify_all();
}

/// The session ended (or the host is gone): cancel every call, apply and reject, and wait until
/// they have ended (an apply's undo is never cut short by the exit), for at most the grace
/// period (after which the host kills this process anyway). Returns the exit status.
fn stop(shared: &Shared) -> i32 {
    // A question or a push waiting for the host fails at once: nobody will answer it.
    shared.requests.close();
    shared.pushes.host_gone();
    let calls = lock(&shared.calls);
    for cancel in calls.values() {
        cancel.cancel();
    }
    let _ = shared
        .call_ended
        .wait_timeout_while(calls, GRACE_PERIOD, |calls| !calls.is_empty());
    0
}

/// The host's services for the call (or apply, or reject) numbered `call`: each request passed
/// on to the host as the plugin made it, where the rules are applied, once.
fn remote_services(
    shared: &Shared,
    call: u64,
    facts: xcsh_plugin_api::host::HostFacts,
    cancel: &CancelToken,
) -> xcsh_loader_core::services::CallServices {
    let host = xcsh_loader_core::forward::ForwardedHost::new(
        call,
        facts,
        Arc::clone(&shared.outgoing),
        Arc::clone(&shared.requests),
    );
    xcsh_loader_core::services::CallServices::forwarded(
        Arc::new(host),
        shared.writable.clone(),
        cancel.clone(),
    )
}

/// What the apply or reject request `request` hands its plugin (docs/guide/src/pending.md): the
/// host's services, the request's cancellation, and its updates, sent as a call's.
fn action_context(
    shared: &Shared,
    request: u64,
    facts: xcsh_plugin_api::host::HostFacts,
    cancel: CancelToken,
) -> ActionContext {
    let updates = Arc::clone(&shared.outgoing);
    ActionContext {
        services: remote_services(shared, request, facts, &cancel),
        cancel,
        updates: Some(Arc::new(move |result| {
            updates.send(&ChildMessage::Update {
                call: request,
                result,
            });
        })),
    }
}

fn handle(shared: &Shared, message: HostMessage, cancel: CancelToken) {
    match message {
        HostMessage::Execute {
            call,
            tool,
            tool_call_id,
            arguments,
            facts,
        } => {
            let services = remote_services(shared, call, facts, &cancel);
            let outcome = execute(
                shared,
                call,
                &tool,
                tool_call_id,
                arguments,
                cancel,
                services,
            );
            ended(shared, call);
            shared.outgoing.send(&ChildMessage::Done { call, outcome });
        }
        HostMessage::Apply {
            request,
            action,
            reason,
            facts,
        } => {
            let ctx = action_context(shared, request, facts, cancel);
            actions::resolve(shared, request, action, reason, true, ctx);
            ended(shared, request);
        }
        HostMessage::Reject {
            request,
            action,
            reason,
            facts,
        } => {
            let ctx = action_context(shared, request, facts, cancel);
            actions::resolve(shared, request, action, reason, false, ctx);
            ended(shared, request);
        }
        HostMessage::DropAction { action } => shared.pushes.drop_action(action),
        HostMessage::SessionEvent { call, tool, event } => {
            // Heard to its end, not cut short by a `Shutdown` read meanwhile (the `shutdown`
            // event comes right before it): `stop` waits for it, within the grace period.
            let _ = cancel;
            if let Some(tool) = shared.tools.get(&tool).cloned() {
                shared.runtime.block_on(tool.on_session(event));
            }
            ended(shared, call);
            shared.outgoing.send(&ChildMessage::Heard { call });
        }
        HostMessage::Cancel { .. }
        | HostMessage::Shutdown
        | HostMessage::PushAnswered { .. }
        | HostMessage::ServiceReply { .. } => {}
    }
}

/// Run one call to its end or its cancellation, on this thread.
fn execute(
    shared: &Shared,
    call: u64,
    tool: &str,
    tool_call_id: String,
    arguments: serde_json::Value,
    cancel: CancelToken,
    services: xcsh_loader_core::services::CallServices,
) -> Result<xcsh_plugin_api::AgentToolResult, String> {
    let Some(tool) = shared.tools.get(tool).cloned() else {
        return Err(format!("Tool \"{tool}\" not found"));
    };
    let updates = Arc::clone(&shared.outgoing);
    let ctx = CallContext {
        cwd: shared.cwd.clone(),
        store: None,
        cancel: cancel.clone(),
        updates: Some(Arc::new(move |result| {
            updates.send(&ChildMessage::Update { call, result });
        })),
        services,
    };
    let future = tool.execute(tool_call_id, arguments, ctx);
    let outcome = shared.runtime.block_on(async move {
        tokio::select! {
            outcome = future => Some(outcome),
            () = cancel.cancelled() => None,
        }
    });
    match outcome {
        Some(Ok(result)) => Ok(result),
        Some(Err(error)) => Err(error.message().to_owned()),
        None => Err("the call was cancelled".to_owned()),
    }
}

/// Load the plugin and run its factory, with pushes and log lines going to the host.
fn load(
    arguments: &Arguments,
    plugin: File,
    outgoing: &Outgoing,
    pushes: &Arc<Pushes>,
    confinement: Option<Confinement>,
) -> Result<HashMap<String, Arc<PluginTool>>, xcsh_loader_core::LoadErrorKind> {
    let library = load_inherited(&arguments.path, plugin).map_err(|error| error.kind)?;
    let sink: Option<PushSink> = arguments.store.then(|| {
        let outgoing = outgoing.clone();
        let pushes = Arc::clone(pushes);
        Arc::new(move |action: PendingAction| pushes.push(&outgoing, action)) as PushSink
    });
    let logs = outgoing.clone();
    let logger: PluginLogSink = Arc::new(move |_plugin, level, message| {
        logs.send(&ChildMessage::Log {
            level,
            message: message.to_owned(),
        });
    });
    let api_version = library.api_version().to_string();
    let keep_alive = Arc::new(KeepAlive {
        outgoing: outgoing.clone(),
        wanted: std::sync::atomic::AtomicBool::new(false),
        announced: std::sync::atomic::AtomicBool::new(false),
    });
    let requests = Arc::clone(&keep_alive);
    let keep_alive_sink: KeepAliveSink = Arc::new(move |keep| requests.request(keep));
    let tools = instantiate(
        library,
        &arguments.path,
        &arguments.cwd,
        sink,
        Some(logger),
        Some(keep_alive_sink),
    )
    .map_err(|error| error.kind)?;
    let definitions = tools.iter().map(|tool| ToolDefinition::of(tool)).collect();
    outgoing.send(&ChildMessage::Hello {
        api_version,
        tools: definitions,
        confinement,
    });
    keep_alive.announce();
    Ok(tools
        .into_iter()
        .map(|mut tool| {
            // Polled on the worker that read the call: no further thread hop.
            tool.set_inline(true);
            (tool.spec().name.clone(), Arc::new(tool))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = std::ffi::OsString> {
        list.iter()
            .map(std::ffi::OsString::from)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn the_command_line_the_host_passes_parses() {
        let parsed = parse(args(&[
            "--protocol",
            "1",
            "--socket",
            "5",
            "--plugin-fd",
            "6",
            "--path",
            "/p/libx.so",
            "--cwd",
            "/w",
            "--store",
        ]))
        .unwrap();
        assert_eq!(
            (parsed.protocol, parsed.socket, parsed.plugin_fd),
            (1, 5, 6)
        );
        assert_eq!(parsed.path, PathBuf::from("/p/libx.so"));
        assert!(parsed.store);
        assert_eq!(parsed.sandbox, None);
        let policy = r#"{"writable":["/w"],"deny_network":true,"memory_limit":536870912,"max_open_files":1024,"max_processes":null}"#;
        let base = [
            "--protocol",
            "1",
            "--socket",
            "5",
            "--plugin-fd",
            "6",
            "--path",
            "/p/libx.so",
            "--cwd",
            "/w",
        ];
        let sandboxed = parse(args(&[&base[..], &["--sandbox", policy]].concat())).unwrap();
        let sandbox = sandboxed.sandbox.unwrap();
        assert_eq!(sandbox.writable, vec![PathBuf::from("/w")]);
        assert!(sandbox.deny_network);
        assert_eq!(sandbox.memory_limit, Some(512 << 20));
        assert!(parse(args(&[&base[..], &["--sandbox", "{not json"]].concat())).is_err());
        assert!(parse(args(&["--socket", "5"])).is_err());
        assert!(parse(args(&["--bogus"])).is_err());
    }
}
