//! Opening one checked plugin library: the header check, `dlopen` of exactly the object that
//! was checked, the ABI and version checks, and a process-wide cache.
//!
//! A [`CheckedFile`] is a plugin file whose path passed the ownership and permission checks
//! (see the `safety` module), opened once. [`load_checked_with`] checks its headers and hands that
//! same open file to the dynamic loader (see the `sys` module), so replacing the path after
//! the check has no effect, and a rewrite in place before the library is mapped is caught by
//! the file's change time and refused. Nothing is copied or hashed on this path: loading costs
//! what a plain `dlopen` costs.
//!
//! When trust needs the file's SHA-256 (a project-local plugin), [`CheckedFile::sha256`] reads
//! the content once and pins it; loading then maps exactly those bytes from a sealed `memfd`,
//! so what runs is what was hashed, whatever happens to the file.
//!
//! Before anything is mapped, the file's version marker must name an `xcsh-plugin-api` this
//! host supports (see `plugin-api/ABI.md`); abi_stable's layout check then runs on the root
//! module, where prefix types let an older plugin's vtables be shorter than the host's.
//!
//! Each file gets its own check through `init_root_module` on its own header: abi_stable's
//! `RootModule::load_from_*` caches a single module per root-module type, which would make
//! every plugin after the first silently resolve to the first one.
//!
//! Libraries are never unloaded (a tool's vtables and futures live in them). Loading the same
//! canonical path again returns the cached module while the path holds the same file object
//! (device, inode, size and change times); once it was replaced or rewritten, loading it in
//! this process is refused with [`LoadErrorKind::ChangedSinceLoaded`], since the earlier copy
//! is still in use and a second copy of the same plugin would run beside it. Plugin children
//! have no such rule: a new version gets a new process (`descriptor_for_child`).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use abi_stable::abi_stability::abi_checking::{
    check_layout_compatibility_with_globals, CheckingGlobals,
};
use abi_stable::library::{LibHeader, LibraryError};
use abi_stable::std_types::RBoxError;
use abi_stable::StableAbi;
use xcsh_plugin_api::ffi::{ApiVersion, PluginModuleRef};

use crate::loading::cache::{host_build, PrivateCache};
use crate::loading::headers::{build_id, read_api_marker, ApiMarker};
use crate::loading::platform::check_platform;
use crate::loading::preflight::check_library;
use crate::loading::safety::{open_plugin, FileStamp, Refusal};
use crate::loading::{LoadError, LoadErrorKind};
use crate::sys::{load, read_all, LoadFailure, LoadSource};

/// Content read and hashed for a trust decision: loading then maps exactly these bytes.
struct Pinned {
    bytes: Vec<u8>,
    sha256: String,
}

/// A plugin file that passed the checks made before loading, opened once. Loading it loads
/// that open file (or, once [`Self::sha256`] pinned its content, exactly those bytes),
/// whatever the path holds by then.
#[derive(Clone)]
pub struct CheckedFile {
    path: PathBuf,
    file: Arc<File>,
    stamp: FileStamp,
    pinned: Arc<OnceLock<Result<Pinned, LoadError>>>,
}

impl std::fmt::Debug for CheckedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedFile")
            .field("path", &self.path)
            .field("len", &self.stamp.len())
            .field(
                "sha256",
                &self
                    .pinned
                    .get()
                    .and_then(|p| p.as_ref().ok())
                    .map(|p| &p.sha256),
            )
            .finish()
    }
}

impl CheckedFile {
    /// Resolve `path` to its canonical form, check it and every directory above it (owner,
    /// mode, type, name), then open it. Nothing is read or loaded.
    pub fn read(path: &Path) -> Result<Self, LoadError> {
        let canonical = dunce::canonicalize(path).map_err(|error| {
            LoadError::new(
                path,
                LoadErrorKind::Unreadable {
                    cause: error.to_string(),
                },
            )
        })?;
        let (file, stamp) = open_plugin(&canonical).map_err(|refusal| {
            let kind = match refusal {
                Refusal::Unsafe(cause) => LoadErrorKind::Unsafe { cause },
                Refusal::Unreadable(cause) => LoadErrorKind::Unreadable { cause },
            };
            LoadError::new(canonical.clone(), kind)
        })?;
        Ok(Self {
            path: canonical,
            file: Arc::new(file),
            stamp,
            pinned: Arc::new(OnceLock::new()),
        })
    }

