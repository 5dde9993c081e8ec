//! A set of files to write as a unit: a package's contents, kept in memory, then written as a
//! directory, an npm tarball (`package/…` in a gzipped tar, npm's layout), a `.tar.gz` or a
//! zip (`.mcpb`). Every archive is deterministic: sorted entries, one fixed time, modes 0644
//! and 0755, no owner, so packing the same inputs twice gives the same bytes (and digest).

use std::io::Write;
use std::path::Path;

/// npm's own fixed modification time for tarball entries (1985-10-26 08:15 UTC).
const FIXED_MTIME: u64 = 499_162_500;

/// One file of a [`FileSet`].
#[derive(Debug, Clone)]
pub struct FileEntry {
    /// Its path inside the set, `/`-separated.
    pub path: String,
    pub bytes: Vec<u8>,
    /// Whether it is a program (mode 0755; 0644 otherwise).
    pub executable: bool,
}

/// Files to write together.
#[derive(Debug, Clone, Default)]
pub struct FileSet {
    pub files: Vec<FileEntry>,
}

impl FileSet {
    /// Add a file (replacing one at the same path).
    pub fn add(&mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>, executable: bool) {
        let path = path.into();
        self.files.retain(|file| file.path != path);
        self.files.push(FileEntry {
            path,
            bytes: bytes.into(),
            executable,
        });
    }

    fn sorted(&self) -> Vec<&FileEntry> {
        let mut files: Vec<&FileEntry> = self.files.iter().collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    }

    /// Write the files under `dir` (created; it must not exist).
    pub fn write_dir(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for file in self.sorted() {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, &file.bytes)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = if file.executable { 0o755 } else { 0o644 };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
            }
        }
        Ok(())
    }

    /// A gzipped tar of the files, each under `prefix/` (npm's `package`, or a folder name).
    pub fn tar_gz(&self, prefix: &str) -> std::io::Result<Vec<u8>> {
        let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(encoder);
        tar.mode(tar::HeaderMode::Deterministic);
        let mut dirs_written: Vec<String> = Vec::new();
        for file in self.sorted() {
            // Each directory above the file first (`a/`, then `a/b/`), as tar and npm write them.
            let ancestors = file.path.match_indices('/').map(|(at, _)| &file.path[..at]);
            for dir in ancestors {
                let dir = dir.to_owned();
                if !dirs_written.contains(&dir) {
                    let mut header = tar::Header::new_ustar();
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(0o755);
                    header.set_mtime(FIXED_MTIME);
                    header.set_size(0);
                    tar.append_data(&mut header, format!("{prefix}/{dir}/"), std::io::empty())?;
                    dirs_written.push(dir.clone());
                }
            }
            let mut header = tar::Header::new_ustar();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if file.executable { 0o755 } else { 0o644 });
            header.set_mtime(FIXED_MTIME);
            header.set_size(file.bytes.len() as u64);
            tar.append_data(
                &mut header,
                format!("{prefix}/{}", file.path),
                file.bytes.as_slice(),
            )?;
        }
        tar.into_inner()?.finish()
    }

    /// A zip of the files at its root (an `.mcpb` bundle).
    pub fn zip(&self) -> std::io::Result<Vec<u8>> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for file in self.sorted() {
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .unix_permissions(if file.executable { 0o755 } else { 0o644 })
                .last_modified_time(zip::DateTime::default());
            zip.start_file(file.path.as_str(), options)
                .map_err(std::io::Error::other)?;
            zip.write_all(&file.bytes)?;
        }
        Ok(zip.finish().map_err(std::io::Error::other)?.into_inner())
    }
}

/// Write `bytes` to `path` through a temporary file in its directory and a rename: a reader
/// sees the old file or the new one, never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temporary = tempfile::NamedTempFile::new_in(dir)?;
    temporary.write_all(bytes)?;
    // What pack and install write is for others to read (tempfile creates 0600).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> FileSet {
        let mut set = FileSet::default();
        set.add("package.json", b"{}".to_vec(), false);
        set.add("bin/run", b"#!/bin/sh\n".to_vec(), true);
        set
    }

    #[test]
    fn archives_are_deterministic_and_read_back() {
        let first = set().tar_gz("package").unwrap();
        assert_eq!(first, set().tar_gz("package").unwrap());
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(first.as_slice()));
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["package/bin/", "package/bin/run", "package/package.json"]
        );
        let zip = set().zip().unwrap();
        let mut read = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read.by_name("bin/run").unwrap().unix_mode(), Some(0o100755));
    }
}
