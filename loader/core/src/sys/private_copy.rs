//! The fallback where `/proc/self/fd` is missing: a private copy in a fresh `0700` directory,
//! removed once the library is mapped (the mapping keeps the pages).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::dl::open_and_leak;
use super::{LoadFailure, Mapped};

/// A fresh directory only this user can enter; `mkdir` fails rather than reuse a name.
fn private_dir() -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let mut last_error = None;
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!(
            "xcsh-plugin-{}-{n}-{nanos:08x}",
            std::process::id()
        ));
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                last_error = Some(error);
            }
            Err(error) => return Err(error),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no free directory name")))
}

pub(super) fn load(original: &Path, bytes: &[u8]) -> Result<Mapped, LoadFailure> {
    let dir = private_dir().map_err(LoadFailure::Copy)?;
    let name = original
        .file_name()
        .map_or_else(|| "plugin".into(), |n| n.to_owned());
    let copy = dir.join(name);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o500);
        let mut file = options.open(&copy)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    let result = match written {
        Ok(()) => open_and_leak(&copy)
            .map(|header| Mapped { header })
            .map_err(|error| LoadFailure::Library {
                loaded_at: copy.clone(),
                error,
            }),
        Err(error) => Err(LoadFailure::Copy(error)),
    };
    let _ = std::fs::remove_file(&copy);
    let _ = std::fs::remove_dir(&dir);
    result
}
