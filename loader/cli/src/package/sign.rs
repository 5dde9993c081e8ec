//! Signing a packed tool's libraries with the publisher's ed25519 key in minisign's format (a
//! `LIB.minisig` beside each); checking them is [`xcsh_loader::publisher`]'s.
//!
//! Key files are minisign's own (`minisign -G`, or `xcsh-plugins keygen`), so a publisher can
//! use either tool.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// The variable holding the password of an encrypted secret key.
pub const PASSWORD_VARIABLE: &str = "XCSH_SIGN_PASSWORD";

/// A secret key, ready to sign.
pub struct SigningKey {
    secret: minisign::SecretKey,
    public: minisign::PublicKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public_key())
            .finish()
    }
}

impl SigningKey {
    /// Read a minisign secret key file; an encrypted one needs its password in
    /// [`PASSWORD_VARIABLE`].
    pub fn read(path: &Path) -> Result<Self, CliError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::Usage(format!("--sign {}: {e}", path.display())))?;
        let boxed = minisign::SecretKeyBox::from_string(&text).map_err(|e| {
            CliError::Usage(format!(
                "--sign {}: not a minisign secret key ({e})",
                path.display()
            ))
        })?;
        let secret = match std::env::var(PASSWORD_VARIABLE) {
            Ok(password) => boxed.into_secret_key(Some(password)),
            Err(_) => boxed.into_unencrypted_secret_key(),
        }
        .map_err(|e| {
            CliError::Usage(format!(
                "--sign {}: cannot open the key ({e}); an encrypted key needs its password in \
                 ${PASSWORD_VARIABLE}",
                path.display()
            ))
        })?;
        let public = minisign::PublicKey::from_secret_key(&secret)
            .map_err(|e| CliError::Usage(format!("--sign {}: {e}", path.display())))?;
        Ok(SigningKey { secret, public })
    }

    /// The public key, as the base64 line of a minisign `.pub` file.
    pub fn public_key(&self) -> String {
        self.public.to_base64()
    }

    /// A detached signature of `bytes` (the text of a `.minisig` file); its trusted comment
    /// names the file, so a signature cannot be moved to another file's name unnoticed.
    pub fn sign(&self, bytes: &[u8], file_name: &str) -> Result<String, CliError> {
        let comment = format!("file:{file_name}");
        minisign::sign(
            Some(&self.public),
            &self.secret,
            Cursor::new(bytes),
            Some(&comment),
            Some("signed by xcsh-plugins pack"),
        )
        .map(|signature| signature.into_string())
        .map_err(|e| CliError::Failure(format!("cannot sign {file_name}: {e}")))
    }
}

/// `xcsh-plugins keygen DIR`: a new unencrypted key pair, `DIR/xcsh-sign.key` (0600) and
/// `DIR/xcsh-sign.pub`; existing files are not overwritten.
pub fn keygen(dir: &Path) -> Result<(PathBuf, PathBuf, String), CliError> {
    let secret_path = dir.join("xcsh-sign.key");
    let public_path = dir.join("xcsh-sign.pub");
    for path in [&secret_path, &public_path] {
        if path.exists() {
            return Err(CliError::Usage(format!(
                "{} exists; nothing was written (move it away, or choose another directory)",
                path.display()
            )));
        }
    }
    let pair = minisign::KeyPair::generate_unencrypted_keypair()
        .map_err(|e| CliError::Failure(format!("cannot generate a key: {e}")))?;
    let secret = pair
        .sk
        .to_box(Some("xcsh-plugins publisher secret key"))
        .map_err(|e| CliError::Failure(e.to_string()))?
        .into_string();
    let public = pair
        .pk
        .to_box()
        .map_err(|e| CliError::Failure(e.to_string()))?
        .into_string();
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Failure(format!("cannot create {}: {e}", dir.display())))?;
    let write = |path: &Path, text: &str, mode: u32| -> Result<(), CliError> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        #[cfg(not(unix))]
        let _ = mode;
        let mut file = options
            .open(path)
            .map_err(|e| CliError::Failure(format!("cannot write {}: {e}", path.display())))?;
        std::io::Write::write_all(&mut file, text.as_bytes())
            .map_err(|e| CliError::Failure(format!("cannot write {}: {e}", path.display())))
    };
    write(&secret_path, &secret, 0o600)?;
    write(&public_path, &public, 0o644)?;
    Ok((secret_path, public_path, pair.pk.to_base64()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xcsh_loader::publisher::verify_signature as verify;

    #[test]
    fn signs_verifies_and_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let (secret, _, public) = keygen(dir.path()).unwrap();
        let key = SigningKey::read(&secret).unwrap();
        assert_eq!(key.public_key(), public);
        let signature = key.sign(b"library bytes", "libx.so").unwrap();
        verify(&public, b"library bytes", &signature, "libx.so").unwrap();
        let tampered = verify(&public, b"library bytez", &signature, "libx.so").unwrap_err();
        assert!(tampered.contains("bad signature"), "{tampered}");
        let moved = verify(&public, b"library bytes", &signature, "liby.so").unwrap_err();
        assert!(moved.contains("another file"), "{moved}");
        let other = tempfile::tempdir().unwrap();
        let (_, _, other_public) = keygen(other.path()).unwrap();
        assert!(verify(&other_public, b"library bytes", &signature, "libx.so").is_err());
        assert!(
            keygen(dir.path()).is_err(),
            "an existing key is not overwritten"
        );
    }
}
