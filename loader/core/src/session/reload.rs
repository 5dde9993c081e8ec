//! Picking up plugin files that change while a session runs.
//!
//! Under process isolation a plugin file that changed (rebuilt, replaced, rewritten) is
//! checked again from the start (ownership and mode, headers, version, and trust for a
//! project plugin, read from the trust file anew) and started in a new process; the session's
//! tools then come from that process. The old process is not stopped while anything it
//! pushed is pending: those actions still apply and reject in the process that pushed them,
//! and it exits once the last one is settled. Calls already running finish where they
//! started.
//!
//! The check is a `stat` of the plugin's file before each call of one of its tools, and of
//! every plugin file in [`Session::reload`] (the MCP server runs it every second, then tells
//! its client when the tools changed). A file that changed less than [`SETTLE`] ago is given
//! that long to be finished (a linker writes it in several steps). When the new content cannot
//! be used (it does not load, it is no longer trusted), the plugin's tools answer with that
//! error instead of running stale code, until the file changes again or, for trust, until the
//! next call finds the new content trusted.
//!
//! In-process a library cannot be replaced (its code may still be running), so a change is
//! only reported ([`ReloadOutcome::InProcess`]); the version loaded first keeps serving.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::isolate::Isolation;
use crate::loading::discovery::Candidate;
use crate::loading::safety::FileStamp;
use crate::loading::LoadError;
use crate::tool::ToolOrigin;

use super::registry::Registered;
use super::Session;
use xcsh_plugin_api::__private::lock;

/// How long a changed plugin file must have stayed unchanged before it is loaded.
pub const SETTLE: Duration = Duration::from_millis(300);

/// The longest a reload waits for a file that keeps changing; it is then loaded as it is.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// What [`Session::reload`] did about one plugin file that changed.
#[derive(Debug)]
pub struct PluginReload {
    /// The plugin's canonical path.
    pub path: PathBuf,
    /// What came of it.
    pub outcome: ReloadOutcome,
    /// The file was written in place (the same file object) rather than replaced. A process
    /// still running the old version maps that file, so it now runs bytes it was not built
    /// with and may crash or misbehave: rebuild plugins by renaming a new file over the old
    /// one (cargo, `install` and `mv` do; `cp` onto the file does not).
    pub rewritten_in_place: bool,
}

impl PluginReload {
    /// Say what happened in the log (`tracing`).
    fn log(&self) {
        let path = self.path.display();
        if self.rewritten_in_place {
            tracing::warn!(
                "plugin {path} was overwritten in place: a process still running its old \
                 version may crash; replace plugin files by renaming a new file over them"
            );
        }
        match &self.outcome {
            ReloadOutcome::Reloaded {
                api_version,
                tools_changed,
                errors,
            } => {
                tracing::info!(%api_version, tools_changed, "reloaded plugin {path}");
                for error in errors {
                    tracing::warn!("{error}");
                }
            }
            ReloadOutcome::Failed(error) => {
                tracing::warn!("plugin {path} changed and cannot be reloaded: {error}");
            }
            ReloadOutcome::InProcess => tracing::warn!(
                "plugin {path} changed on disk; it runs in this process, where a library cannot \
                 be replaced, so the version loaded first serves until the host restarts (under \
                 process isolation it would be reloaded)"
            ),
        }
    }
}

/// How reloading one changed plugin file ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReloadOutcome {
    /// A new process runs the new content.
    Reloaded {
        /// The `xcsh-plugin-api` version the new content was built against.
        api_version: xcsh_plugin_api::ffi::ApiVersion,
        /// Whether the tools it offers differ from before (names, descriptions, schemas,
        /// hints): a client's tool list is out of date.
        tools_changed: bool,
        /// Its tools that were not registered (a name another plugin has, a bad schema).
        errors: Vec<LoadError>,
    },
    /// The new content cannot be used; the plugin's tools answer with this error until the
    /// file changes again.
    Failed(LoadError),
    /// The plugin runs in this process, where a loaded library cannot be replaced: the
    /// version loaded first keeps serving until the host restarts.
    InProcess,
}

/// One plugin file a session watches.
pub(super) struct Watched {
    candidate: Candidate,
    isolation: Isolation,
    /// The file as it was when it was last loaded or tried; held while a reload runs, so one
    /// change is reloaded once.
    seen: tokio::sync::Mutex<Option<FileStamp>>,
    /// Why its tools cannot run: the error of the last reload, until one succeeds.
    failure: Mutex<Option<String>>,
}

