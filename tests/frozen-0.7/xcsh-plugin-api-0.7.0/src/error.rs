//! [`PluginError`]: the one error type a tool author returns.
//!
//! Like `anyhow::Error`, it converts from every error, so `?` works on any
//! `std::error::Error + Send + Sync + 'static` (and on `String` and `&str` messages) inside a
//! factory, `execute`, `apply` or `reject`. That blanket conversion is why `PluginError` does
//! not itself implement `std::error::Error`: if it did, the blanket `From` would overlap with
//! the standard library's reflexive `impl<T> From<T> for T`. Where a `&dyn Error` is needed,
//! use [`AsRef`] (`error.as_ref()`).

use std::error::Error as StdError;

/// The message of a [`PluginError`] as a standard error, for [`AsRef<dyn Error>`](AsRef).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
struct Message(String);

/// An error from plugin code: a factory, `execute`, `apply` or `reject`.
///
/// It carries a message for the model and the user. Build one from a string, or let `?`
/// convert any error: the message is the error's `Display`, followed by the `Display` of each
/// of its sources that the message does not already contain.
///
/// ```
/// use xcsh_plugin_api::PluginError;
///
/// fn read(path: &str) -> Result<u32, PluginError> {
///     if path.is_empty() {
///         return Err(PluginError::new("path must not be empty"));
///     }
///     let text = std::fs::read_to_string(path)?; // std::io::Error
///     Ok(text.trim().parse()?) // std::num::ParseIntError
/// }
/// assert_eq!(read("").unwrap_err().to_string(), "path must not be empty");
/// assert!(read("/no/such/file").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginError {
    message: Message,
}

impl PluginError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: Message(message.into()),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message.0
    }
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl AsRef<dyn StdError + Send + Sync + 'static> for PluginError {
    fn as_ref(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &self.message
    }
}

/// Every error converts: `std::error::Error + Send + Sync + 'static` types, `String`, `&str`
/// (whatever converts into `Box<dyn Error + Send + Sync>`).
///
/// ```
/// use xcsh_plugin_api::PluginError;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("the plan is stale")]
/// struct Stale;
///
/// fn check() -> Result<(), PluginError> {
///     Err(Stale)?
/// }
/// assert_eq!(check().unwrap_err().message(), "the plan is stale");
/// assert_eq!(PluginError::from("plain text").message(), "plain text");
/// ```
impl<E> From<E> for PluginError
where
    E: Into<Box<dyn StdError + Send + Sync + 'static>>,
{
    fn from(error: E) -> Self {
        let error: Box<dyn StdError + Send + Sync + 'static> = error.into();
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !text.is_empty() && !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Self::new(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot load the plan")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("cannot load the plan: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn sources_are_appended_once() {
        let io = || std::io::Error::other("disk on fire");
        assert_eq!(
            PluginError::from(Outer(io())).message(),
            "cannot load the plan: disk on fire"
        );
        assert_eq!(
            PluginError::from(Repeats(io())).message(),
            "cannot load the plan: disk on fire"
        );
    }

    #[test]
    fn messages_and_std_view_agree() {
        let error = PluginError::from(String::from("nope"));
        assert_eq!(error.to_string(), "nope");
        let as_std: &(dyn StdError + Send + Sync) = error.as_ref();
        assert_eq!(as_std.to_string(), "nope");
    }
}
