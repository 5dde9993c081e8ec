//! A sealed in-memory copy of a plugin: the bytes that were hashed, immutable from then on.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use rustix::fs::{MemfdFlags, SealFlags};

/// The seals that make the content immutable, including against adding or removing seals.
const SEALS: SealFlags = SealFlags::WRITE
    .union(SealFlags::GROW)
    .union(SealFlags::SHRINK)
    .union(SealFlags::SEAL);

/// An anonymous file holding `bytes`, sealed against any change.
pub(super) fn sealed(original: &Path, bytes: &[u8]) -> std::io::Result<File> {
    // The name only shows in /proc/PID/maps ("/memfd:xcsh-plugin:libx.so (deleted)"); the
    // kernel limits it to 249 bytes.
    let file_name = original
        .file_name()
        .map(|n| n.to_string_lossy().replace('\0', "?"))
        .unwrap_or_default();
    let mut name = format!("xcsh-plugin:{file_name}");
    while name.len() > 240 {
        name.pop();
    }
    let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    let fd =
        rustix::fs::memfd_create(name.as_str(), flags | MemfdFlags::EXEC).or_else(|error| {
            // Kernels before 6.3 do not know MFD_EXEC (and make memfds executable anyway).
            if error == rustix::io::Errno::INVAL {
                rustix::fs::memfd_create(name.as_str(), flags)
            } else {
                Err(error)
            }
        })?;
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    rustix::fs::fcntl_add_seals(&file, SEALS)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn the_copy_is_sealed_and_holds_exactly_the_bytes() {
        let bytes = b"exactly these bytes".to_vec();
        let mut file = sealed(Path::new("/x/libsealed.so"), &bytes).unwrap();
        let seals = rustix::fs::fcntl_get_seals(&file).unwrap();
        assert!(seals.contains(SEALS));
        assert!(file.write_all(b"more").is_err(), "writes must fail");
        assert!(file.set_len(3).is_err(), "shrinking must fail");
        assert!(file.set_len(100).is_err(), "growing must fail");
        let mut through_proc = Vec::new();
        File::open(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .unwrap()
            .read_to_end(&mut through_proc)
            .unwrap();
        assert_eq!(through_proc, bytes);
        file.seek(SeekFrom::Start(0)).unwrap();
        let mut again = Vec::new();
        file.read_to_end(&mut again).unwrap();
        assert_eq!(again, bytes);
    }
}
