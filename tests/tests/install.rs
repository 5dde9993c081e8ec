//! Packing a native tool (`xcsh-plugins pack`) and installing it with `xcsh-plugins install`,
//! `update`, `remove` and `list --installed` (docs/guide/src/ship.md): from a folder archive, a
//! `.mcpb` bundle, an `https` URL with `--sha256`, and npm (a real local registry), with
//! signatures, refusals that change nothing, and updates killed at random points.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use xcsh_integration_tests::npm_registry::Registry;
use xcsh_integration_tests::packing::{
    assert_success, cli, foreign_tool_crate, pack, tool_crate, written,
};

const HOST: &str = xcsh_loader::platform::HOST_TARGET;

fn os<'a>(args: &[&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(|arg| OsStr::new(*arg)).collect()
}

fn run(home: &Path, args: &[&str]) -> std::process::Output {
    cli(home, &os(args))
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `run`, which must succeed; its stdout.
fn ok(home: &Path, args: &[&str]) -> String {
    let output = run(home, args);
    assert_success(&args.join(" "), &output);
    stdout(&output)
}

/// `run`, which must fail; its stderr.
fn refused(home: &Path, args: &[&str]) -> String {
    let output = run(home, args);
    assert!(
        !output.status.success(),
        "{} succeeded but should not have:\n{}",
        args.join(" "),
        stdout(&output)
    );
    stderr(&output)
}

fn user_tools(home: &Path) -> PathBuf {
    home.join(".xcsh/agent/tools")
}

/// Everything under `dir`, relative, sorted (what an install left).
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    fn walk(base: &Path, dir: &Path, found: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            found.push(path.strip_prefix(base).unwrap().display().to_string());
            if path.is_dir() {
                walk(base, &path, found);
            }
        }
    }
    walk(dir, dir, &mut found);
    found.sort();
    found
}

/// A packed `hello-tool` at `version` in `root/VERSION`: the pack's output directory.
fn packed(home: &Path, root: &Path, version: &str, extra: &[&str]) -> PathBuf {
    let folder = tool_crate(
        &root.join(version),
        "hello-tool",
        version,
        "@t/hello-tool",
        &[],
    );
    let out = root.join(version).join("out");
    pack(home, &folder, &out, extra);
    out
}

fn archive_of(out: &Path) -> String {
    written(out, ".xcsh-plugin.tar.gz")[0].display().to_string()
}

fn read_tgz_file(tgz: &Path, name: &str) -> Vec<u8> {
    use std::io::Read;
    let bytes = std::fs::read(tgz).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_string_lossy() == name {
            let mut content = Vec::new();
            entry.read_to_end(&mut content).unwrap();
            return content;
        }
    }
    panic!("{name} not in {}", tgz.display())
}

