//! Checks on a plugin's path, before anything is read or loaded.
//!
//! A library's constructors run inside `dlopen`, so nothing after it is a check. Before a
//! candidate is read, it must be:
//!
//! - a regular file whose name ends with the platform's shared-library suffix;
//! - owned by the current user or root, and not writable by group or others;
//! - in directories that are all, up to `/`, owned by the current user or root and not
//!   writable by group or others. A sticky, root-owned directory (such as `/tmp`) may be on
//!   the path, where only a file's owner can rename or delete it, but never as the plugin's
//!   own directory.
//!
//! The file is then opened without following symbolic links and `fstat`ed: it must be the
//! object that was checked (same device and inode, still owned and moded as required), and
//! everything after (the header check, the hash for trust, the dynamic loader) works on
//! that descriptor, never on the path again (see [`crate::loading::open`]).
//!
//! Ownership and modes are Unix notions: elsewhere only the type and name are checked.
//!
//! Refusals say what is wrong and how to fix it, e.g.
//! `/x/tools is writable by others (chmod o-w /x/tools)`.

use std::path::Path;

/// Why a path was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The path breaks a rule; the message says which and how to fix it.
    Unsafe(String),
    /// The path could not be inspected or read.
    Unreadable(String),
}

/// Quote `path` for a POSIX shell when it needs it, for commands shown to the user.
pub(crate) fn shell_quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Check the plugin file at `path` (absolute and canonical) and every directory above it,
/// then read it once. Returns the bytes of exactly the object that was checked.
#[cfg(all(test, unix))]
pub(crate) fn read_plugin(path: &Path) -> Result<Vec<u8>, Refusal> {
    let (file, _) = open_plugin(path)?;
    crate::sys::read_all(&file).map_err(|e| Refusal::Unreadable(format!("cannot read: {e}")))
}

/// Which file object was opened, and when it last changed: enough to tell whether a
/// descriptor or a path still holds what was checked, without reading the content again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
    /// The change time (`ctime`): it moves on every write and cannot be set back by the
    /// file's owner, unlike the modification time.
    changed: (i64, i64),
    links: u64,
}

impl FileStamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (device, inode, changed, links) = {
            use std::os::unix::fs::MetadataExt;
            (
                meta.dev(),
                meta.ino(),
                (meta.ctime(), meta.ctime_nsec()),
                meta.nlink(),
            )
        };
        #[cfg(not(unix))]
        let (device, inode, changed, links) = (0, 0, (0, 0), 1);
        Self {
            device,
            inode,
            len: meta.len(),
            modified: meta.modified().ok(),
            changed,
            links,
        }
    }

    /// The stamp as a cache key: equal keys mean the same file object with the same size,
    /// times and links. A rewrite in place moves the change time (which the owner cannot set
    /// back), a replacement by rename is another inode.
    pub(crate) fn key(&self) -> String {
        let modified = self
            .modified
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        format!(
            "dev={} ino={} len={} mtime={modified} ctime={}.{:09} links={}",
            self.device, self.inode, self.len, self.changed.0, self.changed.1, self.links
        )
    }

    /// The file's size when it was stamped.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The stamp of whatever `path` names now (following symlinks); `None` when nothing
    /// does.
    pub(crate) fn of_path(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|meta| Self::of(&meta))
    }

    /// Whether `other` is a stamp of the same file object (device and inode), whatever its
    /// content: a file written in place rather than replaced.
    pub(crate) fn same_object(&self, other: &FileStamp) -> bool {
        (self.device, self.inode) == (other.device, other.inode)
    }

    /// When the file last changed: the later of its modification and change times.
    pub(crate) fn last_change(&self) -> Option<std::time::SystemTime> {
        let (seconds, nanos) = self.changed;
        let changed = u64::try_from(seconds).ok().map(|seconds| {
            std::time::UNIX_EPOCH
                + std::time::Duration::new(seconds, u32::try_from(nanos).unwrap_or(0))
        });
        changed.max(self.modified)
    }

    /// Whether `later` (a stamp of the same path or descriptor taken later) shows the same
    /// object with the same content. A new change time with the same link count means a
    /// write (or a mode change); a changed link count alone is the object being renamed over
    /// or linked elsewhere, which leaves its content as it was.
    pub(crate) fn same_content(&self, later: &FileStamp) -> bool {
        (self.device, self.inode, self.len, self.modified)
            == (later.device, later.inode, later.len, later.modified)
            && (self.changed == later.changed || self.links != later.links)
    }
}

