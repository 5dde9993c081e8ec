//! Which project-local plugins the user has trusted.
//!
//! Plugins found under `<cwd>/.xcsh/tools/` come with whatever repository the user cloned, so
//! they load only when the user has trusted that exact file: its canonical path and the
//! SHA-256 of its content are recorded in `~/.xcsh/agent/trusted-plugins.json`
//! (`xcsh-plugins trust PATH...`). A trusted file whose content changed is untrusted again.
//! Files given explicitly (`--plugin`) and the user's own `~/.xcsh/agent/tools/` need no
//! entry.
//!
//! The trust file is written atomically (a temporary file in the same directory, then a
//! rename) with mode `0600`, and is only believed when it and the directories above it pass
//! the same ownership and permission checks as a plugin (see `safety`).
//!
//! ```json
//! {"version": 1, "trusted": [{"path": "/work/app/.xcsh/tools/libfmt.so", "sha256": "9f2c..."}]}
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::loading::error::trust_command;
pub use crate::loading::open::sha256_hex;
use crate::loading::open::CheckedFile;
use crate::loading::safety::{read_private, Refusal};
use crate::loading::{LoadError, LoadErrorKind};

/// The trust file's name, in `~/.xcsh/agent/`.
pub const TRUST_FILE_NAME: &str = "trusted-plugins.json";

/// The trust file for `home`: `home/.xcsh/agent/trusted-plugins.json`.
pub fn trust_file(home: &Path) -> PathBuf {
    home.join(".xcsh").join("agent").join(TRUST_FILE_NAME)
}

/// What the trust file says about one file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted with exactly this content.
    Trusted,
    /// Never trusted (or untrusted since).
    Untrusted,
    /// Trusted, but the content changed since.
    Changed,
}

#[derive(Serialize, Deserialize)]
struct FileFormat {
    version: u32,
    trusted: Vec<Entry>,
    /// Publisher keys pinned by package name (`xcsh-plugins install`, or a packed tool's first
    /// load in xcsh's runtime). Absent in files written before them; ignored by older readers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    publishers: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    path: PathBuf,
    sha256: String,
}

/// The user's trust file, in memory.
#[derive(Debug, Clone)]
pub struct TrustStore {
    file: PathBuf,
    entries: BTreeMap<PathBuf, String>,
    publishers: BTreeMap<String, String>,
}

