//! The tools a session offers at one moment, by name, each with its compiled argument schema.
//!
//! A [`Registry`] is immutable once built: the session swaps in a new one when a plugin is
//! reloaded ([`Registry::with_plugin_replaced`]), so a call that already looked its tool up
//! keeps running on the version it found while later calls see the new one.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use xcsh_plugin_api::checks::{check_tool_name, compile_schema};

use crate::loading::{LoadError, LoadErrorKind};
use crate::resolve::RESOLVE_TOOL_NAME;
use crate::tool::{Tool, ToolOrigin, ToolSpec};

/// One tool, ready to call.
pub(super) struct Registered {
    pub(super) tool: Arc<dyn Tool>,
    /// Its compiled argument schema. A plugin's is compiled when the tool is registered, so a
    /// schema that does not compile refuses the tool at load time. A built-in's is compiled on
    /// its first call: its schema is fixed at build time (its tests compile it), and a session
    /// that never calls it should not pay for it (issue 53: a quarter of a small call's own
    /// work was `ast_edit`'s schema).
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl Registered {
    /// The tool's compiled argument schema, compiling it on first use.
    pub(super) fn validator(&self) -> Result<&jsonschema::Validator, String> {
        self.validator
            .get_or_init(|| compile_schema(&self.tool.spec().parameters))
            .as_ref()
            .map_err(|cause| invalid_schema(self.tool.spec(), cause.clone()).to_string())
    }
}

/// The session's tools, in registration order (built-ins, then plugins in discovery order).
#[derive(Clone, Default)]
pub(super) struct Registry {
    tools: Vec<Arc<Registered>>,
    by_name: HashMap<String, usize>,
    /// Moves on whenever the set of tools or any tool's description changes.
    pub(super) generation: u64,
}

/// Where a tool comes from, as load errors name it.
fn origin_path(spec: &ToolSpec) -> PathBuf {
    match &spec.origin {
        ToolOrigin::Plugin(path) => path.clone(),
        ToolOrigin::Builtin => PathBuf::from("<builtin>"),
    }
}

/// The error refusing `spec`'s tool because its argument schema does not compile.
fn invalid_schema(spec: &ToolSpec, cause: String) -> LoadError {
    LoadError::new(
        origin_path(spec),
        LoadErrorKind::InvalidSchema {
            tool: spec.name.clone(),
            cause,
        },
    )
}

impl Registry {
    /// The tool called `name`.
    pub(super) fn get(&self, name: &str) -> Option<&Arc<Registered>> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// Every tool, in registration order.
    pub(super) fn tools(&self) -> impl Iterator<Item = Arc<dyn Tool>> + '_ {
        self.tools.iter().map(|r| Arc::clone(&r.tool))
    }

    /// Every tool's description, in registration order.
    pub(super) fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(|r| r.tool.spec())
    }

    /// Check `tool` (its name, a clash with a registered tool, its schema) and prepare it.
    fn prepare(&self, tool: Arc<dyn Tool>) -> Result<Registered, LoadError> {
        let spec = tool.spec();
        let path = origin_path(spec);
        check_tool_name(&spec.name).map_err(|cause| {
            LoadError::new(
                path.clone(),
                LoadErrorKind::InvalidTool {
                    tool: spec.name.clone(),
                    cause,
                },
            )
        })?;
        if spec.name == RESOLVE_TOOL_NAME || self.by_name.contains_key(&spec.name) {
            return Err(LoadError::new(
                path,
                LoadErrorKind::NameConflict {
                    name: spec.name.clone(),
                    existing: self.get(&spec.name).map(|r| origin_path(r.tool.spec())),
                },
            ));
        }
        let validator = OnceLock::new();
        if spec.origin != ToolOrigin::Builtin {
            let compiled =
                compile_schema(&spec.parameters).map_err(|cause| invalid_schema(spec, cause))?;
            let _ = validator.set(Ok(compiled));
        }
        Ok(Registered { tool, validator })
    }

    fn push(&mut self, registered: Arc<Registered>) {
        self.by_name
            .insert(registered.tool.spec().name.clone(), self.tools.len());
        self.tools.push(registered);
    }

    /// Add `tool` after the others, unless its name is invalid or taken or its schema does not
    /// compile.
    pub(super) fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), LoadError> {
        let registered = self.prepare(tool)?;
        self.push(Arc::new(registered));
        self.generation += 1;
        Ok(())
    }
}

// Only a reload replaces a plugin's tools, and only plugins under process isolation (Linux)
// are reloaded.
impl Registry {
    /// This registry with the tools of the plugin at `path` replaced by `tools`, in the place
    /// the old ones had (at the end when it had none). A new tool whose name another plugin
    /// already uses is left out, with its error: tools that were there first keep their
    /// names. Also says whether the tools the plugin offers changed.
    pub(super) fn with_plugin_replaced(
        &self,
        path: &std::path::Path,
        tools: Vec<Arc<dyn Tool>>,
    ) -> (Registry, Vec<LoadError>, bool) {
        fn is_from(registered: &Registered, path: &std::path::Path) -> bool {
            matches!(&registered.tool.spec().origin, ToolOrigin::Plugin(p) if p == path)
        }
        let place = self
            .tools
            .iter()
            .position(|r| is_from(r, path))
            .unwrap_or(self.tools.len());
        let mut others = Registry::default();
        for registered in self.tools.iter().filter(|r| !is_from(r, path)) {
            others.push(Arc::clone(registered));
        }
        let mut errors = Vec::new();
        let mut added: Vec<Arc<Registered>> = Vec::new();
        // Each new tool is checked against the others and the plugin's own earlier tools.
        for tool in tools {
            match others.prepare(tool) {
                Ok(registered) => {
                    let registered = Arc::new(registered);
                    others.push(Arc::clone(&registered));
                    added.push(registered);
                }
                Err(error) => errors.push(error),
            }
        }
        let old: Vec<&ToolSpec> = self
            .tools
            .iter()
            .filter(|r| is_from(r, path))
            .map(|r| r.tool.spec())
            .collect();
        let new: Vec<&ToolSpec> = added.iter().map(|r| r.tool.spec()).collect();
        let changed = old != new;
        let before = self.tools[..place].iter().filter(|r| !is_from(r, path));
        let after = self.tools[place..].iter().filter(|r| !is_from(r, path));
        let mut replaced = Registry {
            generation: self.generation + u64::from(changed),
            ..Registry::default()
        };
        for registered in before.chain(added.iter()).chain(after) {
            replaced.push(Arc::clone(registered));
        }
        (replaced, errors, changed)
    }
}