/// Check the plugin file at `path` (absolute and canonical) and every directory above it,
/// then open it once. Returns the descriptor of exactly the object that was checked, and its
/// stamp; nothing is read.
pub(crate) fn open_plugin(path: &Path) -> Result<(std::fs::File, FileStamp), Refusal> {
    let suffix = std::env::consts::DLL_SUFFIX;
    // Names need not be UTF-8: only the suffix is compared. Another platform's suffix passes
    // too: such a library (a `.dylib` on Linux, in a plugin folder or given by mistake) is
    // then refused by its headers, with what it was built for, or pinned by `trust`.
    let named_right = path.file_name().is_some_and(|n| {
        let n = n.as_encoded_bytes();
        [suffix, ".so", ".dylib", ".dll"]
            .iter()
            .any(|suffix| n.len() > suffix.len() && n.ends_with(suffix.as_bytes()))
    });
    if !named_right {
        return Err(Refusal::Unsafe(format!(
            "{} is not named like a shared library (the name must end in {suffix})",
            shell_quote(path)
        )));
    }
    open_checked(path)
}

/// The same checks for a file the loader keeps its own state in (the trust file): the file
/// and every directory above it must be safe from other users. `Ok(None)` when it does not
/// exist.
pub(crate) fn read_private(path: &Path) -> Result<Option<Vec<u8>>, Refusal> {
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => {
            let (file, _) = open_checked(path)?;
            crate::sys::read_all(&file)
                .map(Some)
                .map_err(|e| Refusal::Unreadable(format!("cannot read: {e}")))
        }
    }
}

#[cfg(unix)]
fn open_checked(path: &Path) -> Result<(std::fs::File, FileStamp), Refusal> {
    use std::os::unix::fs::MetadataExt;

    let me = crate::sys::effective_uid();
    let checked = check_chain(path, me)?;
    // Never through a symbolic link put there since the check; never block on a FIFO.
    let file = crate::sys::open_no_follow(path)
        .map_err(|e| Refusal::Unreadable(format!("cannot open: {e}")))?;
    let opened = file
        .metadata()
        .map_err(|e| Refusal::Unreadable(format!("cannot inspect the opened file: {e}")))?;
    if (opened.dev(), opened.ino()) != (checked.dev(), checked.ino()) {
        return Err(Refusal::Unsafe(format!(
            "{} was replaced while it was being checked; try again",
            shell_quote(path)
        )));
    }
    check_one(path, &opened, me, Place::File)?;
    Ok((file, FileStamp::of(&opened)))
}