/// The plugin files of a session, and what starting a new process for one needs.
#[derive(Default)]
pub(super) struct Watch {
    plugins: Vec<Watched>,
    by_path: HashMap<PathBuf, usize>,
    /// Whether any watched plugin runs in a process of its own (only those are reloaded
    /// before a call): when none does, a call skips the lookup by path.
    any_isolated: bool,
    pub(super) processes: Option<Arc<super::isolated::ProcessSettings>>,
}

impl Watch {
    /// Watch `candidate`, stamped as `seen` right before it was first loaded.
    pub(super) fn add(
        &mut self,
        candidate: &Candidate,
        isolation: Isolation,
        seen: Option<FileStamp>,
    ) {
        self.by_path
            .insert(candidate.path.clone(), self.plugins.len());
        self.any_isolated |= isolation == Isolation::Process;
        self.plugins.push(Watched {
            candidate: candidate.clone(),
            isolation,
            seen: tokio::sync::Mutex::new(seen),
            failure: Mutex::new(None),
        });
    }
}

fn differs(seen: Option<&FileStamp>, now: Option<&FileStamp>) -> bool {
    match (seen, now) {
        (Some(seen), Some(now)) => !seen.same_content(now),
        (None, None) => false,
        _ => true,
    }
}

/// The stamp `path` settled at, or `None` when it is as `seen`: a file that changed within
/// [`SETTLE`] (or is missing, as between a linker's unlink and its write) is waited for.
async fn changed_since(
    path: &std::path::Path,
    seen: Option<&FileStamp>,
) -> Option<Option<FileStamp>> {
    let mut waited = Duration::ZERO;
    loop {
        let now = FileStamp::of_path(path);
        if !differs(seen, now.as_ref()) {
            return None;
        }
        let pause = match now.as_ref() {
            // Missing: waited for once.
            None => SETTLE,
            Some(stamp) => match stamp.last_change().map(|at| at.elapsed()) {
                Some(Ok(age)) if age < SETTLE => SETTLE - age,
                // Settled, or stamped in the future (a clock or an archive): nothing to wait
                // for.
                _ => return Some(now),
            },
        };
        if waited >= SETTLE_LIMIT || (now.is_none() && waited >= SETTLE) {
            return Some(now);
        }
        tokio::time::sleep(pause).await;
        waited += pause;
    }
}

impl Session {
    /// Check every plugin file for a change and reload the changed ones (see the module's
    /// documentation). Returns what happened to each changed file; empty when nothing
    /// changed. [`Session::tools_generation`] moves on when the tools changed.
    pub async fn reload(&self) -> Vec<PluginReload> {
        let mut reports = Vec::new();
        for watched in &self.watch.plugins {
            if let Some(report) = self.refresh(watched, false).await {
                reports.push(report);
            }
        }
        reports
    }

    /// The tool a call of `name` runs: first, if its plugin's file changed, the plugin is
    /// reloaded (and when no tool has that name, every changed isolated plugin is: a new
    /// version may have it). `Err` is the call's answer when the plugin's new content cannot
    /// be used; `Ok(None)` when no tool has the name.
    pub(super) async fn tool_for_call(
        &self,
        name: &str,
    ) -> Result<Option<Arc<Registered>>, String> {
        let Some(registered) = self.registry().get(name).cloned() else {
            let mut reloaded = false;
            for watched in &self.watch.plugins {
                if watched.isolation == Isolation::Process {
                    reloaded |= self.refresh(watched, false).await.is_some();
                }
            }
            return Ok(reloaded
                .then(|| self.registry().get(name).cloned())
                .flatten());
        };
        // In-process a change is only reported, by `reload`: with no isolated plugin in the
        // session there is nothing to look up (the lookup by path was a tenth of an
        // in-process call's host-side time).
        if !self.watch.any_isolated {
            return Ok(Some(registered));
        }
        let watched = match &registered.tool.spec().origin {
            ToolOrigin::Plugin(path) => self
                .watch
                .by_path
                .get(path)
                .map(|&i| &self.watch.plugins[i]),
            ToolOrigin::Builtin => None,
        };
        // In-process a change is only reported, by `reload`.
        let Some(watched) = watched.filter(|w| w.isolation == Isolation::Process) else {
            return Ok(Some(registered));
        };
        self.refresh(watched, true).await;
        if let Some(failure) = lock(&watched.failure).clone() {
            return Err(failure);
        }
        // Looked up again even when this call reloaded nothing: a reload running beside it
        // (the MCP server's every second) may have swapped the plugin's tools while `refresh`
        // waited for it, and `registered` would be the old process's.
        Ok(self.registry().get(name).cloned())
    }

