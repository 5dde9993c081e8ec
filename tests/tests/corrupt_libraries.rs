//! No library file can take a host down (issue 45): a few hundred changed copies of the sample
//! plugin's real `.so` (random bytes in its ELF header, program headers and section headers,
//! truncated copies, a zeroed page, a section table pointing past the end), each given to
//! `check` and `list` in process, where a crash inside `dlopen` or a panic in a layout check
//! would end the host. Each must end in a report naming the file (exit 0 or 1), never a
//! signal or a panic (exit 101).
//!
//! The copies are generated from a seed, printed; `XCSH_CORRUPT_SEED` replays one run and
//! `XCSH_CORRUPT_COUNT` changes how many header mutations are made (default 300).

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xcsh_integration_tests::{artifacts, plugin};

/// xorshift64*: enough randomness for mutations, replayable from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn u16_at(bytes: &[u8], at: usize) -> u64 {
    u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// Where the ELF64 header, program header table and section header table lie.
fn header_ranges(elf: &[u8]) -> Vec<(usize, usize)> {
    let phoff = u64_at(elf, 0x20) as usize;
    let shoff = u64_at(elf, 0x28) as usize;
    let (phentsize, phnum) = (u16_at(elf, 0x36) as usize, u16_at(elf, 0x38) as usize);
    let (shentsize, shnum) = (u16_at(elf, 0x3a) as usize, u16_at(elf, 0x3c) as usize);
    vec![
        (0, 64),
        (phoff, phentsize * phnum),
        (shoff, shentsize * shnum),
    ]
}

/// The corrupt copies of `original`: (what was done, bytes).
fn corrupt_copies(original: &[u8], seed: u64, count: usize) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(seed | 1);
    let ranges = header_ranges(original);
    let mut copies = Vec::new();
    for _ in 0..count {
        let mut bytes = original.to_vec();
        let changes = 1 + rng.below(8) as usize;
        let mut what = Vec::new();
        for _ in 0..changes {
            let (start, len) = ranges[rng.below(ranges.len() as u64) as usize];
            let at = start + rng.below(len as u64) as usize;
            if at < bytes.len() {
                let value = rng.next() as u8;
                what.push(format!("{at:#x}={value:#04x}"));
                bytes[at] = value;
            }
        }
        copies.push((format!("bytes {}", what.join(",")), bytes));
    }
    for _ in 0..20 {
        let cut = 64 + rng.below(original.len() as u64 - 64) as usize;
        copies.push((format!("truncated at {cut}"), original[..cut].to_vec()));
    }
    for _ in 0..20 {
        let pages = original.len() / 4096;
        let page = 1 + rng.below(pages as u64 - 1) as usize;
        let mut bytes = original.to_vec();
        bytes[page * 4096..(page + 1) * 4096].fill(0);
        copies.push((format!("page {page} zeroed"), bytes));
    }
    for i in 0..10 {
        let mut bytes = original.to_vec();
        let past = original.len() as u64 + 1 + rng.below(1 << 20) * (i + 1);
        bytes[0x28..0x30].copy_from_slice(&past.to_le_bytes());
        copies.push((format!("section table at {past}"), bytes));
    }
    copies
}

/// Write each copy into a fresh `0755` directory (the loader refuses group/other-writable
/// places), named so that a message can be traced to its copy.
fn write_copies(copies: &[(String, Vec<u8>)]) -> (tempfile::TempDir, Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let paths = copies
        .iter()
        .enumerate()
        .map(|(i, (_, bytes))| {
            let path = dir.path().join(format!("libcorrupt_{i:04}.so"));
            std::fs::write(&path, bytes).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            path
        })
        .collect();
    (dir, paths)
}

/// Run the CLI on one file (`before`, the file, `after`): `None` when it ended in a report,
/// or how it failed.
fn host_survives(before: &[&str], file: &Path, after: &[&str], cwd: &Path) -> Option<String> {
    let output = Command::new(artifacts().cli())
        .args(["--isolation", "in-process"])
        .args(before)
        .arg(file)
        .args(after)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("XCSH_CACHE_DIR", cwd.join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    match output.status.code() {
        Some(0) => None,
        Some(1) if text.contains(&file.display().to_string()) => None,
        Some(1) => Some(format!("exit 1 without naming the file: {text}")),
        Some(code) => Some(format!("exit {code}: {text}")),
        None => Some(format!("killed by a signal ({:?}): {text}", output.status)),
    }
}

#[test]
fn no_corrupt_copy_of_a_plugin_kills_or_panics_a_host() {
    let original = std::fs::read(plugin("batch-rename")).unwrap();
    let seed: u64 = std::env::var("XCSH_CORRUPT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let count: usize = std::env::var("XCSH_CORRUPT_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    eprintln!("corrupt copies from seed {seed} (XCSH_CORRUPT_SEED={seed} replays them)");
    let copies = corrupt_copies(&original, seed, count);
    let (dir, paths) = write_copies(&copies);
    let cwd = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for ((what, _), path) in copies.iter().zip(&paths) {
        for (before, after) in [
            (&["check"][..], &[][..]),
            (&["--no-default-dirs", "--plugin"][..], &["list"][..]),
        ] {
            if let Some(failure) = host_survives(before, path, after, cwd.path()) {
                failures.push(format!("{} ({what}), {after:?}: {failure}", path.display()));
            }
        }
    }
    eprintln!("{} copies, {} host failures", copies.len(), failures.len());
    // Kept for a look when it fails.
    if !failures.is_empty() {
        let kept = dir.keep();
        panic!(
            "seed {seed}: {} of {} runs took the host down (copies kept in {}):\n{}",
            failures.len(),
            copies.len() * 2,
            kept.display(),
            failures.join("\n")
        );
    }
}