    /// The canonical path the file was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The identity of the object that was checked, as it was when it was checked.
    pub(crate) fn stamp(&self) -> FileStamp {
        self.stamp
    }

    /// The SHA-256 of the file's content, lowercase hex. The first call reads the content
    /// and pins it: from then on, loading this file loads exactly the bytes that were hashed.
    pub fn sha256(&self) -> Result<&str, LoadError> {
        let pinned = self.pinned.get_or_init(|| {
            let bytes = read_all(&self.file).map_err(|error| {
                LoadError::new(
                    &self.path,
                    LoadErrorKind::Unreadable {
                        cause: format!("cannot read: {error}"),
                    },
                )
            })?;
            let sha256 = sha256_hex(&bytes);
            Ok(Pinned { bytes, sha256 })
        });
        match pinned {
            Ok(pinned) => Ok(&pinned.sha256),
            Err(error) => Err(error.clone()),
        }
    }

    /// Whether the open file still is what was checked: same object, not written since.
    fn unchanged(&self) -> bool {
        self.file
            .metadata()
            .is_ok_and(|meta| self.stamp.same_content(&FileStamp::of(&meta)))
    }
}

/// The SHA-256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// A loaded, checked plugin library.
#[derive(Clone, Copy)]
pub struct PluginLibrary {
    module: PluginModuleRef,
    api_version: ApiVersion,
}

impl std::fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLibrary").finish_non_exhaustive()
    }
}

impl PluginLibrary {
    pub(crate) fn module(&self) -> PluginModuleRef {
        self.module
    }

    /// The `xcsh-plugin-api` version the library was built against (from its version
    /// marker).
    pub fn api_version(&self) -> ApiVersion {
        self.api_version
    }
}

