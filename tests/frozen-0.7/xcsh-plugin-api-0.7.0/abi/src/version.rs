//! The version marker: which `xcsh-plugin-api` a library was built against, readable from the
//! file without loading it.
//!
//! `dlopen` runs a library's constructors, so a host that must refuse a plugin before any of
//! its code runs cannot ask the library. Instead `export_plugin!` exports a plain byte array,
//! [`VERSION_MARKER_SYMBOL`], holding [`VERSION_MARKER_PREFIX`] followed by the version and
//! NUL padding; the host finds the symbol in the file's symbol table and reads the bytes.

use std::fmt;

/// The exported symbol holding the marker (`#[no_mangle]`, so the same name on every build).
pub const VERSION_MARKER_SYMBOL: &str = "xcsh_plugin_api_version";
/// The marker's size in bytes.
pub const VERSION_MARKER_LEN: usize = 64;
/// What every marker starts with, so a symbol of that name that is not ours is not misread.
pub const VERSION_MARKER_PREFIX: &str = "xcsh-plugin-api ";

/// The marker's type: plain bytes, no pointers, nothing to relocate.
pub type VersionMarker = [u8; VERSION_MARKER_LEN];

/// The marker for `version`: the prefix, the version, then NULs. A version too long to fit is
/// cut (no real version is).
pub const fn version_marker(version: &str) -> VersionMarker {
    let mut marker = [0u8; VERSION_MARKER_LEN];
    let prefix = VERSION_MARKER_PREFIX.as_bytes();
    let version = version.as_bytes();
    let mut i = 0;
    while i < prefix.len() {
        marker[i] = prefix[i];
        i += 1;
    }
    let mut j = 0;
    // Keep at least one NUL at the end.
    while j < version.len() && i < VERSION_MARKER_LEN - 1 {
        marker[i] = version[j];
        i += 1;
        j += 1;
    }
    marker
}

/// The version text a marker holds, or `None` when the bytes are not a marker.
pub fn parse_version_marker(bytes: &[u8]) -> Option<&str> {
    let rest = bytes.strip_prefix(VERSION_MARKER_PREFIX.as_bytes())?;
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let text = std::str::from_utf8(&rest[..end]).ok()?;
    (!text.is_empty() && text.len() <= 40).then_some(text)
}

/// A `major.minor.patch` version (a pre-release or build suffix is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}

impl ApiVersion {
    /// Parse `major.minor.patch`, with an optional `-pre` or `+build` suffix.
    pub fn parse(text: &str) -> Option<Self> {
        let core = text.split(['-', '+']).next().unwrap_or(text);
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next()?.parse().ok()?;
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            major,
            minor,
            patch,
        })
    }

    /// The compatibility line: the major, and for 0.x versions also the minor.
    fn line(self) -> (u32, u32) {
        if self.major == 0 {
            (0, self.minor)
        } else {
            (self.major, 0)
        }
    }

    /// Whether a host of version `host`, documenting `oldest` as the oldest version it
    /// supports, accepts a plugin built against `self`: same major, and a minor from
    /// `oldest`'s up to `host`'s (for 0.x, the minor is the compatibility axis). Patches never
    /// matter.
    pub fn is_supported_by(self, oldest: Self, host: Self) -> bool {
        if self.major != host.major {
            return false;
        }
        let (_, lo) = oldest.line();
        let (_, hi) = host.line();
        let minor = self.minor;
        if host.major == 0 {
            (lo..=hi).contains(&minor)
        } else {
            let lo = if oldest.major == host.major {
                oldest.minor
            } else {
                0
            };
            (lo..=host.minor).contains(&minor)
        }
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> ApiVersion {
        ApiVersion::parse(text).expect("valid version")
    }

    #[test]
    fn markers_round_trip() {
        let marker = version_marker("0.2.0");
        assert_eq!(parse_version_marker(&marker), Some("0.2.0"));
        assert_eq!(parse_version_marker(b"something else"), None);
        assert_eq!(parse_version_marker(&[0u8; VERSION_MARKER_LEN]), None);
    }

    #[test]
    fn zero_x_hosts_accept_their_documented_minors_only() {
        let (oldest, host) = (v("0.2.0"), v("0.3.0"));
        for ok in ["0.2.0", "0.2.9", "0.3.0", "0.3.7"] {
            assert!(v(ok).is_supported_by(oldest, host), "{ok}");
        }
        for refused in ["0.1.0", "0.4.0", "1.0.0", "1.3.0"] {
            assert!(!v(refused).is_supported_by(oldest, host), "{refused}");
        }
    }

    #[test]
    fn stable_hosts_accept_older_minors_of_their_major() {
        let (oldest, host) = (v("1.0.0"), v("1.4.2"));
        assert!(v("1.0.0").is_supported_by(oldest, host));
        assert!(v("1.4.9").is_supported_by(oldest, host));
        assert!(!v("1.5.0").is_supported_by(oldest, host));
        assert!(!v("2.0.0").is_supported_by(oldest, host));
        assert!(!v("0.9.0").is_supported_by(oldest, host));
    }

    #[test]
    fn versions_parse_with_suffixes() {
        assert_eq!(v("0.3.0-rc.1"), v("0.3.0"));
        assert_eq!(ApiVersion::parse("0.3"), None);
        assert_eq!(ApiVersion::parse("a.b.c"), None);
    }
}
