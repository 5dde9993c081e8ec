//! What a plugin's child process may do: writes confined to chosen directories (Landlock),
//! optionally no TCP, and resource limits (rlimits). Applied by the child to itself, after it
//! started and before the plugin is loaded, so nothing of the plugin runs unconfined.
//!
//! Landlock restricts the calling thread and everything it starts later, so
//! [`confine_filesystem`] must run before the child starts any other thread. The best ABI the
//! kernel offers is used; what a kernel cannot enforce is reported in [`Confinement`], never
//! silently assumed. Resource limits apply to the whole process.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What to allow a plugin process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// Directories (and their contents) the process may write, create and remove in. Reads
    /// stay allowed everywhere.
    pub writable: Vec<PathBuf>,
    /// Deny opening TCP connections and listening on TCP ports.
    pub deny_network: bool,
    /// Address-space limit in bytes (`RLIMIT_AS`); `None` leaves it as inherited.
    pub memory_limit: Option<u64>,
    /// Limit on open descriptors (`RLIMIT_NOFILE`); `None` leaves it as inherited.
    pub max_open_files: Option<u64>,
    /// Limit on the user's processes and threads (`RLIMIT_NPROC`, counted per user by the
    /// kernel, and not enforced for root); `None` leaves it as inherited.
    pub max_processes: Option<u64>,
}

/// The address-space limit (`RLIMIT_AS`) of a plugin process unless the session says
/// otherwise: 4 GiB, room for a plugin's runtime threads (each reserves stack and malloc
/// arenas) and a large library, while an allocation bomb still ends within seconds.
pub const DEFAULT_MEMORY_LIMIT: u64 = 4 << 30;

/// The open-descriptor limit (`RLIMIT_NOFILE`) of a plugin process unless the session says
/// otherwise (never above the limit the host itself has).
pub const DEFAULT_MAX_OPEN_FILES: u64 = 1024;

/// Parse a size as the command line spells it: bytes, or a number with `K`, `M`, `G` or `T`
/// (powers of 1024; an optional trailing `B` or `iB`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let upper = trimmed.to_ascii_uppercase();
    let upper = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (digits, shift) = match upper.chars().last() {
        Some('K') => (&upper[..upper.len() - 1], 10),
        Some('M') => (&upper[..upper.len() - 1], 20),
        Some('G') => (&upper[..upper.len() - 1], 30),
        Some('T') => (&upper[..upper.len() - 1], 40),
        _ => (upper, 0),
    };
    let number: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size (use e.g. 512M or 2G)"))?;
    number
        .checked_mul(1u64 << shift)
        .filter(|bytes| *bytes > 0)
        .ok_or_else(|| format!("{text:?} is not a usable size"))
}

/// A size for messages: `512M`, `4G`, or bytes when it is not a whole number of KiB.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

/// How far a part of the sandbox is enforced by the running kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    /// Everything asked for is enforced.
    Full,
    /// Some of it (an older Landlock ABI).
    Partial,
    /// Nothing: the kernel has no usable Landlock.
    None,
    /// Not asked for.
    NotRequested,
}

/// What the child could enforce, reported to the host in its handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Writes outside the writable directories.
    pub filesystem: Enforcement,
    /// TCP bind and connect.
    pub network: Enforcement,
    /// The Landlock ABI version in use, `0` when the kernel has none.
    pub landlock_abi: u32,
}

/// Why the sandbox could not be set up (as opposed to merely not enforced).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Landlock refused the ruleset.
    #[error("cannot set up the Landlock sandbox: {0}")]
    Landlock(String),
    /// A resource limit could not be set.
    #[error("cannot set the {what} limit: {error}")]
    Limit {
        /// Which limit.
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
}

