//! The plugin process confines itself: Landlock for reads, writes and TCP, the seccomp filter
//! of [`network`](crate::network) under `--deny-network`, resource limits. The policy (what
//! to allow, and the report of what was enforced) is the core's
//! ([`xcsh_loader_core::sandbox`]): the host writes it, this crate applies it.
//!
//! Landlock restricts the calling thread and everything it starts later, so
//! [`confine_filesystem`] must run before the child starts any other thread. The best ABI the
//! kernel offers is used; what a kernel cannot enforce is reported in [`Confinement`], never
//! silently assumed. Resource limits apply to the whole process.

use xcsh_loader_core::sandbox::{environment_enforcement, Confinement, Enforcement, SandboxPolicy};

/// Why the sandbox could not be set up (as opposed to merely not enforced).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Landlock refused the ruleset.
    #[error("cannot set up the Landlock sandbox: {0}")]
    Landlock(String),
    /// The kernel refused the seccomp filter for a reason other than not having seccomp.
    #[error("cannot set up the network filter: {0}")]
    Seccomp(String),
    /// A resource limit could not be set.
    #[error("cannot set the {what} limit: {error}")]
    Limit {
        /// Which limit.
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
}

/// Confine this thread, and all it starts from now on, as `policy` says: reads and writes
/// (Landlock), and under `deny_network` sockets (seccomp, then Landlock's TCP rules and
/// abstract Unix socket scope). The environment is the host's doing; this only checks it.
pub fn confine(policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
    let mut confinement = confine_filesystem(policy)?;
    confinement.environment = environment_enforcement(policy);
    if policy.deny_network {
        confinement.seccomp = crate::network::deny_sockets()?;
        confinement.network = match (confinement.seccomp, confinement.landlock_abi) {
            (true, _) => Enforcement::Full,
            (false, abi) if abi >= 4 => Enforcement::Partial,
            (false, _) => Enforcement::None,
        };
    }
    Ok(confinement)
}

/// Restrict this thread, and all it starts from now on, to the policy's reads and writes
/// (and, under `deny_network`, no TCP and no abstract Unix socket of another sandbox).
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
            .map_err(error)?
            // A further layer under the seccomp filter: no connecting to an abstract Unix
            // socket created outside this sandbox (ABI 6).
            .scope(Scope::AbstractUnixSocket)
            .map_err(error)?;
    }
    // Signals to processes outside the sandbox (such as the host) are refused too.
    let ruleset = ruleset.scope(Scope::Signal).map_err(error)?;
    // Paths that do not exist are left out (`path_beneath_rules` skips them): they allow
    // nothing.
    let status = ruleset
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules(
            policy.read_rules(),
            AccessFs::from_read(abi),
        ))
        .map_err(error)?
        .add_rules(path_beneath_rules(
            ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"],
            AccessFs::from_read(abi) | AccessFs::WriteFile,
        ))
        .map_err(error)?
        .add_rules(path_beneath_rules(&policy.listable, AccessFs::ReadDir))
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
    // Reading files and directories and executing are governed from ABI 1 on: whatever
    // Landlock enforces, it enforces reads in full.
    let reads = match filesystem {
        Enforcement::Full | Enforcement::Partial => Enforcement::Full,
        _ => Enforcement::None,
    };
    let network = if !policy.deny_network {
        Enforcement::NotRequested
    } else if landlock_abi >= 4 {
        Enforcement::Partial
    } else {
        Enforcement::None
    };
    Ok(Confinement {
        filesystem,
        reads,
        environment: Enforcement::None,
        network,
        landlock_abi,
        seccomp: false,
        programs_contained: false,
    })
}

/// Without Landlock (not Linux): nothing is confined, and the report says so.
#[cfg(not(target_os = "linux"))]
pub fn confine_filesystem(policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
    Ok(Confinement {
        filesystem: Enforcement::None,
        reads: Enforcement::None,
        environment: Enforcement::None,
        network: if policy.deny_network {
            Enforcement::None
        } else {
            Enforcement::NotRequested
        },
        landlock_abi: 0,
        seccomp: false,
        programs_contained: false,
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
    // macOS accepts `RLIMIT_AS` and does not enforce it: a limit that only looks set is not
    // set at all there (the guide's platform table, docs/guide/src/install.md, says so).
    #[cfg(not(target_os = "macos"))]
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

/// Windows: the host sets the memory limit on the child's job (`sys::spawn`); nothing else
/// here has a Windows counterpart yet.
#[cfg(not(unix))]
pub fn apply_limits(_policy: &SandboxPolicy) -> Result<(), SandboxError> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;

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
        assert!(
            !read_outside,
            "reads outside the readable paths are refused"
        );
        assert!(!outside.path().join("no.txt").exists());
        // The test's own thread was never confined.
        std::fs::write(outside.path().join("free.txt"), b"free").unwrap();
    }

    #[test]
    fn reads_are_confined_to_the_system_and_the_named_paths() {
        let named = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(named.path().join("ok.txt"), b"ok").unwrap();
        std::fs::write(other.path().join("secret.txt"), b"secret").unwrap();
        let (named_path, other_path) = (named.path().to_owned(), other.path().to_owned());
        let policy = SandboxPolicy {
            readable: vec![named_path.clone()],
            ..SandboxPolicy::default()
        };
        let (confinement, named_read, other_read, system_read) =
            in_confined_thread(policy, move |confinement| {
                (
                    confinement,
                    std::fs::read(named_path.join("ok.txt")).is_ok(),
                    std::fs::read(other_path.join("secret.txt")),
                    std::fs::read("/etc/passwd").is_ok(),
                )
            });
        if confinement.filesystem == Enforcement::None {
            eprintln!("skipped: this kernel has no Landlock");
            return;
        }
        assert_eq!(confinement.reads, Enforcement::Full);
        assert!(named_read && system_read);
        let refused = other_read.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn a_listable_directory_shows_its_names_and_not_its_files() {
        let listed = tempfile::tempdir().unwrap();
        std::fs::create_dir(listed.path().join("nested")).unwrap();
        std::fs::write(listed.path().join("nested/.env"), b"SECRET").unwrap();
        let dir = listed.path().to_owned();
        let policy = SandboxPolicy {
            listable: vec![dir.clone()],
            ..SandboxPolicy::default()
        };
        let (confinement, names, read) = in_confined_thread(policy, move |confinement| {
            let names: Vec<String> = std::fs::read_dir(dir.join("nested"))
                .map(|entries| {
                    entries
                        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            (confinement, names, std::fs::read(dir.join("nested/.env")))
        });
        if confinement.filesystem == Enforcement::None {
            eprintln!("skipped: this kernel has no Landlock");
            return;
        }
        assert_eq!(names, [".env"]);
        assert_eq!(
            read.unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
    }
}
