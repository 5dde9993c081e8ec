//! [`PluginError`]: the one error type a tool author returns.

/// An error from plugin code: a factory, `execute`, `apply` or `reject`.
///
/// It carries a message for the model and the user; build one from a string, or let `?` convert
/// an I/O or JSON error.
///
/// ```
/// use xcsh_plugin_api::PluginError;
///
/// fn read(path: &str) -> Result<String, PluginError> {
///     if path.is_empty() {
///         return Err(PluginError::new("path must not be empty"));
///     }
///     Ok(std::fs::read_to_string(path)?)
/// }
/// assert_eq!(read("").unwrap_err().to_string(), "path must not be empty");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PluginError {
    message: String,
}

impl PluginError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<String> for PluginError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for PluginError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<std::io::Error> for PluginError {
    fn from(error: std::io::Error) -> Self {
        Self::new(error.to_string())
    }
}

impl From<serde_json::Error> for PluginError {
    fn from(error: serde_json::Error) -> Self {
        Self::new(error.to_string())
    }
}