/// Restrict this thread, and all it starts from now on, to the policy's writes (and TCP).
#[cfg(target_os = "linux")]
pub fn confine_filesystem(policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, Scope, ABI,
    };

    // The newest ABI this crate knows; on an older kernel the crate enforces what it can
    // (best effort) and says so in the status.
    let abi = ABI::V6;
    let error = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(error)?;
    if policy.deny_network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(error)?;
    }
    // Signals to processes outside the sandbox (such as the host) are refused too.
    let ruleset = ruleset.scope(Scope::Signal).map_err(error)?;
    let status = ruleset
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(error)?
        .add_rules(path_beneath_rules(
            ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"],
            AccessFs::from_read(abi) | AccessFs::WriteFile,
        ))
        .map_err(error)?
        .add_rules(path_beneath_rules(
            &policy.writable,
            AccessFs::from_all(abi),
        ))
        .map_err(error)?
        .restrict_self()
        .map_err(error)?;
    let landlock_abi = match status.landlock {
        landlock::LandlockStatus::Available { effective_abi, .. } => effective_abi as u32,
        _ => 0,
    };
    let filesystem = match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    let network = if !policy.deny_network {
        Enforcement::NotRequested
    } else if landlock_abi >= 4 {
        Enforcement::Full
    } else {
        Enforcement::None
    };
    Ok(Confinement {
        filesystem,
        network,
        landlock_abi,
    })
}

/// Without Landlock (not Linux): nothing is confined, and the report says so.
#[cfg(not(target_os = "linux"))]
pub fn confine_filesystem(policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
    Ok(Confinement {
        filesystem: Enforcement::None,
        network: if policy.deny_network {
            Enforcement::None
        } else {
            Enforcement::NotRequested
        },
        landlock_abi: 0,
    })
}

/// Set the policy's resource limits on this process, and turn core dumps off.
#[cfg(unix)]
pub fn apply_limits(policy: &SandboxPolicy) -> Result<(), SandboxError> {
    use rustix::process::{setrlimit, Resource, Rlimit};

    let set = |what: &'static str, resource: Resource, limit: u64| {
        setrlimit(
            resource,
            Rlimit {
                current: Some(limit),
                maximum: Some(limit),
            },
        )
        .map_err(|error| SandboxError::Limit {
            what,
            error: error.into(),
        })
    };
    use rustix::process::getrlimit;
    // Never above what this process already has: raising a hard limit is not ours to do.
    let set = |what: &'static str, resource: Resource, limit: u64| {
        let limit = getrlimit(resource)
            .maximum
            .map_or(limit, |maximum| maximum.min(limit));
        set(what, resource, limit)
    };
    set("core dump size", Resource::Core, 0)?;
    if let Some(limit) = policy.memory_limit {
        set("memory", Resource::As, limit)?;
    }
    if let Some(limit) = policy.max_open_files {
        set("open files", Resource::Nofile, limit)?;
    }
    if let Some(limit) = policy.max_processes {
        set("processes", Resource::Nproc, limit)?;
    }
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print_as_the_command_line_spells_them() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert_eq!(format_size(512 << 20), "512M");
        assert_eq!(format_size(DEFAULT_MEMORY_LIMIT), "4G");
        assert_eq!(format_size(1000), "1000 bytes");
    }

    /// Landlock binds the thread that restricts itself; a fresh thread keeps the test
    /// process itself unconfined.
    fn in_confined_thread<T: Send + 'static>(
        policy: SandboxPolicy,
        body: impl FnOnce(Confinement) -> T + Send + 'static,
    ) -> T {
        std::thread::spawn(move || {
            let confinement = confine_filesystem(&policy).unwrap();
            body(confinement)
        })
        .join()
        .unwrap()
    }

    #[test]
    fn writes_inside_work_and_writes_outside_are_refused() {
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let (inside_path, outside_path) = (inside.path().to_owned(), outside.path().to_owned());
        let policy = SandboxPolicy {
            writable: vec![inside_path.clone()],
            ..SandboxPolicy::default()
        };
        let (confinement, wrote_inside, wrote_outside, read_outside) =
            in_confined_thread(policy, move |confinement| {
                (
                    confinement,
                    std::fs::write(inside_path.join("ok.txt"), b"ok").is_ok(),
                    std::fs::write(outside_path.join("no.txt"), b"no"),
                    std::fs::read_dir(&outside_path).is_ok(),
                )
            });
        if confinement.filesystem == Enforcement::None {
            eprintln!("skipped: this kernel has no Landlock");
            return;
        }
        assert!(wrote_inside);
        let refused = wrote_outside.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(read_outside, "reads stay allowed");
        assert!(!outside.path().join("no.txt").exists());
        // The test's own thread was never confined.
        std::fs::write(outside.path().join("free.txt"), b"free").unwrap();
    }
}
