//! The home a plugin process and the programs it runs see: a private directory instead of the
//! user's, with what developer tools need to start and nothing they could leak.
//!
//! The user's home holds both: toolchains (`~/.rustup`, `~/.cargo/bin`, `~/.pyenv`, nvm's
//! node) and secrets (`~/.ssh`, `~/.aws`, `~/.netrc`, tokens in `~/.npmrc`), sometimes in the
//! same file (`~/.gitconfig` with an `http.extraHeader`, `~/.cargo/config.toml` with a
//! registry token). Landlock can only grant whole subtrees, so granting the home, or any
//! parent of a secret, is out. Instead:
//! - `HOME` is a fresh private directory (in the session's private temporary directory), so
//!   every cache a program writes under "its home" (`~/.cache`, npm's `~/.npm`, Go's build
//!   cache, pip's) is private and goes away with the session;
//! - git's and cargo's settings are copied into it **filtered**: credentials sections,
//!   `http.*.extraHeader`, `url.*` rules whose URL carries a user or token, includes (they
//!   point at files that stay unreadable), and registry tokens are left out; the user's files
//!   themselves stay unreadable. A copy rather than `GIT_CONFIG_GLOBAL` alone: cargo has no
//!   such variable, and one rule for both is easier to trust;
//! - the toolchains are granted read-only, each exactly ([`TOOLCHAIN_DIRS`] and `PATH`'s
//!   entries under the home), never a directory that holds or contains a secret
//!   ([`SECRETS`]); `RUSTUP_HOME`, `CARGO_HOME` and `PYENV_ROOT` point tools back at them.
//!
//! Programs also get `GIT_TERMINAL_PROMPT=0`: with no terminal (the plugin process has none)
//! git fails at once instead of asking for a password.

#[cfg(unix)]
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Directories under the home that hold toolchains and the sources they build from, granted
/// read-only when they exist. Relative to the home.
pub const TOOLCHAIN_DIRS: &[&str] = &[
    ".rustup",
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".nvm/versions",
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".bun/bin",
    ".deno/bin",
    "go/bin",
    "go/pkg/mod",
    ".rbenv",
    ".asdf/installs",
    ".asdf/shims",
    ".volta/bin",
    ".volta/tools",
];

/// What stays unreadable under the home, whatever is granted: no grant may be one of these,
/// inside one, or contain one. Relative to the home.
pub const SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config",
    ".netrc",
    ".git-credentials",
    ".gitconfig",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".cargo/config",
    ".cargo/config.toml",
    ".password-store",
    ".local/share",
    ".terraform.d",
    ".vault-token",
];

/// Variables this module sets for a plugin process (the child accepts them in its clean
/// environment).
pub const PROGRAM_ENVIRONMENT: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "PYENV_ROOT",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "GIT_TERMINAL_PROMPT",
];

/// A plugin process's home: the variables to set and the directories to grant.
#[cfg(unix)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramHome {
    /// The private home.
    pub home: PathBuf,
    /// Variables to set (`HOME` first).
    pub env: Vec<(OsString, OsString)>,
    /// Toolchain directories to grant read-only (canonical).
    pub readable: Vec<PathBuf>,
}

/// The user's toolchain directories a plugin process may read: [`TOOLCHAIN_DIRS`] that exist,
/// `RUSTUP_HOME`'s and `CARGO_HOME`'s (when set), and the entries of `PATH` under `home`.
/// Each is judged where it is named (never the home, a parent of a secret, or in one of
/// [`SECRETS`]) and where it leads, a link followed (never a parent of the home, nor a
/// directory that holds a secret's name: another home), and granted as the latter.
pub fn toolchain_reads(home: &Path) -> Vec<PathBuf> {
    let mut named: Vec<PathBuf> = TOOLCHAIN_DIRS.iter().map(|dir| home.join(dir)).collect();
    if let Some(rustup) = std::env::var_os("RUSTUP_HOME") {
        named.push(PathBuf::from(rustup));
    }
    if let Some(cargo) = std::env::var_os("CARGO_HOME").map(PathBuf::from) {
        named.extend(["bin", "registry", "git"].map(|dir| cargo.join(dir)));
    }
    if let Some(path) = std::env::var_os("PATH") {
        named.extend(
            std::env::split_paths(&path).filter(|dir| dir.is_absolute() && dir.starts_with(home)),
        );
    }
    let canonical_home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_owned());
    let secrets: Vec<PathBuf> = SECRETS.iter().map(|secret| home.join(secret)).collect();
    let mut granted: Vec<PathBuf> = Vec::new();
    for candidate in named {
        let named_safely = candidate != home
            && !home.starts_with(&candidate)
            && !secrets
                .iter()
                .any(|secret| candidate.starts_with(secret) || secret.starts_with(&candidate));
        let Ok(dir) = std::fs::canonicalize(&candidate) else {
            continue;
        };
        let leads_safely = !canonical_home.starts_with(&dir)
            && dir.components().count() > 2
            && !SECRETS.iter().any(|secret| dir.join(secret).exists());
        if named_safely && leads_safely && !granted.contains(&dir) {
            granted.push(dir);
        }
    }
    granted
}

