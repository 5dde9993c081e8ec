//! What a plugin's child process may do: an environment of named variables only, reads
//! confined to the system's directories and the paths the session names, writes confined to
//! chosen directories (Landlock), optionally no network at all (a seccomp filter, see
//! `xcsh_loader_process::network`, with Landlock's TCP rules as a further layer), and resource limits
//! (rlimits). The environment is set by the host when it starts the child; everything else is
//! applied by the child to itself, after it started and before the plugin is loaded, so
//! nothing of the plugin runs unconfined (the crate `xcsh-loader-process`: this module is the
//! policy both sides read, and the report of what was enforced).
//!
//! Why an allow-list for reads and for the environment: a plugin that can read `~/.ssh` or see
//! the host's `GITHUB_TOKEN` can leak it, with or without a network (a file it writes in the
//! project, a tool result). So a plugin process sees only what a program needs to run (the
//! system's directories, [`BASE_ENVIRONMENT`]) and what the session names.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The private home of plugin processes, and the toolchains under the user's home they read.
pub use super::program_home::{toolchain_reads, PROGRAM_ENVIRONMENT, SECRETS, TOOLCHAIN_DIRS};
/// The repository a session's directory is in, and what of it above that directory plugin
/// processes read.
pub use super::repository::{
    EnclosingRepository, RepositoryPart, RepositoryRead, REPOSITORY_FILES,
};

/// What to allow a plugin process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// Directories (and their contents) the process may write, create and remove in; it may
    /// read them too.
    #[cfg_attr(unix, serde(with = "unix_paths"))]
    pub writable: Vec<PathBuf>,
    /// Files and directories (with their contents) the process may read besides
    /// [`SYSTEM_READABLE`] and `writable`: the plugin's own directory, the host executable,
    /// what the developer tools read of the enclosing repository above the working directory
    /// ([`EnclosingRepository`]), and what the session allows (`--allow-read`). Everything
    /// else is refused.
    #[serde(default)]
    #[cfg_attr(unix, serde(with = "unix_paths"))]
    pub readable: Vec<PathBuf>,
    /// Directories whose entries (and their subdirectories' entries) the process may list,
    /// names only: none of their files may be read unless `readable` or `writable` grants
    /// it. The enclosing repository's top, so that git can find what is untracked in it
    /// ([`EnclosingRepository::listable`]).
    #[serde(default)]
    #[cfg_attr(unix, serde(with = "unix_paths"))]
    pub listable: Vec<PathBuf>,
    /// Variables of the host's environment the process gets besides [`BASE_ENVIRONMENT`]:
    /// names, or a prefix followed by `*` (`MYTOOL_*`).
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Deny every socket but a Unix stream `socketpair` (no TCP, UDP, raw, packet or netlink
    /// socket, no connection to a Unix socket outside the process).
    pub deny_network: bool,
    /// Address-space limit in bytes (`RLIMIT_AS`); `None` leaves it as inherited.
    pub memory_limit: Option<u64>,
    /// Limit on open descriptors (`RLIMIT_NOFILE`); `None` leaves it as inherited.
    pub max_open_files: Option<u64>,
    /// Limit on the user's processes and threads (`RLIMIT_NPROC`, counted per user by the
    /// kernel, and not enforced for root); `None` leaves it as inherited.
    pub max_processes: Option<u64>,
}

