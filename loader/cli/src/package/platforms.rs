//! The platforms a packed tool ships for, under each name the ecosystems give them: the Rust
//! target triple (a `.xcsh-plugin` folder's subfolders), npm's `os`/`cpu`/`libc` and the
//! package suffix napi-rs uses (`linux-x64-gnu`), and MCPB's `platform` with an architecture.
//!
//! The same six as `bindings/node/platform.js` and `.ci/dist`: one row per target.

/// One platform a tool can ship a library for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// The Rust target triple: the subfolder of a `.xcsh-plugin` folder.
    pub triple: &'static str,
    /// npm's suffix for its package (`@scope/tool-linux-x64-gnu`), napi-rs's names.
    pub npm_key: &'static str,
    /// npm's (and Node's) `process.platform`; MCPB's `compatibility.platforms` entry.
    pub os: &'static str,
    /// npm's (and Node's) `process.arch`.
    pub cpu: &'static str,
    /// npm's `libc` on Linux.
    pub libc: Option<&'static str>,
    /// What a program file is named with there (`.exe` on Windows).
    pub exe_suffix: &'static str,
}

/// Every platform, in the order packages and bundles are written.
pub const PLATFORMS: &[Platform] = &[
    Platform {
        triple: "x86_64-unknown-linux-gnu",
        npm_key: "linux-x64-gnu",
        os: "linux",
        cpu: "x64",
        libc: Some("glibc"),
        exe_suffix: "",
    },
    Platform {
        triple: "aarch64-unknown-linux-gnu",
        npm_key: "linux-arm64-gnu",
        os: "linux",
        cpu: "arm64",
        libc: Some("glibc"),
        exe_suffix: "",
    },
    Platform {
        triple: "x86_64-apple-darwin",
        npm_key: "darwin-x64",
        os: "darwin",
        cpu: "x64",
        libc: None,
        exe_suffix: "",
    },
    Platform {
        triple: "aarch64-apple-darwin",
        npm_key: "darwin-arm64",
        os: "darwin",
        cpu: "arm64",
        libc: None,
        exe_suffix: "",
    },
    Platform {
        triple: "x86_64-pc-windows-gnu",
        npm_key: "win32-x64-gnu",
        os: "win32",
        cpu: "x64",
        libc: None,
        exe_suffix: ".exe",
    },
    Platform {
        triple: "aarch64-pc-windows-gnullvm",
        npm_key: "win32-arm64-gnu",
        os: "win32",
        cpu: "arm64",
        libc: None,
        exe_suffix: ".exe",
    },
];

/// The platform of a target triple.
pub fn by_triple(triple: &str) -> Option<&'static Platform> {
    PLATFORMS.iter().find(|platform| platform.triple == triple)
}

/// This host's platform (the one `xcsh-plugins` was built for).
pub fn host() -> Option<&'static Platform> {
    by_triple(xcsh_loader::platform::HOST_TARGET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_triple_and_key_is_unique() {
        for (i, a) in PLATFORMS.iter().enumerate() {
            for b in &PLATFORMS[i + 1..] {
                assert_ne!(a.triple, b.triple);
                assert_ne!(a.npm_key, b.npm_key);
            }
        }
        assert!(host().is_some(), "this host's triple is in the table");
    }
}
