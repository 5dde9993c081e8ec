//! Inside `xcsh-plugin-host`: load the plugin from the descriptor the host handed over, run
//! its factory, report its tools, then serve calls, applies and rejects until the host says
//! stop or goes away.
//!
//! The socket is read on the runtime's worker thread; plugin code never runs there: each
//! call, apply, reject and drop runs on a blocking-pool thread (see `plugin_abi::offload`),
//! so a plugin that blocks never stops this child from reading a `Cancel`.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};
use xcsh_plugin_api::ffi::FfiLogLevel;

use super::protocol::{
    codec, encode, ChildMessage, HostMessage, LogLevel, Resolution, ToolDefinition,
};
use crate::load::open::load_inherited;
use crate::plugin_abi::{instantiate, LogSink, PluginTool, PushSink};
use crate::store::PendingAction;
use crate::sys::spawn::{die_with_parent, parent_is, take_inherited};
use crate::tool::{CallContext, CancelToken, Tool};

/// What the host passes on the command line.
struct Arguments {
    socket: i32,
    plugin_fd: i32,
    path: PathBuf,
    cwd: PathBuf,
    store: bool,
}

fn parse(mut args: impl Iterator<Item = std::ffi::OsString>) -> Result<Arguments, String> {
    let (mut socket, mut plugin_fd, mut path, mut cwd, mut store) = (None, None, None, None, false);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg:?} needs a value"));
        match arg.to_str() {
            Some("--socket") => socket = value()?.to_str().and_then(|v| v.parse().ok()),
            Some("--plugin-fd") => plugin_fd = value()?.to_str().and_then(|v| v.parse().ok()),
            Some("--path") => path = Some(PathBuf::from(value()?)),
            Some("--cwd") => cwd = Some(PathBuf::from(value()?)),
            Some("--store") => store = true,
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Ok(Arguments {
        socket: socket.ok_or("--socket N is required")?,
        plugin_fd: plugin_fd.ok_or("--plugin-fd N is required")?,
        path: path.ok_or("--path is required")?,
        cwd: cwd.ok_or("--cwd is required")?,
        store,
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
    if parent.is_none_or(|parent| !parent_is(parent)) || die_with_parent().is_err() {
        eprintln!("xcsh-plugin-host: the process that started this one is gone");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("xcsh-plugin-host: cannot start a runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(serve(arguments));
    // Threads of plugin code may still be blocked: end the process without waiting for them.
    std::process::exit(code)
}

type Outgoing = mpsc::UnboundedSender<ChildMessage>;

async fn serve(arguments: Arguments) -> i32 {
    let (socket, plugin) = match (
        take_inherited(arguments.socket),
        take_inherited(arguments.plugin_fd),
    ) {
        (Ok(socket), Ok(plugin)) => (socket, plugin),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("xcsh-plugin-host: bad inherited descriptor: {error}");
            return 2;
        }
    };
    let stream = std::os::unix::net::UnixStream::from(socket);
    let stream = match stream
        .set_nonblocking(true)
        .and_then(|()| tokio::net::UnixStream::from_std(stream))
    {
        Ok(stream) => stream,
        Err(error) => {
            eprintln!("xcsh-plugin-host: bad socket: {error}");
            return 2;
        }
    };
    let (read_half, write_half) = stream.into_split();
    let mut frames = FramedRead::new(read_half, codec());
    let mut sink = FramedWrite::new(write_half, codec());
    let (outgoing, mut to_send) = mpsc::unbounded_channel::<ChildMessage>();
    let writer = tokio::spawn(async move {
        while let Some(message) = to_send.recv().await {
            let Some(bytes) = encode(&message) else {
                continue;
            };
            if sink.send(bytes).await.is_err() {
                break;
            }
        }
    });

    let actions: Arc<Mutex<HashMap<u64, PendingAction>>> = Arc::default();
    let tools = match load(&arguments, File::from(plugin), &outgoing, &actions) {
        Ok(tools) => tools,
        Err(kind) => {
            let _ = outgoing.send(ChildMessage::LoadFailed { kind });
            drop(outgoing);
            let _ = writer.await;
            return 0;
        }
    };
    let calls: Arc<Mutex<HashMap<u64, CancelToken>>> = Arc::default();
    while let Some(frame) = frames.next().await {
        let Ok(message) = frame.map_err(|e| e.to_string()).and_then(|bytes| {
            serde_json::from_slice::<HostMessage>(&bytes).map_err(|e| e.to_string())
        }) else {
            break;
        };
        match message {
            HostMessage::Execute {
                call,
                tool,
                tool_call_id,
                arguments: args,
            } => {
                let cancel = CancelToken::new();
                lock(&calls).insert(call, cancel.clone());
                let Some(tool) = tools.get(&tool).cloned() else {
                    let _ = outgoing.send(ChildMessage::Done {
                        call,
                        outcome: Err(format!("Tool \"{tool}\" not found")),
                    });
                    continue;
                };
                let updates = outgoing.clone();
                let ctx = CallContext {
                    cwd: arguments.cwd.clone(),
                    store: None,
                    cancel,
                    updates: Some(Arc::new(move |result| {
                        let _ = updates.send(ChildMessage::Update { call, result });
                    })),
                };
                let done = outgoing.clone();
                let calls = Arc::clone(&calls);
                tokio::spawn(async move {
                    let outcome = tool
                        .execute(tool_call_id, args, ctx)
                        .await
                        .map_err(|error| error.message().to_owned());
                    lock(&calls).remove(&call);
                    let _ = done.send(ChildMessage::Done { call, outcome });
                });
            }
            HostMessage::Cancel { call } => {
                if let Some(cancel) = lock(&calls).get(&call) {
                    cancel.cancel();
                }
            }
            HostMessage::Apply {
                request,
                action,
                reason,
            } => resolve(&actions, &outgoing, request, action, reason, true),
            HostMessage::Reject {
                request,
                action,
                reason,
            } => resolve(&actions, &outgoing, request, action, reason, false),
            HostMessage::DropAction { action } => {
                if let Some(action) = lock(&actions).remove(&action) {
                    tokio::task::spawn_blocking(move || drop(action));
                }
            }
            HostMessage::Shutdown => break,
        }
    }
    for cancel in lock(&calls).values() {
        cancel.cancel();
    }
    // Let cancelled calls drop their futures (plugin cleanup) for a moment.
    tokio::time::sleep(Duration::from_millis(50)).await;
    0
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Load the plugin and run its factory, with pushes and log lines going to the host.
fn load(
    arguments: &Arguments,
    plugin: File,
    outgoing: &Outgoing,
    actions: &Arc<Mutex<HashMap<u64, PendingAction>>>,
) -> Result<HashMap<String, Arc<PluginTool>>, crate::load::LoadErrorKind> {
    let library = load_inherited(&arguments.path, plugin).map_err(|error| error.kind)?;
    let sink: Option<PushSink> = arguments.store.then(|| {
        let outgoing = outgoing.clone();
        let actions = Arc::clone(actions);
        let next = AtomicU64::new(1);
        Arc::new(move |action: PendingAction| {
            let id = next.fetch_add(1, Ordering::Relaxed);
            let message = ChildMessage::Push {
                action: id,
                label: action.label().to_owned(),
                source_tool_name: action.source_tool_name().to_owned(),
                details: action.details().cloned(),
                has_reject: action.has_reject(),
            };
            lock(&actions).insert(id, action);
            let _ = outgoing.send(message);
        }) as PushSink
    });
    let logs = outgoing.clone();
    let logger: LogSink = Arc::new(move |level, message| {
        let level = match level {
            FfiLogLevel::Debug => LogLevel::Debug,
            FfiLogLevel::Info => LogLevel::Info,
            FfiLogLevel::Warn => LogLevel::Warn,
            FfiLogLevel::Error => LogLevel::Error,
        };
        let _ = logs.send(ChildMessage::Log { level, message });
    });
    let api_version = library.api_version().to_owned();
    let tools = instantiate(library, &arguments.path, &arguments.cwd, sink, Some(logger))
        .map_err(|error| error.kind)?;
    let definitions = tools
        .iter()
        .map(|tool| {
            let spec = tool.spec();
            ToolDefinition {
                name: spec.name.clone(),
                label: spec.label.clone(),
                description: spec.description.clone(),
                parameters: spec.parameters.clone(),
                hidden: spec.hidden,
                deferrable: spec.deferrable,
            }
        })
        .collect();
    let _ = outgoing.send(ChildMessage::Hello {
        api_version,
        tools: definitions,
    });
    Ok(tools
        .into_iter()
        .map(|tool| (tool.spec().name.clone(), Arc::new(tool)))
        .collect())
}

/// Apply or reject `action` on a thread of its own, then answer `request`.
fn resolve(
    actions: &Mutex<HashMap<u64, PendingAction>>,
    outgoing: &Outgoing,
    request: u64,
    action: u64,
    reason: String,
    apply: bool,
) {
    let Some(action) = lock(actions).remove(&action) else {
        let _ = outgoing.send(ChildMessage::Resolved {
            request,
            resolution: Resolution::Failed {
                message: "the pending action is unknown to its plugin process".to_owned(),
            },
        });
        return;
    };
    let outgoing = outgoing.clone();
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let (apply_fn, reject_fn) = action.into_callbacks();
        let resolution = runtime.block_on(async move {
            if apply {
                match apply_fn(reason).await {
                    Ok(result) => Resolution::Applied { result },
                    Err(error) => Resolution::Failed {
                        message: error.message().to_owned(),
                    },
                }
            } else {
                let outcome = match reject_fn {
                    Some(reject) => reject(reason).await,
                    None => Ok(None),
                };
                match outcome {
                    Ok(result) => Resolution::Rejected { result },
                    Err(error) => Resolution::Failed {
                        message: error.message().to_owned(),
                    },
                }
            }
        });
        let _ = outgoing.send(ChildMessage::Resolved {
            request,
            resolution,
        });
    });
}