#[cfg(not(unix))]
fn open_checked(path: &Path) -> Result<(std::fs::File, FileStamp), Refusal> {
    // No ownership or mode bits to check on this platform: only the type.
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| Refusal::Unreadable(format!("cannot inspect: {e}")))?;
    if !meta.file_type().is_file() {
        return Err(Refusal::Unsafe(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let file =
        std::fs::File::open(path).map_err(|e| Refusal::Unreadable(format!("cannot open: {e}")))?;
    Ok((file, FileStamp::of(&meta)))
}

/// Where on the path an object is.
#[cfg(unix)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The file itself.
    File,
    /// The directory that holds the file.
    OwnDirectory,
    /// Any directory further up.
    Ancestor,
}

/// Check `path` (a regular file) and every directory above it; returns the file's metadata.
#[cfg(unix)]
fn check_chain(path: &Path, me: u32) -> Result<std::fs::Metadata, Refusal> {
    let inspect = |p: &Path| {
        std::fs::symlink_metadata(p)
            .map_err(|e| Refusal::Unreadable(format!("cannot inspect {}: {e}", p.display())))
    };
    if !path.is_absolute() {
        return Err(Refusal::Unreadable(format!(
            "{} is not an absolute path",
            path.display()
        )));
    }
    let file = inspect(path)?;
    if !file.file_type().is_file() {
        return Err(Refusal::Unsafe(format!(
            "{} is not a regular file",
            shell_quote(path)
        )));
    }
    check_one(path, &file, me, Place::File)?;
    let mut place = Place::OwnDirectory;
    for dir in path.ancestors().skip(1) {
        let meta = inspect(dir)?;
        if !meta.file_type().is_dir() {
            return Err(Refusal::Unsafe(format!(
                "{} is not a directory (give the plugin's real path, without symbolic links)",
                shell_quote(dir)
            )));
        }
        check_one(dir, &meta, me, place)?;
        place = Place::Ancestor;
    }
    Ok(file)
}

/// One object's owner and mode.
#[cfg(unix)]
fn check_one(path: &Path, meta: &std::fs::Metadata, me: u32, place: Place) -> Result<(), Refusal> {
    use std::os::unix::fs::MetadataExt;

    const STICKY: u32 = 0o1000;
    let shown = shell_quote(path);
    let uid = meta.uid();
    if uid != me && uid != 0 {
        return Err(Refusal::Unsafe(format!(
            "{shown} is owned by uid {uid}, not by you (uid {me}) or root \
             (chown {me} {shown}, or move the plugin somewhere you own)"
        )));
    }
    let mode = meta.mode();
    let writable = mode & 0o022;
    if writable == 0 {
        return Ok(());
    }
    let sticky_shared = mode & STICKY != 0 && uid == 0;
    match place {
        // Only a file's owner (or root) can rename or delete it there.
        Place::Ancestor if sticky_shared => Ok(()),
        Place::OwnDirectory if sticky_shared => Err(Refusal::Unsafe(format!(
            "{shown} is a shared directory writable by others, and a plugin's own directory \
             must not be (move the plugin into a directory only you can write to)"
        ))),
        _ => {
            let (who, bits) = match writable {
                0o002 => ("others", "o-w"),
                0o020 => ("its group", "g-w"),
                _ => ("its group and others", "go-w"),
            };
            Err(Refusal::Unsafe(format!(
                "{shown} is writable by {who} (chmod {bits} {shown})"
            )))
        }
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A private directory (0700 under the temp dir) holding `tools/libx.so`.
    fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let tools = root.join("tools");
        std::fs::create_dir(&tools).unwrap();
        chmod(&tools, 0o755);
        let file = tools.join(format!("libx{}", std::env::consts::DLL_SUFFIX));
        std::fs::write(&file, b"content").unwrap();
        chmod(&file, 0o644);
        (tmp, tools, file)
    }

    fn unsafe_message(result: Result<Vec<u8>, Refusal>) -> String {
        match result {
            Err(Refusal::Unsafe(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_private_file_is_read() {
        let (_tmp, _tools, file) = layout();
        assert_eq!(read_plugin(&file).unwrap(), b"content");
    }

    #[test]
    fn writable_files_and_directories_are_refused_with_the_fix() {
        let (_tmp, tools, file) = layout();
        chmod(&file, 0o646);
        let shown = file.display();
        assert_eq!(
            unsafe_message(read_plugin(&file)),
            format!("{shown} is writable by others (chmod o-w {shown})")
        );
        chmod(&file, 0o664);
        assert!(unsafe_message(read_plugin(&file)).ends_with(&format!("(chmod g-w {shown})")));
        chmod(&file, 0o666);
        assert!(unsafe_message(read_plugin(&file)).contains(&format!(
            "writable by its group and others (chmod go-w {shown})"
        )));
        chmod(&file, 0o644);
        chmod(&tools, 0o777);
        let dir = tools.display();
        assert_eq!(
            unsafe_message(read_plugin(&file)),
            format!("{dir} is writable by its group and others (chmod go-w {dir})")
        );
        chmod(&tools, 0o755);
        assert!(read_plugin(&file).is_ok());
    }

    #[test]
    fn a_sticky_root_directory_is_fine_above_but_not_as_the_plugins_own() {
        if crate::sys::effective_uid() != 0 {
            // Only root can make a root-owned directory here; /tmp itself covers the
            // "above" case for everyone else (the temp dir is under it).
            return;
        }
        let (_tmp, tools, file) = layout();
        chmod(&tools, 0o1777);
        let message = unsafe_message(read_plugin(&file));
        assert!(
            message.contains("a plugin's own directory must not be"),
            "{message}"
        );
        let inner = tools.join("private");
        std::fs::create_dir(&inner).unwrap();
        chmod(&inner, 0o700);
        let moved = inner.join(file.file_name().unwrap());
        std::fs::rename(&file, &moved).unwrap();
        assert_eq!(read_plugin(&moved).unwrap(), b"content");
        // Not sticky: refused as an ancestor too.
        chmod(&tools, 0o777);
        assert!(unsafe_message(read_plugin(&moved)).contains("(chmod go-w "));
    }

    #[test]
    fn wrong_names_types_and_owners_are_refused() {
        let (_tmp, tools, file) = layout();
        let text = tools.join("notes.txt");
        std::fs::write(&text, b"x").unwrap();
        assert!(unsafe_message(read_plugin(&text)).contains("is not named like a shared library"));
        let dir = tools.join(format!("libdir{}", std::env::consts::DLL_SUFFIX));
        std::fs::create_dir(&dir).unwrap();
        assert!(unsafe_message(read_plugin(&dir)).ends_with("is not a regular file"));
        let link = tools.join(format!("liblink{}", std::env::consts::DLL_SUFFIX));
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(unsafe_message(read_plugin(&link)).ends_with("is not a regular file"));
        if crate::sys::effective_uid() == 0 {
            std::os::unix::fs::chown(&file, Some(4242), None).unwrap();
            let message = unsafe_message(read_plugin(&file));
            assert!(message.contains("is owned by uid 4242, not by you (uid 0) or root"));
            assert!(message.contains(&format!("chown 0 {}", file.display())));
        }
    }

    #[test]
    fn a_missing_private_file_is_none() {
        let (_tmp, tools, _file) = layout();
        assert_eq!(read_private(&tools.join("trusted.json")).unwrap(), None);
    }

    #[test]
    fn paths_are_quoted_for_the_shell_when_needed() {
        assert_eq!(shell_quote(Path::new("/a/b-c_d.so")), "/a/b-c_d.so");
        assert_eq!(shell_quote(Path::new("/a b/it's.so")), r"'/a b/it'\''s.so'");
    }
}
