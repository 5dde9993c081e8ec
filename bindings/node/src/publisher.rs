//! A packed tool's publisher key, checked at its load in xcsh's runtime (`toolPackage`): the
//! runtime's installer (`bun install`) runs none of this project's code, so the first load is
//! where the key is pinned, in the same trust store `xcsh-plugins install` uses, and where a
//! later version signed by another key (or unsigned after a signed one) is refused, naming
//! the command that accepts it.

use std::path::Path;

use napi::{Error, Result};
use napi_derive::napi;
use xcsh_loader_core::publisher::{self, PublisherCheck, PublisherError, SignedLibrary};
use xcsh_loader_core::trust::TrustStore;

/// Check the library at `library` (its `.minisig` text in `signature`) of the packed tool
/// `tool` (npm name; `shown` adds its version) against `key`, its manifest's publisher key,
/// and the key pinned in the user's trust store; pin a key seen for the first time. Returns
/// `"unsigned"`, `"known"` or `"pinned"`; throws the refusal otherwise.
#[napi(catch_unwind)]
pub fn check_tool_publisher(
    tool: String,
    shown: String,
    key: Option<String>,
    library: String,
    signature: Option<String>,
) -> Result<String> {
    let home = std::env::home_dir()
        .ok_or_else(|| Error::from_reason("no home directory for the trust store (set HOME)"))?;
    let mut store = TrustStore::for_home(&home).map_err(|e| Error::from_reason(e.to_string()))?;
    // Read (and hashed) only when there is a signature to check: an unsigned tool's load reads
    // nothing more than before.
    let bytes = match key {
        Some(_) => std::fs::read(&library)
            .map_err(|e| Error::from_reason(format!("cannot read {library}: {e}")))?,
        None => Vec::new(),
    };
    let file_name = Path::new(&library)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let signed = SignedLibrary {
        tool: &tool,
        shown: &shown,
        key: key.as_deref(),
        file_name: &file_name,
        bytes: &bytes,
        signature: signature.as_deref(),
    };
    match publisher::check(&store, signed, false) {
        Ok(PublisherCheck::Unsigned) => Ok("unsigned".to_owned()),
        Ok(PublisherCheck::Known(_)) => Ok("known".to_owned()),
        Ok(PublisherCheck::FirstSeen(key)) => {
            store.pin_publisher(&tool, &key);
            store.save().map_err(|e| {
                Error::from_reason(format!(
                    "cannot pin the publisher key of {tool}: {}: {e}",
                    store.file().display()
                ))
            })?;
            Ok("pinned".to_owned())
        }
        Err(error) => {
            let accept = match &error {
                PublisherError::KeyChanged { key, .. } => format!(
                    "; if its publisher changed keys, accept the new one with `npx @xcsh/native-plugins accept-key {tool} {key}`"
                ),
                PublisherError::UnsignedAfterSigned { .. } => format!(
                    "; to accept its unsigned versions: `npx @xcsh/native-plugins accept-key {tool}`"
                ),
                _ => String::new(),
            };
            Err(Error::from_reason(format!(
                "refusing to load {error}{accept}"
            )))
        }
    }
}