#[test]
fn pack_writes_npm_packages_a_bundle_and_the_folder_archive() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let folder = tool_crate(
        root.path(),
        "hello-tool",
        "1.0.0",
        "@t/hello-tool",
        &["aarch64-apple-darwin"],
    );
    let out = root.path().join("out");
    let text = pack(home.path(), &folder, &out, &[]);
    assert!(
        text.contains("packed hello-tool 1.0.0 (@t/hello-tool): tools batch_rename_preview"),
        "{text}"
    );
    assert!(
        text.contains(
            "skipped: the .mcpb for aarch64-apple-darwin: no xcsh-plugins and xcsh-plugin-host"
        ),
        "{text}"
    );
    let tgz: Vec<String> = written(&out, ".tgz")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let key = xcsh_integration_tests::packing::npm_key();
    let mut expected = vec![
        "t-hello-tool-1.0.0.tgz".to_owned(),
        format!("t-hello-tool-{key}-1.0.0.tgz"),
        "t-hello-tool-darwin-arm64-1.0.0.tgz".to_owned(),
    ];
    expected.sort();
    assert_eq!(tgz, expected);
    assert_eq!(written(&out, ".mcpb").len(), 1, "one bundle, this host's");
    if let Some(mcpb) = xcsh_integration_tests::npm_registry::mcpb() {
        let unpacked = root.path().join("bundle");
        let status = std::process::Command::new("unzip")
            .arg("-q")
            .arg(&written(&out, ".mcpb")[0])
            .arg("manifest.json")
            .arg("-d")
            .arg(&unpacked)
            .status()
            .unwrap();
        assert!(status.success());
        let output = std::process::Command::new(mcpb)
            .arg("validate")
            .arg(unpacked.join("manifest.json"))
            .output()
            .unwrap();
        assert_success("mcpb validate", &output);
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(unpacked.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(
            manifest["author"],
            serde_json::json!({"name": "Test Author", "email": "test@example.com"})
        );
        assert_eq!(
            manifest["description"],
            "Rename files in batches, previewed first"
        );
    }
    assert_eq!(written(&out, ".xcsh-plugin.tar.gz").len(), 1);

    let main: serde_json::Value = serde_json::from_slice(&read_tgz_file(
        &out.join("npm/t-hello-tool-1.0.0.tgz"),
        "package/package.json",
    ))
    .unwrap();
    assert_eq!(main["name"], "@t/hello-tool");
    assert_eq!(main["omp"]["tools"], "index.cjs");
    assert_eq!(main["omp"]["extensions"], serde_json::json!(["index.cjs"]));
    assert_eq!(main["bin"]["hello-tool"], "bin.js");
    assert_eq!(main["author"], "Test Author <test@example.com>");
    let binding: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            xcsh_integration_tests::workspace_root().join("bindings/node/package.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        main["dependencies"]["@xcsh/native-plugins"],
        binding["version"]
    );
    let optional: Vec<&String> = main["optionalDependencies"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(optional.len(), 2, "{optional:?}");
    let entry = String::from_utf8(read_tgz_file(
        &out.join("npm/t-hello-tool-1.0.0.tgz"),
        "package/index.cjs",
    ))
    .unwrap();
    assert!(
        entry.contains("require(\"@xcsh/native-plugins\").toolPackage(__dirname)"),
        "{entry}"
    );
    let manifest: serde_json::Value = serde_json::from_slice(&read_tgz_file(
        &out.join("npm/t-hello-tool-1.0.0.tgz"),
        "package/xcsh-tool.json",
    ))
    .unwrap();
    assert_eq!(manifest["tools"][0]["name"], "batch_rename_preview");
    assert_eq!(
        manifest["platforms"][HOST]["package"],
        format!("@t/hello-tool-{key}")
    );

    let darwin: serde_json::Value = serde_json::from_slice(&read_tgz_file(
        &out.join("npm/t-hello-tool-darwin-arm64-1.0.0.tgz"),
        "package/package.json",
    ))
    .unwrap();
    assert_eq!(darwin["os"], serde_json::json!(["darwin"]));
    assert_eq!(darwin["cpu"], serde_json::json!(["arm64"]));
    assert!(darwin.get("libc").is_none());
    let linux: serde_json::Value = serde_json::from_slice(&read_tgz_file(
        &out.join(format!("npm/t-hello-tool-{key}-1.0.0.tgz")),
        "package/package.json",
    ))
    .unwrap();
    assert_eq!(linux["libc"], serde_json::json!(["glibc"]));

    // Packing again gives the same bytes.
    let again = root.path().join("again");
    pack(home.path(), &folder, &again, &[]);
    for name in [
        "npm/t-hello-tool-1.0.0.tgz",
        "hello-tool-1.0.0.xcsh-plugin.tar.gz",
    ] {
        assert_eq!(
            std::fs::read(out.join(name)).unwrap(),
            std::fs::read(again.join(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn pack_refuses_a_crate_without_author_or_a_folder_without_this_hosts_library() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let folder = tool_crate(root.path(), "hello-tool", "1.0.0", "@t/hello-tool", &[]);
    let manifest = root.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("authors = [\"Test Author <test@example.com>\"]\n", ""),
    )
    .unwrap();
    let out = root.path().join("out");
    let error = refused(
        home.path(),
        &[
            "pack",
            folder.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        error.contains("`authors` is missing from [package]"),
        "{error}"
    );
    assert!(!out.exists(), "nothing was written");

    let foreign = tempfile::tempdir().unwrap();
    let folder = foreign_tool_crate(
        foreign.path(),
        "far-tool",
        "@t/far-tool",
        "aarch64-apple-darwin",
    );
    let error = refused(home.path(), &["pack", folder.to_str().unwrap()]);
    assert!(
        error.contains("the tool does not load on this host"),
        "{error}"
    );
}

#[test]
fn install_update_and_remove_from_archives_and_bundles() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let v1 = packed(home.path(), root.path(), "1.0.0", &[]);
    let v2 = packed(home.path(), root.path(), "1.0.1", &[]);

    let text = ok(home.path(), &["install", &archive_of(&v1)]);
    assert!(
        text.contains("installed @t/hello-tool 1.0.0 into"),
        "{text}"
    );
    assert!(text.contains("sha256:"), "{text}");
    let installed = user_tools(home.path()).join("hello-tool.xcsh-plugin");
    assert!(installed
        .join(HOST)
        .join(xcsh_integration_tests::lib_name("batch_rename"))
        .is_file());
    let listed = ok(home.path(), &["list", "--installed"]);
    assert!(
        listed.contains("@t/hello-tool 1.0.0 (hello-tool): tools batch_rename_preview"),
        "{listed}"
    );
    // It loads from the user's directory like any plugin there.
    let tools = ok(home.path(), &["list", "--json"]);
    assert!(tools.contains("\"batch_rename_preview\""), "{tools}");

    let text = ok(home.path(), &["install", &archive_of(&v2)]);
    assert!(
        text.contains("updated @t/hello-tool 1.0.0 -> 1.0.1"),
        "{text}"
    );
    let text = ok(home.path(), &["update", "hello-tool"]);
    assert!(text.contains("@t/hello-tool 1.0.1 is up to date"), "{text}");

    let text = ok(home.path(), &["remove", "@t/hello-tool"]);
    assert!(text.contains("removed @t/hello-tool 1.0.1"), "{text}");
    assert!(!installed.exists());
    assert_eq!(
        tree(&user_tools(home.path())),
        Vec::<String>::new(),
        "nothing left behind"
    );

    // A bundle, into a project.
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let bundle = written(&v1, ".mcpb")[0].display().to_string();
    let text = ok(
        home.path(),
        &[
            "install",
            &bundle,
            "--project",
            "--cwd",
            project.to_str().unwrap(),
        ],
    );
    assert!(text.contains("installed @t/hello-tool 1.0.0"), "{text}");
    // Project plugins load only when trusted: install pinned exactly these bytes.
    let tools = ok(
        home.path(),
        &["list", "--json", "--cwd", project.to_str().unwrap()],
    );
    assert!(tools.contains("\"batch_rename_preview\""), "{tools}");
    let listed = ok(
        home.path(),
        &["list", "--installed", "--cwd", project.to_str().unwrap()],
    );
    assert!(
        listed.contains(".xcsh/tools/hello-tool.xcsh-plugin"),
        "{listed}"
    );
    ok(
        home.path(),
        &[
            "remove",
            "hello-tool",
            "--project",
            "--cwd",
            project.to_str().unwrap(),
        ],
    );
    let trust =
        std::fs::read_to_string(home.path().join(".xcsh/agent/trusted-plugins.json")).unwrap();
    assert!(
        !trust.contains("hello-tool.xcsh-plugin"),
        "its pin is gone: {trust}"
    );
}

#[test]
fn refusals_install_nothing() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let v1 = packed(home.path(), root.path(), "1.0.0", &[]);
    let tools = user_tools(home.path());

    // A wrong checksum.
    let error = refused(
        home.path(),
        &["install", &archive_of(&v1), "--sha256", &"0".repeat(64)],
    );
    assert!(error.contains("checksum mismatch"), "{error}");

    // No library for this platform.
    let far = root.path().join("far");
    let folder = foreign_tool_crate(&far, "far-tool", "@t/far-tool", "aarch64-apple-darwin");
    // Packed by hand (pack itself needs this host's library to list the tools): the archive
    // of a folder whose manifest lists only aarch64-apple-darwin.
    let manifest = serde_json::json!({
        "manifestVersion": 1, "plugin": "far-tool", "version": "1.0.0", "description": "d",
        "author": "a", "npmName": "@t/far-tool", "tools": [], "binding": "0.1.0",
        "platforms": {"aarch64-apple-darwin": {"library": "libbatch_rename.dylib", "package": "@t/far-tool-darwin-arm64"}}
    });
    std::fs::write(folder.join("xcsh-tool.json"), manifest.to_string()).unwrap();
    let archive = far.join("far-tool-1.0.0.xcsh-plugin.tar.gz");
    tar(&far.join("dist"), "far-tool.xcsh-plugin", &archive);
    let error = refused(home.path(), &["install", archive.to_str().unwrap()]);
    assert!(
        error.contains(&format!(
            "no library for this platform ({HOST}); it has: aarch64-apple-darwin"
        )),
        "{error}"
    );

    // No manifest.
    std::fs::remove_file(folder.join("xcsh-tool.json")).unwrap();
    tar(&far.join("dist"), "far-tool.xcsh-plugin", &archive);
    let error = refused(home.path(), &["install", archive.to_str().unwrap()]);
    assert!(error.contains("no xcsh-tool.json in it"), "{error}");

    // An entry escaping its folder, and a link out.
    let slip = root.path().join("slip");
    std::fs::create_dir_all(slip.join("hello-tool.xcsh-plugin")).unwrap();
    std::fs::write(slip.join("evil"), "x").unwrap();
    let archive = root.path().join("slip.xcsh-plugin.tar.gz");
    // Written by Python's tarfile, which keeps the name as given (GNU tar normalises it).
    let script = "import sys, tarfile, io\n\
        with tarfile.open(sys.argv[1], 'w:gz') as archive:\n\
        \x20   info = tarfile.TarInfo('hello-tool.xcsh-plugin/../../evil'); info.size = 1\n\
        \x20   archive.addfile(info, io.BytesIO(b'x'))\n";
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&archive)
        .status()
        .unwrap();
    assert!(status.success());
    let error = refused(home.path(), &["install", archive.to_str().unwrap()]);
    assert!(error.contains("escapes its folder"), "{error}");
    std::os::unix::fs::symlink(
        "/etc/passwd",
        slip.join("hello-tool.xcsh-plugin/xcsh-tool.json"),
    )
    .unwrap();
    tar(&slip, "hello-tool.xcsh-plugin", &archive);
    let error = refused(home.path(), &["install", archive.to_str().unwrap()]);
    assert!(error.contains("links are refused"), "{error}");

    // An archive that would unpack past the size cap (a header claiming 600 MiB).
    let bomb = root.path().join("bomb.xcsh-plugin.tar.gz");
    let script = "import sys, tarfile, gzip\n\
        info = tarfile.TarInfo('hello-tool.xcsh-plugin/xcsh-tool.json'); info.size = 600 * 1024 * 1024\n\
        open(sys.argv[1], 'wb').write(gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT)))\n";
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&bomb)
        .status()
        .unwrap();
    assert!(status.success());
    let error = refused(home.path(), &["install", bomb.to_str().unwrap()]);
    assert!(
        error.contains("over the 536870912-byte cap once unpacked"),
        "{error}"
    );

    // A tool name another installed tool has.
    ok(home.path(), &["install", &archive_of(&v1)]);
    let other = root.path().join("other");
    let folder = tool_crate(&other, "other-tool", "1.0.0", "@t/other-tool", &[]);
    pack(home.path(), &folder, &other.join("out"), &[]);
    let error = refused(home.path(), &["install", &archive_of(&other.join("out"))]);
    assert!(
        error.contains("Tool name \"batch_rename_preview\" conflicts with existing tool"),
        "{error}"
    );
    let left: Vec<String> = tree(&tools)
        .into_iter()
        .filter(|p| !p.starts_with("hello-tool.xcsh-plugin"))
        .collect();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "only the first install is there"
    );
}