/// Make the private home in `private_dir` (created, `0700`) for a user whose home is
/// `home`: filtered settings, the variables, the grants.
#[cfg(unix)]
pub fn prepare(home: &Path, private_dir: &Path) -> std::io::Result<ProgramHome> {
    use std::os::unix::fs::DirBuilderExt;
    let private = private_dir.join("home");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&private)?;
    let config = private.join(".config");
    std::fs::create_dir_all(config.join("git"))?;
    let mut gitconfig = String::new();
    let xdg_config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".config"));
    for source in [home.join(".gitconfig"), xdg_config.join("git/config")] {
        if let Some(text) = read_small(&source) {
            gitconfig.push_str(&filter_git_config(&text));
        }
    }
    std::fs::write(private.join(".gitconfig"), gitconfig)?;
    for name in ["ignore", "attributes"] {
        if let Some(text) = read_small(&xdg_config.join("git").join(name)) {
            std::fs::write(config.join("git").join(name), text)?;
        }
    }
    let mut env: Vec<(OsString, OsString)> = vec![
        ("HOME".into(), private.clone().into()),
        ("XDG_CONFIG_HOME".into(), config.into()),
        ("XDG_CACHE_HOME".into(), private.join(".cache").into()),
        ("XDG_DATA_HOME".into(), private.join(".local/share").into()),
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
    ];
    let real_cargo = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cargo"));
    if real_cargo.is_dir() {
        // A private cargo home: the real binaries and caches by link (granted read-only),
        // the settings filtered, and room for cargo's own lock files.
        let cargo = private.join(".cargo");
        std::fs::create_dir_all(&cargo)?;
        for dir in ["bin", "registry", "git"] {
            let target = real_cargo.join(dir);
            if target.is_dir() {
                std::os::unix::fs::symlink(&target, cargo.join(dir))?;
            }
        }
        let settings = read_small(&real_cargo.join("config.toml"))
            .or_else(|| read_small(&real_cargo.join("config")));
        if let Some(text) = settings {
            std::fs::write(cargo.join("config.toml"), filter_cargo_config(&text))?;
        }
        env.push(("CARGO_HOME".into(), cargo.into()));
    }
    let rustup = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".rustup"));
    if rustup.is_dir() {
        env.push(("RUSTUP_HOME".into(), rustup.into()));
    }
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".pyenv"));
    if pyenv.is_dir() {
        env.push(("PYENV_ROOT".into(), pyenv.into()));
    }
    Ok(ProgramHome {
        home: private,
        env,
        readable: toolchain_reads(home),
    })
}