    /// Reload `watched` if its file changed, or (`retry_failed`) if its last reload failed.
    async fn refresh(&self, watched: &Watched, retry_failed: bool) -> Option<PluginReload> {
        let path = &watched.candidate.path;
        let mut seen = watched.seen.lock().await;
        let now = match changed_since(path, seen.as_ref()).await {
            Some(now) => now,
            None if retry_failed && lock(&watched.failure).is_some() => *seen,
            None => return None,
        };
        // (A retry of a failed reload with the file as it was is no rewrite.)
        let rewritten_in_place = match (seen.as_ref(), now.as_ref()) {
            (Some(before), Some(now)) => before.same_object(now) && !before.same_content(now),
            _ => false,
        };
        *seen = now;
        let outcome = match watched.isolation {
            Isolation::InProcess => ReloadOutcome::InProcess,
            Isolation::Process => self.restart(watched).await,
        };
        let report = PluginReload {
            path: path.clone(),
            outcome,
            rewritten_in_place,
        };
        report.log();
        Some(report)
    }

    /// Start the plugin's new content in a new process and swap its tools in.
    async fn restart(&self, watched: &Watched) -> ReloadOutcome {
        let started = self.start_again(&watched.candidate).await;
        let accepted = match started {
            Ok(accepted) => accepted,
            Err(error) => {
                *lock(&watched.failure) = Some(crate::messages::reload_failed(&error));
                return ReloadOutcome::Failed(error);
            }
        };
        *lock(&watched.failure) = None;
        let super::isolated::Accepted {
            plugin,
            tools,
            children,
            deferred: _,
        } = accepted;
        // The content registered from the cache (if any) is replaced: never settled.
        lock(&self.deferred).remove(&plugin.path);
        let api_version = plugin.api_version;
        let tools: Vec<Arc<dyn crate::tool::Tool>> = tools
            .into_iter()
            .map(|tool| Arc::new(tool) as Arc<dyn crate::tool::Tool>)
            .collect();
        let (errors, tools_changed) = self.replace_plugin(plugin, tools, children);
        ReloadOutcome::Reloaded {
            api_version,
            tools_changed,
            errors,
        }
    }

    /// Check and start `candidate` again, on the isolation runtime (checking reads and
    /// hashes the file, and the handshake is waited for there).
    async fn start_again(
        &self,
        candidate: &Candidate,
    ) -> Result<super::isolated::Accepted, LoadError> {
        let fail = |cause: String| {
            LoadError::new(
                &candidate.path,
                crate::loading::LoadErrorKind::PluginProcess { cause },
            )
        };
        let Some(settings) = self.watch.processes.clone() else {
            return Err(fail("this session starts no plugin processes".to_owned()));
        };
        let home = settings.home.clone();
        let job = candidate.clone();
        crate::isolate::plugin::run_blocking(move || {
            let mut loader = super::builder::Loader::new(home, None, false);
            settings.start_and_accept(&mut loader, &job)
        })
        .await
        .map_err(fail)?
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

    use super::*;

    fn stamped_file() -> (tempfile::TempDir, PathBuf, Option<FileStamp>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libplugin.so");
        std::fs::write(&path, b"first").unwrap();
        let seen = FileStamp::of_path(&path);
        (dir, path, seen)
    }

    #[tokio::test]
    async fn an_unchanged_file_is_not_reported() {
        let (_dir, path, seen) = stamped_file();
        assert!(changed_since(&path, seen.as_ref()).await.is_none());
    }

    #[tokio::test]
    async fn a_fresh_change_is_reported_once_it_settled() {
        let (_dir, path, seen) = stamped_file();
        std::fs::write(&path, b"second, longer").unwrap();
        let now = changed_since(&path, seen.as_ref()).await.unwrap().unwrap();
        let age = now.last_change().unwrap().elapsed().unwrap();
        assert!(age >= SETTLE, "returned {age:?} after the change");
        assert_eq!(now.len(), 14);
    }

    #[tokio::test]
    async fn a_file_stamped_in_the_future_is_not_waited_for() {
        let (_dir, path, seen) = stamped_file();
        std::fs::write(&path, b"second").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(std::time::SystemTime::now() + Duration::from_secs(3600))
            .unwrap();
        let start = std::time::Instant::now();
        assert!(changed_since(&path, seen.as_ref()).await.is_some());
        assert!(
            start.elapsed() < SETTLE_LIMIT,
            "waited {:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn a_removed_file_is_reported_as_gone() {
        let (_dir, path, seen) = stamped_file();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(changed_since(&path, seen.as_ref()).await, Some(None));
    }
}