/// `tar -czf ARCHIVE -C DIR NAME`.
fn tar(dir: &Path, name: &str, archive: &Path) {
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(archive)
        .arg("-C")
        .arg(dir)
        .arg(name)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn signatures_are_verified_and_the_publisher_key_pinned() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let keys_a = root.path().join("key-a");
    let keys_b = root.path().join("key-b");
    let text = ok(home.path(), &["keygen", keys_a.to_str().unwrap()]);
    let key_a = text
        .lines()
        .find_map(|l| l.strip_prefix("publisher key: "))
        .unwrap()
        .to_owned();
    ok(home.path(), &["keygen", keys_b.to_str().unwrap()]);
    let secret_a = keys_a.join("xcsh-sign.key");
    let secret_b = keys_b.join("xcsh-sign.key");
    let v1 = packed(
        home.path(),
        root.path(),
        "1.0.0",
        &["--sign", secret_a.to_str().unwrap()],
    );
    let text = ok(home.path(), &["install", &archive_of(&v1)]);
    assert!(
        text.contains(&format!("signed by publisher key {key_a} (pinned)")),
        "{text}"
    );
    let trust =
        std::fs::read_to_string(home.path().join(".xcsh/agent/trusted-plugins.json")).unwrap();
    assert!(trust.contains(&key_a), "{trust}");

    // Signed by another key: refused, then accepted explicitly.
    let v2 = packed(
        home.path(),
        root.path(),
        "1.0.1",
        &["--sign", secret_b.to_str().unwrap()],
    );
    let error = refused(home.path(), &["install", &archive_of(&v2)]);
    assert!(error.contains("not by the pinned publisher key"), "{error}");
    assert!(error.contains("--accept-new-key"), "{error}");
    // Unsigned after signed.
    let v3 = packed(home.path(), root.path(), "1.0.2", &[]);
    let error = refused(home.path(), &["install", &archive_of(&v3)]);
    assert!(
        error.contains("unsigned, but its earlier versions were signed"),
        "{error}"
    );
    let listed = ok(home.path(), &["list", "--installed"]);
    assert!(
        listed.contains("@t/hello-tool 1.0.0"),
        "still the first: {listed}"
    );
    let text = ok(
        home.path(),
        &["install", &archive_of(&v2), "--accept-new-key"],
    );
    assert!(
        text.contains("updated @t/hello-tool 1.0.0 -> 1.0.1"),
        "{text}"
    );

    // A library changed after signing: a bad signature.
    let v4 = packed(
        home.path(),
        root.path(),
        "1.0.3",
        &["--sign", secret_b.to_str().unwrap()],
    );
    let unpacked = root.path().join("tampered");
    std::fs::create_dir_all(&unpacked).unwrap();
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(archive_of(&v4))
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(status.success());
    let library = unpacked
        .join("hello-tool.xcsh-plugin")
        .join(HOST)
        .join(xcsh_integration_tests::lib_name("batch_rename"));
    let mut bytes = std::fs::read(&library).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&library, bytes).unwrap();
    let archive = root.path().join("tampered-1.0.3.xcsh-plugin.tar.gz");
    tar(&unpacked, "hello-tool.xcsh-plugin", &archive);
    let error = refused(home.path(), &["install", archive.to_str().unwrap()]);
    assert!(error.contains("bad signature"), "{error}");
    let listed = ok(home.path(), &["list", "--installed"]);
    assert!(listed.contains("@t/hello-tool 1.0.1"), "{listed}");
}

