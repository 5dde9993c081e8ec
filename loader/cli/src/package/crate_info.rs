//! What `pack` reads of the tool's crate: its name, version, description and authors, from
//! its `Cargo.toml` through `cargo metadata` (cargo's own reading of the manifest, workspace
//! inheritance included), so a packed tool says what its crate says.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::CliError;

/// The crate a `.xcsh-plugin` folder was built from, as its manifest describes it.
#[derive(Debug, Clone)]
pub struct CrateInfo {
    pub version: String,
    pub description: String,
    /// The first author: `Name <email>` or `Name`.
    pub author: String,
    pub license: Option<String>,
    pub repository: Option<String>,
    pub homepage: Option<String>,
    pub keywords: Vec<String>,
    /// `[package.metadata.xcsh] npm-name`: the npm package's name (`@scope/name`); the
    /// crate's name otherwise.
    pub npm_name: String,
}

/// The `Cargo.toml` for `folder`: `explicit`, or the first found going up from the folder's
/// parent (`dist/NAME.xcsh-plugin` sits in the crate's directory).
pub fn find_manifest(folder: &Path, explicit: Option<&Path>) -> Result<PathBuf, CliError> {
    if let Some(path) = explicit {
        return if path.is_file() {
            Ok(path.to_owned())
        } else {
            Err(CliError::Usage(format!(
                "--manifest-path {}: no such file",
                path.display()
            )))
        };
    }
    let start = folder.parent().unwrap_or(folder);
    start
        .ancestors()
        .map(|dir| dir.join("Cargo.toml"))
        .find(|manifest| manifest.is_file())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "no Cargo.toml above {}: pack reads the tool's name, version, author and \
                 description from its crate; pass --manifest-path PATH",
                folder.display()
            ))
        })
}

/// Read `manifest` with `cargo metadata`, and refuse what a package needs but it lacks.
pub fn read(manifest: &Path) -> Result<CrateInfo, CliError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .map_err(|e| {
            CliError::Failure(format!(
                "cannot run cargo to read {}: {e} (pack needs cargo on PATH)",
                manifest.display()
            ))
        })?;
    if !output.status.success() {
        return Err(CliError::Failure(format!(
            "cargo metadata could not read {}: {}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        CliError::Failure(format!("cargo metadata gave output that is not JSON: {e}"))
    })?;
    let canonical = dunce::canonicalize(manifest).unwrap_or_else(|_| manifest.to_owned());
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let package = packages
        .iter()
        .find(|package| {
            package["manifest_path"]
                .as_str()
                .is_some_and(|path| Path::new(path) == canonical)
        })
        .or_else(|| packages.first())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "{} is a workspace without a package of its own; pass the tool crate's \
                 manifest with --manifest-path",
                manifest.display()
            ))
        })?;
    from_package(manifest, package)
}

fn text(value: &serde_json::Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A [`CrateInfo`] from one package of `cargo metadata`'s output.
pub fn from_package(manifest: &Path, package: &serde_json::Value) -> Result<CrateInfo, CliError> {
    let missing = |field: &str, example: &str| {
        CliError::Usage(format!(
            "{}: `{field}` is missing from [package]; MCP bundles and npm packages need it \
             (add {example}); nothing was written",
            manifest.display()
        ))
    };
    let name = text(&package["name"]).ok_or_else(|| missing("name", "name = \"my-tool\""))?;
    let version =
        text(&package["version"]).ok_or_else(|| missing("version", "version = \"0.1.0\""))?;
    let description = text(&package["description"])
        .ok_or_else(|| missing("description", "description = \"What the tool does\""))?;
    let author = package["authors"]
        .as_array()
        .and_then(|authors| authors.iter().find_map(text))
        .ok_or_else(|| missing("authors", "authors = [\"Your Name <you@example.com>\"]"))?;
    let npm_name = match &package["metadata"]["xcsh"]["npm-name"] {
        serde_json::Value::Null => name,
        value => {
            let npm_name = text(value).unwrap_or_default();
            check_npm_name(&npm_name).map_err(|cause| {
                CliError::Usage(format!(
                    "{}: [package.metadata.xcsh] npm-name {npm_name:?}: {cause}",
                    manifest.display()
                ))
            })?;
            npm_name
        }
    };
    check_npm_name(&npm_name).map_err(|cause| {
        CliError::Usage(format!(
            "{}: the crate's name {npm_name:?} is not an npm package name ({cause}); set \
             [package.metadata.xcsh] npm-name",
            manifest.display()
        ))
    })?;
    Ok(CrateInfo {
        version,
        description,
        author,
        license: text(&package["license"]),
        repository: text(&package["repository"]),
        homepage: text(&package["homepage"]),
        keywords: package["keywords"]
            .as_array()
            .map(|words| words.iter().filter_map(text).collect())
            .unwrap_or_default(),
        npm_name,
    })
}

/// npm's rules for a package name: lower case, URL-safe, at most 214 characters, optionally
/// `@scope/name`.
pub fn check_npm_name(name: &str) -> Result<(), String> {
    let valid_part = |part: &str| {
        !part.is_empty()
            && !part.starts_with(['.', '_'])
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._~".contains(c))
    };
    if name.len() > 214 {
        return Err("longer than 214 characters".to_owned());
    }
    let ok = match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, rest)| valid_part(scope) && valid_part(rest)),
        None => valid_part(name),
    };
    if ok {
        Ok(())
    } else {
        Err(
            "use lower-case letters, digits, '-', '.', '_' or '~', optionally as @scope/name"
                .to_owned(),
        )
    }
}

/// The name without its scope (`@t/hello` → `hello`): the `bin` command's name.
pub fn unscoped(npm_name: &str) -> &str {
    npm_name.rsplit('/').next().unwrap_or(npm_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn package() -> serde_json::Value {
        json!({"name": "git-cleanup", "version": "1.2.0", "description": "Delete merged branches",
               "authors": ["Ada <ada@example.com>"], "license": "MIT", "metadata": null})
    }

    #[test]
    fn reads_what_cargo_metadata_says() {
        let info = from_package(Path::new("Cargo.toml"), &package()).unwrap();
        assert_eq!(info.npm_name, "git-cleanup");
        assert_eq!(info.author, "Ada <ada@example.com>");
        let mut scoped = package();
        scoped["metadata"] = json!({"xcsh": {"npm-name": "@ada/git-cleanup"}});
        let info = from_package(Path::new("Cargo.toml"), &scoped).unwrap();
        assert_eq!(info.npm_name, "@ada/git-cleanup");
        assert_eq!(unscoped(&info.npm_name), "git-cleanup");
    }

    #[test]
    fn a_missing_author_or_description_is_named() {
        for field in ["authors", "description"] {
            let mut lacking = package();
            lacking.as_object_mut().unwrap().remove(field);
            let error = from_package(Path::new("/c/Cargo.toml"), &lacking).unwrap_err();
            assert!(
                error.message().contains(&format!("`{field}` is missing")),
                "{error:?}"
            );
        }
    }

    #[test]
    fn npm_names_are_checked() {
        assert!(check_npm_name("@t/hello-tool").is_ok());
        assert!(check_npm_name("Hello").is_err());
        assert!(check_npm_name("@t/").is_err());
        assert!(check_npm_name("a/b").is_err());
    }
}