/// Paths in the policy's JSON (it travels to the child on its command line): a string when
/// the path is UTF-8, its bytes otherwise, since a working directory or a plugin's directory
/// may have any name.
#[cfg(unix)]
mod unix_paths {
    use std::ffi::OsString;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::PathBuf;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Encoded {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(paths: &[PathBuf], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(paths.iter().map(|path| match path.to_str() {
            Some(text) => Encoded::Text(text.to_owned()),
            None => Encoded::Bytes(path.as_os_str().as_bytes().to_vec()),
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<PathBuf>, D::Error> {
        Ok(Vec::<Encoded>::deserialize(deserializer)?
            .into_iter()
            .map(|encoded| match encoded {
                Encoded::Text(text) => PathBuf::from(text),
                Encoded::Bytes(bytes) => PathBuf::from(OsString::from_vec(bytes)),
            })
            .collect())
    }
}

/// The host's variables every plugin process gets (those the host has): what a program needs
/// to run. A trailing `*` matches any rest of the name.
#[cfg(not(windows))]
pub const BASE_ENVIRONMENT: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_*", "TERM", "TZ"];

/// The host's variables every plugin process gets (those the host has): what a program needs
/// to run on Windows, where a process without `SystemRoot` cannot even start its sockets, and
/// programs find the user's folders through `USERPROFILE` and `APPDATA`. Names match without
/// regard to case, as Windows treats them.
#[cfg(windows)]
pub const BASE_ENVIRONMENT: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SystemRoot",
    "SystemDrive",
    "windir",
    "ComSpec",
    "OS",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_*",
    "USERPROFILE",
    "USERNAME",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "ProgramData",
    "ProgramFiles*",
    "ProgramW6432",
    "CommonProgramFiles*",
    "LANG",
    "TZ",
];

/// The variables the loader itself sets for a plugin process: the host's process id (the
/// child checks it is still its parent), then [`TEMP_VARIABLES`].
#[cfg(not(windows))]
pub const LOADER_ENVIRONMENT: &[&str] = &["XCSH_PLUGIN_HOST_PARENT", "TMPDIR"];

/// The variables the loader itself sets for a plugin process: the host's process id (the
/// child checks it is still its parent), then [`TEMP_VARIABLES`] (Windows' programs read
/// `TEMP` and `TMP` rather than `TMPDIR`).
#[cfg(windows)]
pub const LOADER_ENVIRONMENT: &[&str] = &["XCSH_PLUGIN_HOST_PARENT", "TMPDIR", "TEMP", "TMP"];

/// The variables naming a plugin process's temporary directory (its private one): all of
/// [`LOADER_ENVIRONMENT`] but the first.
pub const TEMP_VARIABLES: &[&str] = LOADER_ENVIRONMENT.split_at(1).1;

/// Where every plugin process may read (those that exist): the system's programs, libraries
/// and configuration, devices, the kernel's `/sys`, and of `/proc` only [`PROC_READABLE`].
/// Not `/home`, `/root`, `/tmp`, `/var/tmp`, `/run` or `/mnt`: the user's files and other
/// programs' files are there.
pub const SYSTEM_READABLE: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/dev",
    "/sys",
    "/nix/store",
    "/gnu/store",
];

/// What a plugin process may read of `/proc`: its own process (`/proc/self`, resolved when the
/// sandbox is set up, with its threads, descriptors and maps) and the system-wide files
/// programs and runtimes read. Not the rest: `/proc/PID/environ` of another process of the
/// user, the host's first, holds the very secrets the clean environment keeps away (a
/// sandboxed process may read it where the kernel checks it as a plain file), and
/// `/proc/PID/cmdline` may hold more.
pub const PROC_READABLE: &[&str] = &[
    "/proc/self",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
];

/// Files in `/etc` that are often symbolic links out of it (to `/run/systemd/resolve/` and
/// the like): the directory each one resolves to is readable too, so name resolution and
/// time zones keep working.
#[cfg(target_os = "linux")]
const SYSTEM_LINKS: &[&str] = &["/etc/resolv.conf", "/etc/hosts", "/etc/localtime"];

/// Whether `name` is one a `--pass-env` pattern names: the same name, or, for a pattern
/// ending in `*`, any name starting with what comes before it.
pub fn env_pattern_matches(pattern: &str, name: &str) -> bool {
    // Windows' variable names are case-insensitive (`Path` is `PATH`).
    let same = |a: &str, b: &str| {
        if cfg!(windows) {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    match pattern.strip_suffix('*') {
        Some(prefix) => name
            .get(..prefix.len())
            .is_some_and(|start| same(start, prefix)),
        None => same(name, pattern),
    }
}

/// Check a `--pass-env` pattern as the command line spells it: a variable name, or a prefix
/// and a trailing `*`.
pub fn parse_env_pattern(text: &str) -> Result<String, String> {
    let name = text.strip_suffix('*').unwrap_or(text);
    if name.is_empty() {
        return Err(format!(
            "{text:?} names no variable: give a name (GITHUB_TOKEN) or a prefix and `*`              (MYTOOL_*); passing every variable would pass the host's secrets"
        ));
    }
    if name.contains(['=', '*', '\0']) {
        return Err(format!(
            "{text:?} is not a variable name (no `=`, and `*` only at the end)"
        ));
    }
    Ok(text.to_owned())
}

impl SandboxPolicy {
    /// Whether the host's variable `name` reaches a plugin process under this policy.
    pub fn passes_env(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        BASE_ENVIRONMENT
            .iter()
            .copied()
            .chain(self.pass_env.iter().map(String::as_str))
            .any(|pattern| env_pattern_matches(pattern, name))
    }

    /// The part of this process's environment a plugin process gets (the loader then adds
    /// [`LOADER_ENVIRONMENT`]).
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        std::env::vars_os()
            .filter(|(name, _)| self.passes_env(name))
            .collect()
    }

    /// What a plugin process may read besides `writable`: [`SYSTEM_READABLE`],
    /// [`PROC_READABLE`] (`/proc/self` opens as this very process's directory: call it in the
    /// process that confines itself), where the `SYSTEM_LINKS` resolve to, and `readable`.
    #[cfg(target_os = "linux")]
    pub fn read_rules(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = SYSTEM_READABLE
            .iter()
            .chain(PROC_READABLE)
            .map(PathBuf::from)
            .collect();
        for link in SYSTEM_LINKS {
            let resolved = std::fs::canonicalize(link).ok();
            if let Some(dir) = resolved.as_deref().and_then(std::path::Path::parent) {
                if !SYSTEM_READABLE.iter().any(|system| dir.starts_with(system)) {
                    paths.push(dir.to_owned());
                }
            }
        }
        paths.extend(self.readable.iter().cloned());
        paths
    }
}

/// Whether this process's environment holds only what `policy` lets through and what the
/// loader sets: what the child reports as the environment's enforcement.
pub fn environment_enforcement(policy: &SandboxPolicy) -> Enforcement {
    let clean = std::env::vars_os().all(|(name, _)| {
        policy.passes_env(&name)
            || LOADER_ENVIRONMENT.iter().any(|own| {
                name.to_str()
                    .is_some_and(|name| env_pattern_matches(own, name))
            })
            || super::program_home::PROGRAM_ENVIRONMENT
                .iter()
                .any(|own| name == *own)
    });
    if clean {
        Enforcement::Full
    } else {
        Enforcement::None
    }
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    /// Everything asked for is enforced.
    Full,
    /// Some of it (an older Landlock ABI; for the network, TCP only).
    Partial,
    /// Nothing: the kernel has no usable Landlock (or seccomp).
    #[default]
    None,
    /// Not asked for.
    NotRequested,
}

/// What the child could enforce, reported to the host in its handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Writes outside the writable directories.
    pub filesystem: Enforcement,
    /// Reads outside the readable directories (`none` from a child that predates it).
    #[serde(default)]
    pub reads: Enforcement,
    /// The environment: only the variables the policy lets through.
    #[serde(default)]
    pub environment: Enforcement,
    /// Sockets under `--deny-network`: `full` with the seccomp filter (every socket refused
    /// but a Unix stream pair), `partial` with only Landlock's TCP rules.
    pub network: Enforcement,
    /// The Landlock ABI version in use, `0` when the kernel has none.
    pub landlock_abi: u32,
    /// Whether the seccomp filter of `xcsh_loader_process::network` is installed.
    #[serde(default)]
    pub seccomp: bool,
    /// Whether every process the plugin starts lives in a PID namespace that ends with its
    /// plugin process (otherwise only those left in its process group are ended with it).
    #[serde(default)]
    pub programs_contained: bool,
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

    #[test]
    fn a_policy_with_non_utf8_paths_travels_as_json() {
        use std::os::unix::ffi::OsStrExt;
        let odd = PathBuf::from(OsStr::from_bytes(b"/tmp/plugins-\xff\xfe"));
        let policy = SandboxPolicy {
            writable: vec![PathBuf::from("/w"), odd.clone()],
            readable: vec![odd.clone()],
            listable: vec![odd],
            ..SandboxPolicy::default()
        };
        let json = serde_json::to_string(&policy).unwrap();
        assert_eq!(
            serde_json::from_str::<SandboxPolicy>(&json).unwrap(),
            policy
        );
    }

    #[test]
    fn only_named_variables_pass() {
        let policy = SandboxPolicy {
            pass_env: vec!["GITHUB_TOKEN".to_owned(), "MYTOOL_*".to_owned()],
            ..SandboxPolicy::default()
        };
        for passed in [
            "PATH",
            "HOME",
            "LC_ALL",
            "GITHUB_TOKEN",
            "MYTOOL_MODE",
            "MYTOOL_",
        ] {
            assert!(policy.passes_env(OsStr::new(passed)), "{passed}");
        }
        for refused in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN_2",
            "MYTOOL",
            "LD_PRELOAD",
            "TMPDIR",
        ] {
            assert!(!policy.passes_env(OsStr::new(refused)), "{refused}");
        }
        assert_eq!(parse_env_pattern("MYTOOL_*"), Ok("MYTOOL_*".to_owned()));
        assert!(parse_env_pattern("*").is_err());
        assert!(parse_env_pattern("").is_err());
        assert!(parse_env_pattern("A=B").is_err());
        assert!(parse_env_pattern("A*B").is_err());
    }
}