#[test]
fn an_update_killed_at_any_point_leaves_one_working_version() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let v1 = packed(home.path(), root.path(), "1.0.0", &[]);
    let v2 = packed(home.path(), root.path(), "1.0.1", &[]);
    // Installed from one path whose content the rounds change: `update` fetches it again.
    let current = root.path().join("current.xcsh-plugin.tar.gz");
    std::fs::copy(archive_of(&v1), &current).unwrap();
    ok(home.path(), &["install", current.to_str().unwrap()]);
    let cli_path = xcsh_integration_tests::artifacts().cli();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    // How long one whole update takes here: the kills land anywhere in it.
    std::fs::copy(archive_of(&v2), &current).unwrap();
    let started = std::time::Instant::now();
    ok(home.path(), &["update", "hello-tool"]);
    let whole = started.elapsed().as_millis() as u64;
    let mut killed = 0;
    for round in 0..12u64 {
        std::fs::copy(archive_of(if round % 2 == 0 { &v1 } else { &v2 }), &current).unwrap();
        let mut child = std::process::Command::new(&cli_path)
            .args(["update", "hello-tool"])
            .env("HOME", home.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Somewhere between its start and well after its end (an update takes tens of ms).
        let delay = (seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(round * 1442695040888963407)
            >> 33)
            % (whole + whole / 5 + 1);
        std::thread::sleep(std::time::Duration::from_millis(delay));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        // Whatever was interrupted: one version loads, and says which it is.
        let listed = ok(home.path(), &["list", "--installed"]);
        assert!(
            listed.contains("@t/hello-tool 1.0.0") || listed.contains("@t/hello-tool 1.0.1"),
            "round {round}: {listed}"
        );
        let tools = ok(home.path(), &["list", "--json"]);
        assert!(
            tools.contains("\"batch_rename_preview\""),
            "round {round} (killed after {delay} ms): {tools}"
        );
        let folders: Vec<String> = tree(&user_tools(home.path()))
            .into_iter()
            .filter(|p| p.ends_with(".xcsh-plugin"))
            .collect();
        assert_eq!(folders, ["hello-tool.xcsh-plugin"], "round {round}");
    }
    eprintln!("{killed} of 12 updates were killed while running (a whole update: {whole} ms)");
    // The next install settles what was left, and works.
    let text = ok(home.path(), &["install", &archive_of(&v2)]);
    assert!(text.contains("1.0.1"), "{text}");
    let left: Vec<String> = tree(&user_tools(home.path()))
        .into_iter()
        .filter(|p| p.starts_with(".xcsh-installing"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "no staged folder left");
}

#[test]
fn an_https_download_needs_and_checks_its_sha256() {
    let Some(server) = HttpsServer::start() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let v1 = packed(home.path(), root.path(), "1.0.0", &[]);
    let archive = PathBuf::from(archive_of(&v1));
    std::fs::copy(
        &archive,
        server.dir().join("hello-tool-1.0.0.xcsh-plugin.tar.gz"),
    )
    .unwrap();
    let url = format!("{}/hello-tool-1.0.0.xcsh-plugin.tar.gz", server.url());
    let sha256 = xcsh_loader::trust::sha256_hex(&std::fs::read(&archive).unwrap());
    let with_ca = |args: &[&str]| {
        std::process::Command::new(xcsh_integration_tests::artifacts().cli())
            .args(args)
            .env("HOME", home.path())
            .env("CURL_CA_BUNDLE", server.certificate())
            .output()
            .unwrap()
    };
    let output = with_ca(&["install", &url]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("needs --sha256"),
        "{}",
        stderr(&output)
    );
    let output = with_ca(&["install", &url, "--sha256", &"a".repeat(64)]);
    assert!(
        stderr(&output).contains("checksum mismatch"),
        "{}",
        stderr(&output)
    );
    let output = with_ca(&["install", &url, "--sha256", &sha256]);
    assert_success("install URL", &output);
    assert!(
        stdout(&output).contains(&format!("from {url}, sha256:{sha256}")),
        "{}",
        stdout(&output)
    );
    let output = with_ca(&["update"]);
    assert!(
        stderr(&output).contains("installed from a URL with a checksum"),
        "{}",
        stderr(&output)
    );
    let output = with_ca(&["remove", "hello-tool"]);
    assert_success("remove", &output);
    assert_eq!(tree(&user_tools(home.path())), Vec::<String>::new());
}

/// Python's `http.server` behind TLS with a certificate made for it (`openssl req`).
struct HttpsServer {
    dir: tempfile::TempDir,
    child: std::process::Child,
    port: u16,
}

impl HttpsServer {
    fn start() -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
            ])
            .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
            .arg("-keyout")
            .arg(dir.path().join("key.pem"))
            .arg("-out")
            .arg(dir.path().join("cert.pem"))
            .output();
        if !made.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: openssl cannot make a certificate here");
            return None;
        }
        std::fs::create_dir_all(dir.path().join("files")).unwrap();
        let script = "import http.server, ssl, sys, functools\n\
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n\
            server = http.server.HTTPServer(('127.0.0.1', 0), handler)\n\
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
            context.load_cert_chain(sys.argv[2], sys.argv[3])\n\
            server.socket = context.wrap_socket(server.socket, server_side=True)\n\
            print(server.server_address[1], flush=True)\n\
            server.serve_forever()\n";
        let mut child = std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(dir.path().join("files"))
            .arg(dir.path().join("cert.pem"))
            .arg(dir.path().join("key.pem"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let port = line.trim().parse().unwrap();
        Some(HttpsServer { dir, child, port })
    }

    fn dir(&self) -> PathBuf {
        self.dir.path().join("files")
    }

    fn certificate(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn install_from_npm_checks_integrity_and_updates() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let v1 = packed(home.path(), root.path(), "1.0.0", &[]);
    for tarball in written(&v1, ".tgz") {
        registry.publish(&tarball);
    }
    let npm = |args: &[&str]| {
        std::process::Command::new(xcsh_integration_tests::artifacts().cli())
            .args(args)
            .env("HOME", home.path())
            .envs(registry.env())
            .output()
            .unwrap()
    };
    let output = npm(&["install", "npm:@t/hello-tool"]);
    assert_success("install npm:", &output);
    let integrity = registry.view("@t/hello-tool")["versions"]["1.0.0"]["dist"]["integrity"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stdout(&output).contains(&format!("from npm:@t/hello-tool, {integrity}")),
        "{}",
        stdout(&output)
    );

    let v2 = packed(home.path(), root.path(), "1.1.0", &[]);
    for tarball in written(&v2, ".tgz") {
        registry.publish(&tarball);
    }
    let output = npm(&["update"]);
    assert_success("update", &output);
    assert!(
        stdout(&output).contains("updated @t/hello-tool 1.0.0 -> 1.1.0"),
        "{}",
        stdout(&output)
    );

    // A tarball changed in the registry's storage after publishing: its integrity fails.
    let v3 = packed(home.path(), root.path(), "1.2.0", &[]);
    for tarball in written(&v3, ".tgz") {
        registry.publish(&tarball);
    }
    let stored = registry
        .storage()
        .join("@t/hello-tool/hello-tool-1.2.0.tgz");
    let mut bytes = std::fs::read(&stored).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&stored, bytes).unwrap();
    let output = npm(&["update"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("integrity"), "{}", stderr(&output));
    let listed = stdout(&npm(&["list", "--installed"]));
    assert!(listed.contains("@t/hello-tool 1.1.0"), "{listed}");

    let output = npm(&["remove", "hello-tool"]);
    assert_success("remove", &output);

    // An unreachable registry.
    let output = std::process::Command::new(xcsh_integration_tests::artifacts().cli())
        .args(["install", "npm:@t/hello-tool"])
        .env("HOME", home.path())
        .envs(registry.env())
        .env("NPM_CONFIG_REGISTRY", "http://127.0.0.1:9/")
        .env("NPM_CONFIG_FETCH_RETRIES", "0")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("unreachable"),
        "{}",
        stderr(&output)
    );
    assert_eq!(tree(&user_tools(home.path())), Vec::<String>::new());
}