/// What loading one path gave, and for which file object (see [`FileStamp`]).
struct Cached {
    stamp: FileStamp,
    outcome: Result<PluginLibrary, LoadError>,
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Cached>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The `xcsh-plugin-api` version this host was built with.
pub fn host_api_version() -> String {
    xcsh_plugin_api::API_VERSION.to_owned()
}

/// The oldest `xcsh-plugin-api` version this host loads.
pub fn oldest_supported_api_version() -> String {
    xcsh_plugin_api::OLDEST_SUPPORTED_API_VERSION.to_owned()
}

/// The version policy, applied to the marker read from the file (before `dlopen`): the
/// plugin's version when this host supports it, the refusal otherwise.
fn check_api_version(path: &Path, marker: ApiMarker) -> Result<ApiVersion, LoadError> {
    let refuse = |found: String| {
        LoadError::new(
            path,
            LoadErrorKind::IncompatibleVersion {
                found,
                oldest: oldest_supported_api_version(),
                host: host_api_version(),
            },
        )
    };
    let text = match marker {
        ApiMarker::Version(text) => text,
        ApiMarker::Unmarked => return Err(refuse("0.1 or older (no version marker)".to_owned())),
        ApiMarker::NoRootModule => return Err(LoadError::new(path, LoadErrorKind::NoRootModule)),
    };
    // Both of this host's versions are compile-time constants checked by xcsh-plugin-api's
    // tests; a plugin's marker is data and may be anything.
    let (Some(host), Some(oldest)) = (
        ApiVersion::parse(xcsh_plugin_api::API_VERSION),
        ApiVersion::parse(xcsh_plugin_api::OLDEST_SUPPORTED_API_VERSION),
    ) else {
        return Err(refuse(text));
    };
    match ApiVersion::parse(&text) {
        Some(version) if version.is_supported_by(oldest, host) => Ok(version),
        _ => Err(refuse(text)),
    }
}

/// The checks a library passes before any of its code may run: built for this platform,
/// headers that lie inside the file, and a version marker this host supports. Only the headers and the dynamic symbol
/// table are read.
fn check_before_running<'data, R: object::ReadRef<'data>>(
    path: &Path,
    data: R,
) -> Result<ApiVersion, LoadError> {
    // First what it was built for: another platform's library may not even parse as one of
    // this platform's (a PE file), and "not for this host" is the more useful answer.
    check_platform(data).map_err(|kind| LoadError::new(path, kind))?;
    check_library(data)
        .map_err(|cause| LoadError::new(path, LoadErrorKind::NotALibrary { cause }))?;
    check_api_version(path, read_api_marker(data))
}

impl CheckedFile {
    /// [`check_before_running`] on what loading this file would map (its pinned bytes, or the
    /// open file), and what to hand to the dynamic loader. An open file written since it was
    /// checked (the header check included) is refused.
    fn check_before_running(&self) -> Result<(LoadSource<'_>, ApiVersion), LoadError> {
        match self.pinned.get() {
            Some(Ok(pinned)) => {
                let version = check_before_running(&self.path, pinned.bytes.as_slice())?;
                Ok((LoadSource::Bytes(&pinned.bytes), version))
            }
            Some(Err(failed)) => Err(failed.clone()),
            None => {
                let version =
                    check_before_running(&self.path, &object::ReadCache::new(&*self.file))?;
                if !self.unchanged() {
                    return Err(LoadError::new(
                        &self.path,
                        LoadErrorKind::ChangedWhileLoading,
                    ));
                }
                Ok((LoadSource::Opened(&self.file), version))
            }
        }
    }
}

/// The kind of the layout-check cache's entries (see [`init_root_module`]).
const LAYOUT_CHECKED: &str = "layout-checked";

/// One plugin file's entry in the layout-check cache for this host build (see
/// [`layout_key`]), read once per load: the probe and the check both skip when it says the
/// check passed before.
struct LayoutEntry {
    cache: PrivateCache,
    key: String,
    checked_before: bool,
}

impl LayoutEntry {
    fn read((cache, key): (PrivateCache, String)) -> Self {
        let checked_before = cache.get::<bool>(LAYOUT_CHECKED, &key) == Some(true);
        Self {
            cache,
            key,
            checked_before,
        }
    }
}

/// What a successful layout check of one plugin build against this host's build depends on,
/// as a cache key: the host's build ([`host_build`]), the plugin file's identity (its
/// [`FileStamp::key`]), its build-id when it has one, and, when its content was pinned for
/// trust, its SHA-256; with the cache it is kept in. `None` when there is no cache (turned
/// off) or the host's build cannot be named: then nothing is read from the file for it.
fn layout_key(file: &CheckedFile, source: &LoadSource<'_>) -> Option<(PrivateCache, String)> {
    let cache = PrivateCache::for_user()?;
    let host = host_build()?;
    let build = match source {
        LoadSource::Bytes(bytes) => build_id(*bytes),
        LoadSource::Opened(opened) => build_id(&object::ReadCache::new(&**opened)),
    };
    let build = build.map_or_else(|| "none".to_owned(), |id| hex(&id));
    let pinned = match file.pinned.get() {
        Some(Ok(pinned)) => pinned.sha256.as_str(),
        _ => "-",
    };
    let key = format!(
        "host {host}\nplugin {} {}\nbuild-id {build}\nsha256 {pinned}",
        file.path.display(),
        file.stamp.key()
    );
    Some((cache, key))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Check the root module's layout and initialise it, letting the plugin be *older* than the
/// host.
///
/// abi_stable's `init_root_module` treats the host's layout as the interface and the library's
/// as the implementation, and its prefix-type rule lets the implementation's vtables and
/// modules have more fields than the interface's, never fewer: a newer library in an older
/// host. Our version policy is the other way round (a 0.3 host loads 0.2 plugins; newer
/// plugins were refused from their marker already), so the check runs with the plugin's layout
/// as the interface and the host's as the implementation that grew. Every type must still
/// match field for field where both have it; only trailing prefix-type fields may be missing
/// on the plugin's side, and the host reads those through accessors that answer `None` (see
/// `plugin-api/ABI.md`). abi_stable's own version check on the ABI crate (same major) still
/// runs.
///
/// The check walks every type reachable from the root module, calling into the plugin for
/// each: about two thirds of a cold load's time (BENCHMARKS.md). It runs with checking
/// globals of its own (not abi_stable's process-wide ones), so its outcome depends only on
/// the two builds, and its success is remembered in `cache` (see [`layout_key`]): a later load
/// of the same plugin file by the same host build skips it.
fn init_root_module(
    header: &'static LibHeader,
    cache: Option<&LayoutEntry>,
) -> Result<PluginModuleRef, LibraryError> {
    let Some(plugin_layout) = header.layout() else {
        return Err(LibraryError::AbiInstability(RBoxError::from_fmt(
            &"the root module was exported without its layout, so it cannot be checked",
        )));
    };
    if cache.is_some_and(|entry| entry.checked_before) {
        tracing::debug!("layout check skipped: this plugin build passed it before (cached)");
    } else {
        let globals = CheckingGlobals::new();
        // The check walks tables the plugin file carries; a damaged file can make it index out
        // of bounds. A panic here is the file's fault, reported as such.
        let checked = std::panic::catch_unwind(|| {
            check_layout_compatibility_with_globals(
                plugin_layout,
                <PluginModuleRef as StableAbi>::LAYOUT,
                &globals,
            )
        })
        .map_err(|panic| {
            let message = xcsh_plugin_api::panic_text(&*panic);
            LibraryError::AbiInstability(RBoxError::from_fmt(&format_args!(
                "the layout data the file carries is damaged: checking it failed ({message})"
            )))
        })?;
        checked.map_err(|errors| LibraryError::AbiInstability(RBoxError::from_fmt(&errors)))?;
        tracing::debug!("layout checked");
        if let Some(entry) = cache {
            entry.cache.put(LAYOUT_CHECKED, &entry.key, &true);
        }
    }
    // SAFETY: `init_root_module_with_unchecked_layout` requires `PluginModuleRef` to have the
    // layout of the library's root module. Either the check above just proved it, or a check
    // of the same two builds did before: the cache entry exists only after a check passed,
    // its key names this host's build (the file its code was mapped from, so the same
    // `PluginModuleRef::LAYOUT`) and this plugin file object (device, inode, size, change
    // time, which no write leaves unchanged and its owner cannot set back; plus its build-id
    // and, when pinned, the SHA-256 of exactly the bytes mapped), so the plugin's layout
    // statics are the same bytes; and the check ran with fresh checking globals, so its
    // outcome depended on nothing but those two layouts. The cache file itself is only
    // believed when it is the user's own and private (see `loading::cache`). The check proves
    // that every type reachable from the plugin's root module matches the host's field for
    // field, except trailing fields of prefix types (the root module and the vtables) that the
    // host has and the plugin lacks. Those are never read directly: prefix-type accessors
    // check the field against the instance's own field count (stored beside it by abi_stable)
    // and answer `None`, and sabi_trait calls run the method's default body instead.
    unsafe { header.init_root_module_with_unchecked_layout::<PluginModuleRef>() }
}

/// Initialise the root module of a plugin compiled into this binary (the built-in `ast_edit`):
/// abi_stable's version check runs, the layout walk does not (issue 53: it was about 2 % of a
/// one-file `ast_edit` run's samples, spent proving a binary's layout equal to itself).
pub(crate) fn init_compiled_in_root_module(
    header: &LibHeader,
) -> Result<PluginModuleRef, LibraryError> {
    // SAFETY: `init_root_module_with_unchecked_layout` requires `PluginModuleRef` to have the
    // layout of the header's root module. The header was made in this process by
    // `lib_header::<F>()` from a factory compiled into this same binary, against this same
    // `xcsh-plugin-api` crate: its root module *is* a `PluginModuleRef` built by this build's
    // code, so the two layouts are one type's, equal by construction. (A loaded library's
    // header, which another build made, goes through `init_root_module` above instead.)
    unsafe { header.init_root_module_with_unchecked_layout::<PluginModuleRef>() }
}

/// What loads a file where its crash hurts nobody before this process maps it for the first
/// time: the plugin-process layer's probe (a throwaway sandboxed `xcsh-plugin-host`), handed
/// in by whoever has processes at hand (the session, `xcsh_loader::library`). Loading itself
/// starts no process.
pub trait Probe {
    /// Load `path`, whose checked content `descriptor` holds, somewhere else first. `Err` is
    /// the load error the file gets (it is then never mapped here); `Ok` also when no probe
    /// could run (the probe says why, once).
    fn probe(&self, path: &Path, descriptor: &File) -> Result<(), LoadError>;
}

/// Load the checked file (never the path's current content) and check the ABI and version,
/// with `probe` (if any) loading it elsewhere first. Loading runs the library's constructors,
/// so only call this on files you trust.
pub fn load_checked_with(
    file: &CheckedFile,
    probe: Option<&dyn Probe>,
) -> Result<PluginLibrary, LoadError> {
    let path = file.path();
    let error = |kind| LoadError::new(path, kind);
    let mut cache = xcsh_plugin_api::__private::lock(cache());
    if let Some(cached) = cache.get(path) {
        if cached.stamp.same_content(&file.stamp) {
            return cached.outcome.clone();
        }
        if cached.outcome.is_ok() {
            return Err(error(LoadErrorKind::ChangedSinceLoaded));
        }
        // The earlier content never loaded usably: nothing of it is in use, so try this one.
    }
    let (source, api_version) = file.check_before_running()?;
    let layout_cache = layout_key(file, &source).map(LayoutEntry::read);
    if let Some(probe) = probe {
        probe_first(file, layout_cache.as_ref(), probe)?;
    }
    let outcome = match map_library(path, source, api_version, layout_cache.as_ref()) {
        Ok(library) => Ok(library),
        Err(MapFailure::Retry(error)) => return Err(error),
        Err(MapFailure::Final(error)) => Err(error),
    };
    // Written while it was being mapped: what was mapped may not be what was checked.
    let outcome = match outcome {
        Ok(_) if matches!(source, LoadSource::Opened(_)) && !file.unchanged() => {
            Err(error(LoadErrorKind::ChangedWhileLoading))
        }
        outcome => outcome,
    };
    // Mapped, usable or not: remember the outcome, so the same object is never mapped twice.
    cache.insert(
        path.to_owned(),
        Cached {
            stamp: file.stamp,
            outcome: outcome.clone(),
        },
    );
    outcome
}

/// Before the first `dlopen` of `file` in this process, have `probe` load it elsewhere,
/// unless its layout check passed before in this host build (the cache entry exists only for
/// a file that loaded: the same file object loads again here). `XCSH_LOADER_PROBE=0` turns it
/// off (for measurements, or where no process can be started).
fn probe_first(
    file: &CheckedFile,
    layout_cache: Option<&LayoutEntry>,
    probe: &dyn Probe,
) -> Result<(), LoadError> {
    let loaded_before = layout_cache.is_some_and(|entry| entry.checked_before);
    let turned_off = std::env::var_os("XCSH_LOADER_PROBE").is_some_and(|v| v == "0");
    if loaded_before || turned_off {
        return Ok(());
    }
    probe.probe(file.path(), &descriptor_for_child(file)?)
}

/// Why [`map_library`] failed: `Retry` when nothing was mapped (a later attempt may succeed),
/// `Final` when something was mapped and must not be mapped again.
enum MapFailure {
    Retry(LoadError),
    Final(LoadError),
}

/// Hand `source` to the dynamic loader and check the root module's ABI and version.
fn map_library(
    path: &Path,
    source: LoadSource<'_>,
    api_version: ApiVersion,
    layout_cache: Option<&LayoutEntry>,
) -> Result<PluginLibrary, MapFailure> {
    let error = |kind| LoadError::new(path, kind);
    match load(path, source) {
        Ok(mapped) => init_root_module(mapped.header, layout_cache)
            .map(|module| PluginLibrary {
                module,
                api_version,
            })
            .map_err(|error| MapFailure::Final(classify(path, None, error))),
        Err(LoadFailure::Copy(cause)) => Err(MapFailure::Retry(error(LoadErrorKind::Unreadable {
            cause: format!("cannot make the private copy to load: {cause}"),
        }))),
        // Nothing was mapped: a later attempt may succeed (a missing dependency installed).
        Err(LoadFailure::Library {
            loaded_at,
            error: failure @ LibraryError::OpenError { .. },
        }) => Err(MapFailure::Retry(classify(path, Some(&loaded_at), failure))),
        Err(LoadFailure::Library { loaded_at, error }) => {
            Err(MapFailure::Final(classify(path, Some(&loaded_at), error)))
        }
    }
}

/// In a plugin child (`xcsh-plugin-host`): load the checked content the parent handed over as
/// the inherited descriptor `file` (the checked file itself, or a sealed memfd of the pinned
/// bytes). `path` is the original file, for messages.
pub fn load_inherited(path: &Path, file: File) -> Result<PluginLibrary, LoadError> {
    let api_version = check_before_running(path, &object::ReadCache::new(&file))?;
    // No layout cache here: the sandboxed child cannot write the user's cache, and its
    // descriptor may be a memfd with an identity of its own.
    let layout_cache = None;
    map_library(path, LoadSource::Opened(&file), api_version, layout_cache).map_err(|failure| {
        match failure {
            MapFailure::Retry(error) | MapFailure::Final(error) => error,
        }
    })
}

/// For a plugin child: the descriptor holding exactly what was checked (and, for a pinned
/// file, hashed). Unlike in-process loading, a path whose content changed may be handed to a
/// new child: each version runs in a process of its own (this is how a session reloads a
/// rebuilt plugin), so two versions never share an address space.
pub(crate) fn descriptor_for_child(file: &CheckedFile) -> Result<File, LoadError> {
    let path = file.path();
    let error = |kind| LoadError::new(path, kind);
    // The header and version checks run here, in the host, so a plugin this host would refuse
    // never gets a process to run its constructors in.
    file.check_before_running()?;
    match file.pinned.get() {
        Some(Ok(pinned)) => crate::sys::sealed_copy(path, &pinned.bytes).map_err(|cause| {
            error(LoadErrorKind::Unreadable {
                cause: format!("cannot make the sealed copy to load: {cause}"),
            })
        }),
        Some(Err(failed)) => Err(failed.clone()),
        None => file.file.try_clone().map_err(|cause| {
            error(LoadErrorKind::Unreadable {
                cause: cause.to_string(),
            })
        }),
    }
}

/// After a child loaded `file`'s descriptor: whether what it mapped is what was checked (a
/// pinned file's sealed copy cannot change; an opened file must not have been written).
pub(crate) fn still_as_checked(file: &CheckedFile) -> bool {
    matches!(file.pinned.get(), Some(Ok(_))) || file.unchanged()
}

/// Map abi_stable's error to ours. Messages name the original file, never the
/// `/proc/self/fd/N` or private copy the dynamic loader was given.
fn classify(path: &Path, loaded_at: Option<&Path>, error: LibraryError) -> LoadError {
    let text = |message: String| match loaded_at {
        Some(loaded_at) => message.replace(
            &loaded_at.display().to_string(),
            &path.display().to_string(),
        ),
        None => message,
    };
    let kind = match error {
        LibraryError::OpenError { err, .. } => LoadErrorKind::NotALibrary {
            cause: text(err.to_string()),
        },
        LibraryError::GetSymbolError { .. } => LoadErrorKind::NoRootModule,
        // abi_stable's own check compares the ABI crate's versions (same major); the marker
        // passed, so only a hand-made library gets here.
        LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        } => LoadErrorKind::IncompatibleAbi {
            cause: format!(
                "built against xcsh-plugin-abi {actual_version}, this host uses {expected_version}"
            ),
        },
        LibraryError::RootModule { err, .. } => LoadErrorKind::Factory {
            message: text(err.to_string()),
        },
        other => LoadErrorKind::IncompatibleAbi {
            cause: first_lines(&text(other.to_string()), 12),
        },
    };
    LoadError::new(path, kind)
}

/// abi_stable's layout errors can run to hundreds of lines; keep the head.
fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        text.trim_end().to_owned()
    } else {
        format!(
            "{}\n... ({} more lines)",
            lines[..n].join("\n"),
            lines.len() - n
        )
    }
}
