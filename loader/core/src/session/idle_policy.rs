//! When a session stops its idle plugin processes: the session-wide idle time, the
//! per-plugin overrides, and the command line's spelling of both (`--stop-idle-after 30s`,
//! `--stop-idle-after off`, `--stop-idle-after libfoo.so=5m`).
//!
//! The stopping itself is the isolation layer's (`isolate::idle`); this only decides, per
//! plugin file, how long its process may stay idle. The project has no per-plugin
//! configuration file, so an override names the plugin on the command line (or through
//! [`super::SessionBuilder::stop_idle_after_for`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default idle time before a plugin process is stopped (30 seconds).
pub const DEFAULT_STOP_IDLE_AFTER: Duration = Duration::from_secs(30);

/// Why a `--stop-idle-after` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid idle time {given:?}: use a number with ms, s, m or h (500ms, 30s, 5m), or off; \
     for one plugin, FILE=DURATION (libfoo.so=5m)"
)]
pub struct IdleTimeError {
    given: String,
}

/// One `--stop-idle-after` value: an idle time for every plugin, or for the plugin named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopIdleAfter {
    /// The plugin it is for (a file name, or a path), or `None` for every plugin.
    pub plugin: Option<String>,
    /// The idle time; `None` never stops.
    pub after: Option<Duration>,
}

impl std::str::FromStr for StopIdleAfter {
    type Err = IdleTimeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.rsplit_once('=') {
            Some((plugin, duration)) if !plugin.is_empty() => Ok(StopIdleAfter {
                plugin: Some(plugin.to_owned()),
                after: parse_idle_time(duration)?,
            }),
            Some(_) => Err(IdleTimeError {
                given: text.to_owned(),
            }),
            None => Ok(StopIdleAfter {
                plugin: None,
                after: parse_idle_time(text)?,
            }),
        }
    }
}

/// An idle time as the command line spells it: `500ms`, `30s`, `5m`, `1h` (a positive whole
/// number and a unit), or `off` (`None`: never stop).
pub fn parse_idle_time(text: &str) -> Result<Option<Duration>, IdleTimeError> {
    let error = || IdleTimeError {
        given: text.to_owned(),
    };
    let text = text.trim();
    if text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(error)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| error())?;
    let millis = match unit {
        "ms" => Some(number),
        "s" => number.checked_mul(1000),
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        _ => None,
    }
    .ok_or_else(error)?;
    if millis == 0 {
        return Err(error());
    }
    Ok(Some(Duration::from_millis(millis)))
}

/// Which plugin an override is for.
#[derive(Debug, Clone)]
enum Selector {
    /// A file name (`libfoo.so`): any plugin file of that name.
    FileName(String),
    /// A path: the plugin at that path (compared canonical when it exists).
    Path(PathBuf),
}

impl Selector {
    fn new(plugin: &str) -> Self {
        // `/` separates on Windows too (`C:/tools/foo.dll`).
        if plugin.contains('/') || plugin.contains(std::path::MAIN_SEPARATOR) {
            let path = PathBuf::from(plugin);
            Selector::Path(dunce::canonicalize(&path).unwrap_or(path))
        } else {
            Selector::FileName(plugin.to_owned())
        }
    }

    fn matches(&self, path: &Path) -> bool {
        match self {
            Selector::FileName(name) => path.file_name().is_some_and(|n| n == name.as_str()),
            Selector::Path(wanted) => wanted == path,
        }
    }
}

/// When a session's plugin processes are stopped while idle.
#[derive(Debug, Clone)]
pub(crate) struct IdlePolicy {
    /// Every plugin's idle time (`None`: never stop).
    default: Option<Duration>,
    /// Per-plugin idle times; the last one that matches wins.
    overrides: Vec<(Selector, Option<Duration>)>,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        Self {
            default: Some(DEFAULT_STOP_IDLE_AFTER),
            overrides: Vec::new(),
        }
    }
}

impl IdlePolicy {
    /// Every plugin's idle time, unless overridden for it.
    pub(crate) fn set_default(&mut self, after: Option<Duration>) {
        self.default = after;
    }

    /// The idle time of the plugin `plugin` names (a file name or a path).
    pub(crate) fn set_for(&mut self, plugin: &str, after: Option<Duration>) {
        self.overrides.push((Selector::new(plugin), after));
    }

    /// The idle time of the plugin at canonical `path` (`None`: never stopped).
    pub(crate) fn for_plugin(&self, path: &Path) -> Option<Duration> {
        self.overrides
            .iter()
            .rev()
            .find(|(selector, _)| selector.matches(path))
            .map_or(self.default, |(_, after)| *after)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

    use super::*;

    #[test]
    fn idle_times_parse_as_documented() {
        let ms = |n| Ok(Some(Duration::from_millis(n)));
        assert_eq!(parse_idle_time("500ms"), ms(500));
        assert_eq!(parse_idle_time("30s"), ms(30_000));
        assert_eq!(parse_idle_time("5m"), ms(300_000));
        assert_eq!(parse_idle_time("1h"), ms(3_600_000));
        assert_eq!(parse_idle_time("off"), Ok(None));
        for bad in ["", "30", "s", "0s", "-1s", "1.5s", "5 min", "never"] {
            assert!(parse_idle_time(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn a_value_may_name_one_plugin() {
        let value: StopIdleAfter = "libfoo.so=5m".parse().unwrap();
        assert_eq!(value.plugin.as_deref(), Some("libfoo.so"));
        assert_eq!(value.after, Some(Duration::from_secs(300)));
        let value: StopIdleAfter = "off".parse().unwrap();
        assert_eq!((value.plugin, value.after), (None, None));
        assert!("=5m".parse::<StopIdleAfter>().is_err());
        assert!("libfoo.so=soon".parse::<StopIdleAfter>().is_err());
    }

    #[test]
    fn the_last_matching_override_wins_and_others_keep_the_default() {
        let mut policy = IdlePolicy::default();
        policy.set_for("libfoo.so", Some(Duration::from_secs(300)));
        policy.set_for("/no/such/dir/libbar.so", None);
        let foo = Path::new("/plugins/libfoo.so");
        assert_eq!(policy.for_plugin(foo), Some(Duration::from_secs(300)));
        assert_eq!(policy.for_plugin(Path::new("/no/such/dir/libbar.so")), None);
        assert_eq!(
            policy.for_plugin(Path::new("/plugins/libbaz.so")),
            Some(DEFAULT_STOP_IDLE_AFTER)
        );
        policy.set_default(None);
        policy.set_for("libfoo.so", Some(Duration::from_secs(1)));
        assert_eq!(policy.for_plugin(foo), Some(Duration::from_secs(1)));
        assert_eq!(policy.for_plugin(Path::new("/plugins/libbaz.so")), None);
    }
}