#[test]
fn install_builds_a_plugin_crate_with_cargo() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let crate_dir = root.path().join("crate-tool");
    let output = std::process::Command::new(xcsh_integration_tests::artifacts().cli())
        .args(["new", "crate-tool", "--path"])
        .arg(&crate_dir)
        .output()
        .unwrap();
    assert_success("new crate-tool", &output);
    // An author identity, as `new` writes it from git's when there is one.
    let manifest = crate_dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = text.replace(
        "# authors = [\"Your Name <you@example.com>\"]",
        "authors = [\"Crate Author <crate@example.com>\"]",
    );
    std::fs::write(&manifest, text).unwrap();
    let output = std::process::Command::new(xcsh_integration_tests::artifacts().cli())
        .args(["install"])
        .arg(&crate_dir)
        .env("HOME", home.path())
        // Shared with the guide's ship test (ship_a_plugin.rs): the crate's dependencies are built once.
        .env(
            "CARGO_TARGET_DIR",
            xcsh_integration_tests::workspace_root().join("target/ship-a-plugin"),
        )
        .output()
        .unwrap();
    assert_success("install CRATE", &output);
    let text = stdout(&output);
    assert!(text.contains("installed crate-tool 0.1.0"), "{text}");
    assert!(text.contains("tools: crate_tool"), "{text}");
    assert!(text.contains("built from source, sha256:"), "{text}");
    let tools = ok(home.path(), &["list", "--json"]);
    assert!(tools.contains("\"crate_tool\""), "{tools}");
}

