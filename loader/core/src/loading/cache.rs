//! The user's private cache: what the loader learned about a plugin file that is costly to
//! learn again (a build's layout check, a plugin's tool definitions), kept between processes.
//!
//! Nothing read from it is believed on its own. Each entry is named after the SHA-256 of its
//! key, and the key holds everything the cached answer depends on: the plugin file's identity
//! ([`FileStamp::key`]: device, inode, size, modification and change times in nanoseconds, link
//! count), the host's build, and whatever else the caller's answer depends on. The entry
//! repeats its key, so a collision or a stale file is a miss. The cache lives under
//! `$XCSH_CACHE_DIR`, else `$XDG_CACHE_HOME/xcsh-plugins`, else `~/.cache/xcsh-plugins`
//! (`XCSH_NO_CACHE=1` turns it off: everything is learned again, nothing is written); its
//! files are `0600` in a `0700` directory, and are only read after the same owner and mode
//! checks as the trust file (the file and every directory above it safe from other users): a
//! foreign-owned, group-writable or corrupt entry is ignored, and replaced by the next write.
//! Writes are atomic (a temporary file, then a rename), so a reader never sees half an entry;
//! a process's first write of a kind removes that kind's entries not written for 30 days.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::safety::{read_private, Refusal};

/// Entries not written for this long are removed (an entry a process only reads is not
/// written: it is learned again, once, by the next process after that).
const PRUNE_AFTER: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// The cache's directory name under the user's cache directory.
const DIR_NAME: &str = "xcsh-plugins";

/// One user's cache directory.
#[derive(Debug, Clone)]
pub(crate) struct PrivateCache {
    dir: PathBuf,
}

/// What an entry file holds: its key, then the answer.
#[derive(Serialize, Deserialize)]
struct Entry<T> {
    key: String,
    value: T,
}

impl PrivateCache {
    /// The cache of the user running this process (see the module docs), if any directory
    /// can be named for it.
    pub(crate) fn for_user() -> Option<Self> {
        if std::env::var_os("XCSH_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0") {
            return None;
        }
        let dir = std::env::var_os("XCSH_CACHE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                let base = std::env::var_os("XDG_CACHE_HOME")
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
                    .filter(|d| d.is_absolute())
                    .or_else(|| std::env::home_dir().map(|home| home.join(".cache")))?;
                Some(base.join(DIR_NAME))
            })?;
        Some(Self { dir })
    }

    /// A cache kept in `dir`.
    #[cfg(all(test, unix))]
    pub(crate) fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Where entries of `kind` with `key` are kept.
    fn path(&self, kind: &str, key: &str) -> PathBuf {
        let digest = super::open::sha256_hex(key.as_bytes());
        self.dir.join(format!("{kind}-{}", &digest[..32]))
    }

    /// The answer cached for `key`, when there is a believable one.
    pub(crate) fn get<T: DeserializeOwned>(&self, kind: &str, key: &str) -> Option<T> {
        let path = self.path(kind, key);
        let bytes = match read_private(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(Refusal::Unsafe(cause) | Refusal::Unreadable(cause)) => {
                tracing::debug!(path = %path.display(), %cause, "ignoring a cache entry");
                return None;
            }
        };
        match serde_json::from_slice::<Entry<T>>(&bytes) {
            Ok(entry) if entry.key == key => Some(entry.value),
            Ok(_) => None,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "ignoring a corrupt cache entry");
                None
            }
        }
    }

    /// Remember `value` for `key` (best effort: a cache that cannot be written is logged and
    /// otherwise ignored, as the answer can always be learned again). A process's first write
    /// of each kind also removes that kind's entries not written for [`PRUNE_AFTER`].
    pub(crate) fn put<T: Serialize>(&self, kind: &str, key: &str, value: &T) {
        static PRUNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let first_of_kind = {
            let mut pruned = xcsh_plugin_api::__private::lock(&PRUNED);
            let first = !pruned.iter().any(|k| k == kind);
            if first {
                pruned.push(kind.to_owned());
            }
            first
        };
        if first_of_kind {
            self.prune(kind, PRUNE_AFTER);
        }
        let entry = Entry {
            key: key.to_owned(),
            value,
        };
        let path = self.path(kind, key);
        let written = serde_json::to_vec(&entry)
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_private(&path, &bytes));
        if let Err(error) = written {
            tracing::debug!(path = %path.display(), %error, "cannot write a cache entry");
        }
    }
}

