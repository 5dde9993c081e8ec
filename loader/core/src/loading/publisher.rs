//! Publisher keys of packed tools (`xcsh-plugins pack --sign`): each library a packed tool
//! ships is signed with its publisher's ed25519 key in minisign's format (`LIB.minisig`
//! beside it), and the tool's manifest names the public key. Whoever installs or loads it
//! checks the signature, then the key against the one pinned for the tool's name in the trust
//! store: the first key seen is pinned; a later version signed by another key, or unsigned
//! after a signed one, is refused until the user accepts it (`xcsh-plugins accept-key`, or
//! `install --accept-new-key`).
//!
//! Both `xcsh-plugins install` and the Node binding (a packed tool's first load in xcsh's
//! runtime, whose installer runs none of this project's code) check through here, so they
//! share one rule and one store.

use std::io::Cursor;

use crate::loading::trust::TrustStore;

/// What a check learnt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublisherCheck {
    /// Unsigned, and no key was pinned for the tool.
    Unsigned,
    /// Signed by the key already pinned.
    Known(String),
    /// Signed, and no key was pinned: pin this one.
    FirstSeen(String),
}

/// Why a packed tool's publisher check failed. The messages name the tool and both keys;
/// callers add how to accept a new key where they can.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublisherError {
    /// The signature does not hold for these bytes and this key (or is not a signature).
    #[error("{tool}: {cause}")]
    BadSignature {
        /// The tool and version.
        tool: String,
        /// What failed.
        cause: String,
    },
    /// The manifest names a key but the library has no signature.
    #[error("{tool}: its manifest names publisher key {key} but {file} has no signature")]
    MissingSignature {
        /// The tool and version.
        tool: String,
        /// The key its manifest names.
        key: String,
        /// The library's file name.
        file: String,
    },
    /// Signed by another key than the one pinned.
    #[error("{tool}: signed by {key}, not by the pinned publisher key {pinned}")]
    KeyChanged {
        /// The tool and version.
        tool: String,
        /// The key it is signed by.
        key: String,
        /// The key pinned for it.
        pinned: String,
    },
    /// Unsigned, though a key is pinned.
    #[error("{tool}: unsigned, but its earlier versions were signed by {pinned}")]
    UnsignedAfterSigned {
        /// The tool and version.
        tool: String,
        /// The key pinned for it.
        pinned: String,
    },
}

impl PublisherError {
    /// The key a user would accept to get past this refusal (`None`: accepting unsigned).
    pub fn offered_key(&self) -> Option<&str> {
        match self {
            PublisherError::KeyChanged { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// Whether `key` is a minisign public key (the base64 line of a `.pub` file); the reason when
/// it is not.
pub fn check_key(key: &str) -> Result<(), String> {
    minisign::PublicKey::from_base64(key)
        .map(|_| ())
        .map_err(|e| format!("the publisher key {key:?} is not a minisign key ({e})"))
}

/// Check `signature` (a `.minisig` text) of `bytes`, named `file_name`, against the minisign
/// public key `public_key` (base64). Its trusted comment must name the file, so a signature
/// cannot be moved to another file's name. The reason when it does not hold.
pub fn verify_signature(
    public_key: &str,
    bytes: &[u8],
    signature: &str,
    file_name: &str,
) -> Result<(), String> {
    let key = minisign::PublicKey::from_base64(public_key)
        .map_err(|e| format!("the publisher key {public_key:?} is not a minisign key ({e})"))?;
    let signature = minisign::SignatureBox::from_string(signature)
        .map_err(|e| format!("{file_name}.minisig is not a minisign signature ({e})"))?;
    minisign::verify(&key, &signature, Cursor::new(bytes), true, false, false)
        .map_err(|e| format!("{file_name}: bad signature ({e})"))?;
    let comment = signature.trusted_comment().unwrap_or_default();
    if comment != format!("file:{file_name}") {
        return Err(format!(
            "{file_name}: the signature is for another file ({comment:?})"
        ));
    }
    Ok(())
}

/// A packed tool's library, as an installer or a loader sees it.
#[derive(Debug, Clone, Copy)]
pub struct SignedLibrary<'a> {
    /// The tool's name (its npm name): what the key is pinned under.
    pub tool: &'a str,
    /// `@scope/name VERSION`, for messages.
    pub shown: &'a str,
    /// The publisher key its manifest names.
    pub key: Option<&'a str>,
    /// The library's file name (what its signature's trusted comment names).
    pub file_name: &'a str,
    /// The library's content.
    pub bytes: &'a [u8],
    /// Its `.minisig` text, if it came with one.
    pub signature: Option<&'a str>,
}

/// Check `library` against the key pinned in `store` (`accept_new`: a changed key, or none
/// after one, is accepted). Nothing is written: pin [`PublisherCheck::FirstSeen`]'s key (and
/// an accepted new one) with [`TrustStore::pin_publisher`].
pub fn check(
    store: &TrustStore,
    library: SignedLibrary<'_>,
    accept_new: bool,
) -> Result<PublisherCheck, PublisherError> {
    let pinned = store.publisher_key(library.tool);
    let tool = library.shown.to_owned();
    let Some(key) = library.key else {
        return match pinned {
            Some(pinned) if !accept_new => Err(PublisherError::UnsignedAfterSigned {
                tool,
                pinned: pinned.to_owned(),
            }),
            _ => Ok(PublisherCheck::Unsigned),
        };
    };
    let signature = library
        .signature
        .ok_or_else(|| PublisherError::MissingSignature {
            tool: tool.clone(),
            key: key.to_owned(),
            file: library.file_name.to_owned(),
        })?;
    verify_signature(key, library.bytes, signature, library.file_name).map_err(|cause| {
        PublisherError::BadSignature {
            tool: tool.clone(),
            cause,
        }
    })?;
    match pinned {
        Some(pinned) if pinned == key => Ok(PublisherCheck::Known(key.to_owned())),
        Some(pinned) if !accept_new => Err(PublisherError::KeyChanged {
            tool,
            key: key.to_owned(),
            pinned: pinned.to_owned(),
        }),
        _ => Ok(PublisherCheck::FirstSeen(key.to_owned())),
    }
}