#[test]
fn bundles_signed_with_mcpbs_own_scheme_still_install() {
    let Some(mcpb) = xcsh_integration_tests::npm_registry::mcpb() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=xcsh test publisher", "-keyout"])
        .arg(root.path().join("key.pem"))
        .arg("-out")
        .arg(root.path().join("cert.pem"))
        .output()
        .unwrap();
    assert_success("openssl req", &made);
    let folder = tool_crate(
        &root.path().join("tool"),
        "hello-tool",
        "1.0.0",
        "@t/hello-tool",
        &[],
    );
    let out = root.path().join("out");
    let cert = root.path().join("cert.pem");
    let key = root.path().join("key.pem");
    let output = std::process::Command::new(xcsh_integration_tests::artifacts().cli())
        .arg("pack")
        .arg(&folder)
        .arg("--out")
        .arg(&out)
        .arg("--mcpb-cert")
        .arg(&cert)
        .arg("--mcpb-key")
        .arg(&key)
        .env("HOME", home.path())
        .env("XCSH_MCPB", &mcpb)
        .output()
        .unwrap();
    assert_success("pack --mcpb-cert", &output);
    let bundle = written(&out, ".mcpb").pop().unwrap();
    let bytes = std::fs::read(&bundle).unwrap();
    let tail = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(64)..]).into_owned();
    assert!(
        tail.contains("MCPB_SIG_END"),
        "MCPB's signature block ends the bundle"
    );
    assert!(
        bytes.windows(11).any(|w| w == b"MCPB_SIG_V1"),
        "and starts with its marker"
    );
    let text = ok(home.path(), &["install", bundle.to_str().unwrap()]);
    assert!(text.contains("installed @t/hello-tool 1.0.0"), "{text}");
}