/// A settings file's text, when it is a readable file of at most 1 MiB.
#[cfg(unix)]
fn read_small(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() || metadata.len() > 1 << 20 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// Git settings without what may carry a credential: `credential` sections, `include` and
/// `includeIf` sections, `http` keys `extraHeader`, `cookieFile` and `proxy`, and `url`
/// sections whose URL names a user (`https://TOKEN@host/`). Continuation lines go with
/// their key.
#[cfg(unix)]
pub fn filter_git_config(text: &str) -> String {
    let mut kept = String::new();
    let mut dropping_section = false;
    let mut section = String::new();
    let mut continuing = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if continuing {
            continuing = line.trim_end().ends_with('\\');
            continue;
        }
        if trimmed.starts_with('[') {
            let header = trimmed
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or_default();
            let (name, sub) = match header.split_once(char::is_whitespace) {
                Some((name, sub)) => (name, sub.trim().trim_matches('"')),
                None => match header.split_once('.') {
                    Some((name, sub)) => (name, sub),
                    None => (header, ""),
                },
            };
            section = name.to_ascii_lowercase();
            dropping_section = matches!(section.as_str(), "credential" | "include" | "includeif")
                || (section == "url" && url_has_user(sub));
            if !dropping_section {
                kept.push_str(line);
                kept.push('\n');
            }
            continue;
        }
        if dropping_section {
            continue;
        }
        let key = trimmed
            .split(|c: char| c == '=' || c.is_whitespace())
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let secret_key =
            section == "http" && matches!(key.as_str(), "extraheader" | "cookiefile" | "proxy");
        if secret_key {
            continuing = line.trim_end().ends_with('\\');
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

/// Whether `url` carries a credential before its host: any user part of a URL with a scheme
/// (`https://x-token@github.com/`, where tokens go), a password in an scp-like address
/// (`me:pw@host:path`; `git@github.com:` names only ssh's user, and stays).
#[cfg(unix)]
fn url_has_user(url: &str) -> bool {
    match url.split_once("://") {
        Some((_, rest)) => rest.split('/').next().unwrap_or_default().contains('@'),
        None => url
            .split_once('@')
            .is_some_and(|(user, _)| user.contains(':')),
    }
}

/// Cargo settings without registry tokens and credential providers: any line setting
/// `token`, `secret-key`, `secret-key-subject`, `credential-provider` or
/// `global-credential-providers`, or an inline table that does.
#[cfg(unix)]
pub fn filter_cargo_config(text: &str) -> String {
    const SECRET_KEYS: &[&str] = &[
        "token",
        "secret-key",
        "secret-key-subject",
        "credential-provider",
        "global-credential-providers",
    ];
    let sets_secret = |line: &str| {
        line.split(['{', ',', '\n'])
            .map(|part| part.trim_start())
            .any(|part| {
                let key = part
                    .split(|c: char| c == '=' || c.is_whitespace())
                    .next()
                    .unwrap_or_default()
                    .trim_matches('"');
                let key = key.rsplit('.').next().unwrap_or(key);
                SECRET_KEYS.contains(&key) && part.contains('=')
            })
    };
    let mut kept = String::new();
    for line in text.lines() {
        if !sets_secret(line) {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn git_settings_keep_the_user_and_lose_every_credential() {
        let text = "[user]\n\tname = Ada\n\temail = ada@example.com\n\
            [http \"https://github.com/\"]\n\textraHeader = AUTHORIZATION: basic c2VjcmV0\n\tsslVerify = true\n\
            [http]\n\tproxy = http://me:pw@proxy:3128\n\
            [credential]\n\thelper = !echo password=hunter2\n\
            [url \"https://x-access-token:ghp_abc@github.com/\"]\n\tinsteadOf = https://github.com/\n\
            [url \"git@github.com:\"]\n\tinsteadOf = gh:\n\
            [include]\n\tpath = ~/.gitconfig.secret\n\
            [core]\n\teditor = vim\n";
        let filtered = filter_git_config(text);
        for kept in [
            "name = Ada",
            "sslVerify = true",
            "editor = vim",
            "insteadOf = gh:",
        ] {
            assert!(filtered.contains(kept), "{kept} was dropped:\n{filtered}");
        }
        for dropped in [
            "c2VjcmV0",
            "me:pw",
            "hunter2",
            "ghp_abc",
            "gitconfig.secret",
        ] {
            assert!(
                !filtered.contains(dropped),
                "{dropped} was kept:\n{filtered}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn cargo_settings_lose_their_tokens() {
        let text = "[build]\njobs = 2\n[registry]\ntoken = \"cio_secret\"\n\
            [registries.corp]\nindex = \"sparse+https://corp/\"\ncredential-provider = \"cargo:token\"\n\
            [registries]\nother = { index = \"https://o/\", token = \"tok_secret\" }\n";
        let filtered = filter_cargo_config(text);
        assert!(filtered.contains("jobs = 2") && filtered.contains("sparse+https://corp/"));
        for dropped in ["cio_secret", "cargo:token", "tok_secret"] {
            assert!(
                !filtered.contains(dropped),
                "{dropped} was kept:\n{filtered}"
            );
        }
    }

    #[test]
    fn toolchains_are_granted_and_no_parent_of_a_secret_is() {
        let home = tempfile::tempdir().unwrap();
        for dir in [
            ".rustup/toolchains",
            ".cargo/bin",
            ".ssh",
            ".config/gh",
            "bin",
        ] {
            std::fs::create_dir_all(home.path().join(dir)).unwrap();
        }
        let granted = toolchain_reads(home.path());
        let home = std::fs::canonicalize(home.path()).unwrap();
        assert!(granted.contains(&home.join(".rustup")));
        assert!(granted.contains(&home.join(".cargo/bin")));
        for refused in [
            home.clone(),
            home.join(".ssh"),
            home.join(".config"),
            home.join(".cargo"),
        ] {
            assert!(
                !granted.contains(&refused),
                "{} was granted",
                refused.display()
            );
        }
    }
}
