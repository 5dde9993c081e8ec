//! Starting one plugin library in a process of its own for a session, when the session is
//! built and again when a changed plugin file is reloaded: check and trust the file, start
//! the child on its checked content, then accept its handshake (the sandbox it got, the API
//! version it loaded, its tools).

use std::path::PathBuf;

use crate::isolate::plugin::{ChildrenGone, Handshake, IsolatedTool, SessionLinks, Starting};
use crate::isolate::Isolation;
use crate::load::discovery::Candidate;
use crate::load::open::descriptor_for_child;
use crate::load::{LoadError, LoadErrorKind};
use crate::sandbox::Enforcement;
use crate::sys::sandbox::SandboxPolicy;

use super::builder::Loader;
use super::LoadedPlugin;

/// What every plugin process of one session is started with.
pub(super) struct ProcessSettings {
    /// The `xcsh-plugin-host` executable, or why there is none.
    pub(super) host: Result<PathBuf, String>,
    /// Its writable directories include the working directory and `temp_dir`.
    pub(super) sandbox: SandboxPolicy,
    /// The session's private temporary directory, each child's `TMPDIR`.
    pub(super) temp_dir: Option<PathBuf>,
    /// Refuse a child whose sandbox is not in force instead of warning.
    pub(super) require_sandbox: bool,
    pub(super) cwd: PathBuf,
    /// Where the session's pushes and plugin log lines go.
    pub(super) links: SessionLinks,
}

/// A plugin whose child started and passed the handshake.
pub(super) struct Accepted {
    pub(super) plugin: LoadedPlugin,
    pub(super) tools: Vec<IsolatedTool>,
    /// What ends when its processes have exited; `None` when it offers no tool.
    pub(super) children: Option<ChildrenGone>,
}

impl ProcessSettings {
    /// Check the candidate (and its trust) and start its child, without waiting for it.
    pub(super) fn start(
        &self,
        loader: &mut Loader,
        candidate: &Candidate,
        errors: &mut Vec<LoadError>,
    ) -> Result<Starting, LoadError> {
        let file = loader.check(candidate, errors)?;
        let descriptor = descriptor_for_child(&file)?;
        let host = self
            .host
            .clone()
            .map_err(|cause| LoadError::new(file.path(), LoadErrorKind::PluginProcess { cause }))?;
        crate::isolate::plugin::start(
            host,
            &file,
            descriptor,
            &self.cwd,
            self.links.clone(),
            self.sandbox.clone(),
            self.temp_dir.clone(),
        )
    }

    /// Wait for a started child's handshake and accept it: its sandbox must be in force
    /// (or only warned about), and the API version it reports must parse.
    pub(super) fn accept(&self, starting: Starting) -> Result<Accepted, LoadError> {
        let path = starting.path().to_owned();
        let Handshake {
            api_version,
            tools,
            confinement,
        } = starting.finish()?;
        let confined = confinement
            .as_ref()
            .is_some_and(|c| matches!(c.filesystem, Enforcement::Full | Enforcement::Partial));
        if !confined {
            if self.require_sandbox {
                // Dropping its tools stops the process.
                return Err(LoadError::new(
                    &path,
                    LoadErrorKind::SandboxRequired { in_process: false },
                ));
            }
            tracing::warn!("{}", crate::messages::sandbox_unavailable_warning(&path));
        }
        // The parent checked the marker before the child started; the child reports what it
        // loaded.
        let Some(api_version) = xcsh_plugin_api::ffi::ApiVersion::parse(&api_version) else {
            return Err(LoadError::new(
                &path,
                LoadErrorKind::IncompatibleAbi {
                    cause: format!("its plugin process reported API version {api_version:?}"),
                },
            ));
        };
        Ok(Accepted {
            children: tools.first().map(IsolatedTool::children_gone),
            plugin: LoadedPlugin {
                path,
                api_version,
                isolation: Isolation::Process,
                sandbox: confinement,
            },
            tools,
        })
    }

    /// Check, start and accept one plugin, blocking until its handshake (or failure).
    pub(super) fn start_and_accept(
        &self,
        loader: &mut Loader,
        candidate: &Candidate,
    ) -> Result<Accepted, LoadError> {
        // A problem with the trust file itself is the error of this load.
        let mut errors = Vec::new();
        let started = self.start(loader, candidate, &mut errors);
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
        self.accept(started?)
    }
}