impl PrivateCache {
    /// Remove the entries of `kind` last written more than `age` ago (best effort): entries
    /// for plugin files long rebuilt or removed would otherwise pile up. An entry still in
    /// use is written again by the next miss.
    pub(crate) fn prune(&self, kind: &str, age: std::time::Duration) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let prefix = format!("{kind}-");
        for entry in entries.flatten() {
            let name = entry.file_name();
            let is_entry = name.to_str().is_some_and(|name| {
                name.strip_prefix(&prefix).is_some_and(|digest| {
                    digest.len() == 32 && digest.bytes().all(|b| b.is_ascii_hexdigit())
                })
            });
            let old = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|written| written.elapsed().ok())
                .is_some_and(|elapsed| elapsed > age);
            if is_entry && old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The build of the host this code is part of, as a cache key: the loader's version and the
/// identity of the file its code was mapped from (the executable, or the Node addon; found in
/// `/proc/self/maps` by the address of this function, elsewhere the executable). Any rebuild
/// of the host is a new file, so nothing cached by another build is ever a hit. `None` when
/// the file cannot be named (or was replaced since it was mapped): then nothing is cached.
pub(crate) fn host_build() -> Option<&'static str> {
    static BUILD: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    BUILD
        .get_or_init(|| {
            let file = code_file()?;
            let stamp = super::safety::FileStamp::of_path(&file)?;
            Some(format!(
                "xcsh-loader {} {} {}",
                env!("CARGO_PKG_VERSION"),
                file.display(),
                stamp.key()
            ))
        })
        .as_deref()
}

/// The file the code of this crate was mapped from.
#[cfg(target_os = "linux")]
fn code_file() -> Option<PathBuf> {
    let address = host_build as *const () as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        // start-end perms offset dev inode path
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        if !(start..end).contains(&address) {
            return None;
        }
        let path = fields.nth(4)?.trim_start();
        // A file replaced since it was mapped is not the code running here.
        (path.starts_with('/') && !path.ends_with(" (deleted)")).then(|| PathBuf::from(path))
    })
}

#[cfg(not(target_os = "linux"))]
fn code_file() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

/// Write `bytes` to `path` atomically, private to the user: a temporary file with mode `0600`
/// in the same directory (created with mode `0700` when missing), synced, then renamed over
/// `path`. Nothing half-written is ever seen under `path`.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);

    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a private file needs a directory"))?;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = path.with_file_name(name);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written?;
    // Make the rename itself durable (best effort: not every platform can sync a directory).
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn an_entry_round_trips_and_only_for_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PrivateCache::in_dir(dir.path().join("cache"));
        assert_eq!(cache.get::<u32>("t", "k"), None);
        cache.put("t", "k", &7u32);
        assert_eq!(cache.get::<u32>("t", "k"), Some(7));
        assert_eq!(cache.get::<u32>("t", "other"), None);
        let mode = std::fs::metadata(dir.path().join("cache"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let entry = std::fs::read_dir(dir.path().join("cache"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(
            entry.metadata().unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn prune_removes_only_old_entries_of_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PrivateCache::in_dir(dir.path().join("cache"));
        cache.put("t", "old", &1u32);
        cache.put("t", "new", &2u32);
        cache.put("other", "old", &3u32);
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for path in [cache.path("t", "old"), cache.path("other", "old")] {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        cache.prune("t", std::time::Duration::from_secs(60));
        assert_eq!(cache.get::<u32>("t", "old"), None);
        assert_eq!(cache.get::<u32>("t", "new"), Some(2));
        assert_eq!(cache.get::<u32>("other", "old"), Some(3));
    }

    #[test]
    fn the_host_build_names_the_file_of_this_code() {
        let build = host_build().unwrap();
        let exe = std::env::current_exe().unwrap();
        assert!(build.contains(exe.to_str().unwrap()), "{build}");
    }

    #[test]
    fn a_corrupt_or_group_writable_entry_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PrivateCache::in_dir(dir.path().join("cache"));
        cache.put("t", "k", &1u32);
        let path = cache.path("t", "k");
        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(cache.get::<u32>("t", "k"), None);
        cache.put("t", "k", &2u32);
        assert_eq!(cache.get::<u32>("t", "k"), Some(2));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert_eq!(
            cache.get::<u32>("t", "k"),
            None,
            "a group-writable entry is not believed"
        );
    }
}
