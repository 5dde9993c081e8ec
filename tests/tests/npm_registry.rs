//! The local npm registry the tests publish to and install from (`tests/src/npm_registry.rs`):
//! a real verdaccio, a package published with the real npm, its packument, and `npm install`
//! of it from that registry alone.
//!
//! Verdaccio is installed by `.ci/npm-registry` (run by `.ci/run`) into `target/npm-registry`.
//! Without it the test says so and passes, unless `XCSH_REQUIRE_NPM_REGISTRY=1` (set by
//! `.ci/run`) makes that a failure.

use std::path::Path;
use std::process::Command;

use xcsh_integration_tests::npm_registry::Registry;

/// A package directory `@t/hello` at `version` whose `index.js` exports `greeting`.
fn package(dir: &Path, version: &str, greeting: &str) {
    let manifest = serde_json::json!({
        "name": "@t/hello",
        "version": version,
        "main": "index.js",
        "license": "MIT",
    });
    for (file, contents) in [
        ("package.json", manifest.to_string()),
        ("index.js", format!("module.exports = {greeting:?};\n")),
    ] {
        std::fs::write(dir.join(file), contents)
            .unwrap_or_else(|e| panic!("cannot write {file}: {e}"));
    }
}

#[test]
fn a_package_published_to_the_local_registry_installs_from_it() {
    let started = std::time::Instant::now();
    let Some(registry) = Registry::start() else {
        return;
    };
    eprintln!(
        "verdaccio at {} answered after {:?}",
        registry.url(),
        started.elapsed()
    );

    let source = tempfile::tempdir().unwrap();
    package(source.path(), "1.0.0", "hello 1.0.0");
    registry.publish(source.path());

    let packument = registry.view("@t/hello");
    assert_eq!(packument["name"], "@t/hello", "{packument:#}");
    assert_eq!(packument["dist-tags"]["latest"], "1.0.0", "{packument:#}");
    let dist = &packument["versions"]["1.0.0"]["dist"];
    let integrity = dist["integrity"].as_str().unwrap_or_default();
    assert!(integrity.starts_with("sha512-"), "{packument:#}");
    let tarball = dist["tarball"].as_str().unwrap_or_default();
    assert!(tarball.starts_with(&registry.url()), "{packument:#}");

    // Installed with the registry's environment alone (no --registry): what a child that is
    // given `env()` does.
    let project = tempfile::tempdir().unwrap();
    let installed = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "@t/hello"])
        .envs(registry.env())
        .current_dir(project.path())
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "npm install @t/hello failed\n--- stdout\n{}\n--- stderr\n{}\n{}",
        String::from_utf8_lossy(&installed.stdout),
        String::from_utf8_lossy(&installed.stderr),
        registry.log()
    );
    let module = project.path().join("node_modules/@t/hello");
    assert_eq!(
        std::fs::read_to_string(module.join("index.js")).unwrap(),
        "module.exports = \"hello 1.0.0\";\n"
    );
    let lock: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("package-lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        lock["packages"]["node_modules/@t/hello"]["integrity"], integrity,
        "{lock:#}"
    );

    // A second version, published from a tarball, becomes `latest`.
    let next = tempfile::tempdir().unwrap();
    package(next.path(), "1.0.1", "hello 1.0.1");
    let packed = Command::new("npm")
        .args(["pack", "--pack-destination"])
        .arg(next.path())
        .arg(next.path())
        .envs(registry.env())
        .current_dir(next.path())
        .output()
        .unwrap();
    assert!(
        packed.status.success(),
        "npm pack failed: {}",
        String::from_utf8_lossy(&packed.stderr)
    );
    let tgz = next.path().join("t-hello-1.0.1.tgz");
    assert!(tgz.is_file(), "npm pack wrote no {}", tgz.display());
    registry.publish(&tgz);

    let packument = registry.view("@t/hello");
    assert_eq!(packument["dist-tags"]["latest"], "1.0.1", "{packument:#}");
    let versions: Vec<&String> = packument["versions"]
        .as_object()
        .map(|v| v.keys().collect())
        .unwrap_or_default();
    assert_eq!(versions, ["1.0.0", "1.0.1"], "{packument:#}");
    assert!(
        packument["versions"]["1.0.1"]["dist"]["integrity"]
            .as_str()
            .is_some_and(|i| i.starts_with("sha512-")),
        "{packument:#}"
    );
}