impl TrustStore {
    /// Read the trust file at `file`; a missing file is an empty store. An unsafe or
    /// malformed file is an error (nothing in it is believed).
    pub fn open(file: impl Into<PathBuf>) -> Result<Self, LoadError> {
        let file = file.into();
        let bytes = match read_private(&file) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Ok(Self {
                    file,
                    entries: BTreeMap::new(),
                    publishers: BTreeMap::new(),
                })
            }
            Err(Refusal::Unsafe(cause)) => {
                return Err(LoadError::new(file, LoadErrorKind::Unsafe { cause }))
            }
            Err(Refusal::Unreadable(cause)) => {
                return Err(LoadError::new(file, LoadErrorKind::Unreadable { cause }))
            }
        };
        let parsed: FileFormat = serde_json::from_slice(&bytes).map_err(|error| {
            LoadError::new(
                file.clone(),
                LoadErrorKind::Unreadable {
                    cause: format!("not a valid trust file: {error}"),
                },
            )
        })?;
        if parsed.version != 1 {
            return Err(LoadError::new(
                file,
                LoadErrorKind::Unreadable {
                    cause: format!("unknown trust file version {}", parsed.version),
                },
            ));
        }
        let entries = parsed
            .trusted
            .into_iter()
            .map(|entry| (entry.path, entry.sha256.to_ascii_lowercase()))
            .collect();
        Ok(Self {
            file,
            entries,
            publishers: parsed.publishers,
        })
    }

    /// The store for `home` (see [`trust_file`]).
    pub fn for_home(home: &Path) -> Result<Self, LoadError> {
        Self::open(trust_file(home))
    }

    /// Where the store is kept.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Whether `path` (canonical) is trusted with content hashing to `sha256`.
    pub fn status(&self, path: &Path, sha256: &str) -> TrustStatus {
        match self.entries.get(path) {
            Some(trusted) if trusted == sha256 => TrustStatus::Trusted,
            Some(_) => TrustStatus::Changed,
            None => TrustStatus::Untrusted,
        }
    }

    /// Whether a checked file is trusted as it is now. Reads and hashes the file, which pins
    /// its content: loading it afterwards loads exactly what was hashed.
    pub fn status_of(&self, file: &CheckedFile) -> Result<TrustStatus, LoadError> {
        Ok(self.status(file.path(), file.sha256()?))
    }

    /// Trust `path` (canonical) with content hashing to `sha256` (replacing any old entry).
    pub fn trust(&mut self, path: PathBuf, sha256: String) {
        self.entries.insert(path, sha256.to_ascii_lowercase());
    }

    /// Trust a checked file as it is now (reads and hashes it).
    pub fn trust_file(&mut self, file: &CheckedFile) -> Result<(), LoadError> {
        self.trust(file.path().to_owned(), file.sha256()?.to_owned());
        Ok(())
    }

    /// Forget `path`; whether it was there.
    pub fn untrust(&mut self, path: &Path) -> bool {
        self.entries.remove(path).is_some()
    }

    /// The publisher key pinned for the packed tool `name` (its npm name), if any.
    pub fn publisher_key(&self, name: &str) -> Option<&str> {
        self.publishers.get(name).map(String::as_str)
    }

    /// Pin `key` (a minisign public key, base64) as `name`'s publisher, replacing any other.
    pub fn pin_publisher(&mut self, name: &str, key: &str) {
        self.publishers.insert(name.to_owned(), key.to_owned());
    }

    /// Forget `name`'s publisher key; whether there was one.
    pub fn forget_publisher(&mut self, name: &str) -> bool {
        self.publishers.remove(name).is_some()
    }

    /// Every entry: canonical path and SHA-256.
    pub fn entries(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.entries.iter().map(|(p, h)| (p.as_path(), h.as_str()))
    }

    /// Write the store: a temporary file with mode `0600` next to the trust file, then an
    /// atomic rename over it. Creates `~/.xcsh/agent/` (mode `0700`) when missing.
    pub fn save(&self) -> std::io::Result<()> {
        let document = FileFormat {
            version: 1,
            trusted: self
                .entries
                .iter()
                .map(|(path, sha256)| Entry {
                    path: path.clone(),
                    sha256: sha256.clone(),
                })
                .collect(),
            publishers: self.publishers.clone(),
        };
        let mut text = serde_json::to_string_pretty(&document).map_err(std::io::Error::other)?;
        text.push('\n');
        crate::loading::cache::write_private(&self.file, text.as_bytes())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;

    #[test]
    fn sha256_of_a_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn trust_round_trips_through_a_private_file() {
        let home = tempfile::tempdir().unwrap();
        let mut store = TrustStore::for_home(home.path()).unwrap();
        assert_eq!(store.entries().count(), 0);
        let plugin = PathBuf::from("/p/.xcsh/tools/liba.so");
        store.trust(plugin.clone(), "AB".repeat(32));
        store.save().unwrap();
        let file = trust_file(home.path());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir = std::fs::metadata(file.parent().unwrap()).unwrap();
            assert_eq!(dir.permissions().mode() & 0o777, 0o700);
        }
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [TRUST_FILE_NAME]);

        let mut again = TrustStore::for_home(home.path()).unwrap();
        assert_eq!(
            again.status(&plugin, &"ab".repeat(32)),
            TrustStatus::Trusted
        );
        assert_eq!(
            again.status(&plugin, &"cd".repeat(32)),
            TrustStatus::Changed
        );
        assert_eq!(
            again.status(Path::new("/other.so"), &"ab".repeat(32)),
            TrustStatus::Untrusted
        );
        assert!(again.untrust(&plugin));
        assert!(!again.untrust(&plugin));
        again.save().unwrap();
        assert_eq!(
            TrustStore::for_home(home.path()).unwrap().entries().count(),
            0
        );
    }

    #[test]
    #[cfg(unix)]
    fn an_unsafe_or_malformed_trust_file_is_not_believed() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let mut store = TrustStore::for_home(home.path()).unwrap();
        store.trust(PathBuf::from("/a.so"), "00".repeat(32));
        store.save().unwrap();
        let file = trust_file(home.path());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o622)).unwrap();
        let error = TrustStore::for_home(home.path()).unwrap_err();
        assert!(
            matches!(error.kind, LoadErrorKind::Unsafe { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("chmod go-w"), "{error}");
        std::fs::write(&file, b"{not json").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let error = TrustStore::for_home(home.path()).unwrap_err();
        assert!(
            error.to_string().contains("not a valid trust file"),
            "{error}"
        );
    }

    #[test]
    fn the_trust_command_quotes_the_path() {
        assert_eq!(
            trust_command(Path::new("/p q/.xcsh/tools/liba.so")),
            "xcsh-plugins trust '/p q/.xcsh/tools/liba.so'"
        );
    }
}
