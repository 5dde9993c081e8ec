//! Plugins built for another platform are named before `dlopen`, and multi-platform plugin
//! folders (`*.xcsh-plugin`) load this host's library, on real files: an aarch64 Linux
//! library, a macOS library renamed `.so`, and a library that needs a newer glibc, each
//! refused with what it was built for and what this host runs, in `check` (with how to build
//! for this host), `list`, a session in both isolation modes, over MCP and in the Node binding;
//! a plugin folder through `--plugin`, `check`, `trust` and the binding's `plugins`.
//!
//! The foreign libraries are real cross builds of the sample plugin when `.ci/run` made them
//! (`XCSH_CROSS_PLUGIN_DIR/<triple>/libbatch_rename.{so,dylib}`; `XCSH_REQUIRE_CROSS_PLUGINS=1`
//! makes their absence a failure). Without them, stand-ins made from this host's build: its
//! ELF with the machine field set to aarch64, a Mach-O header for arm64, and its version needs
//! with the newest `GLIBC_2.x` renamed `GLIBC_2.99`.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
#![allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, still what clients show.

use std::path::{Path, PathBuf};
use std::process::Command;

use xcsh_integration_tests::mcp::{LogRecorder, McpServerProcess};
use xcsh_integration_tests::{artifacts, node, plugin};
use xcsh_loader::platform::{host_platform, HOST_TARGET};
use xcsh_loader::{Isolation, Session};

/// The aarch64 Linux target, or x86_64 Linux on an aarch64 host: another machine either way.
fn other_linux() -> (&'static str, &'static str) {
    if cfg!(target_arch = "aarch64") {
        ("x86_64-unknown-linux-gnu", "x86_64")
    } else {
        ("aarch64-unknown-linux-gnu", "aarch64")
    }
}

/// A real cross build of the sample plugin, when `.ci/run` made one.
fn cross_build(triple: &str, file: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("XCSH_CROSS_PLUGIN_DIR").map(PathBuf::from);
    let found = dir
        .map(|dir| dir.join(triple).join(file))
        .filter(|p| p.is_file());
    if found.is_none() && std::env::var_os("XCSH_REQUIRE_CROSS_PLUGINS").is_some() {
        panic!(
            "XCSH_REQUIRE_CROSS_PLUGINS is set but XCSH_CROSS_PLUGIN_DIR has no {triple}/{file}"
        );
    }
    found
}

/// One foreign library and the message it must get (after its path).
struct Foreign {
    path: PathBuf,
    message: String,
}

/// The three foreign libraries, in a private directory (plugin directories must not be
/// writable by others).
fn foreign_libraries(dir: &Path) -> Vec<Foreign> {
    let host = host_platform();
    let ours = std::fs::read(plugin("batch-rename")).unwrap();
    let (triple, arch) = other_linux();
    let elf = dir.join("libother_arch.so");
    match cross_build(triple, "libbatch_rename.so") {
        Some(real) => std::fs::copy(real, &elf).map(drop).unwrap(),
        None => {
            let mut bytes = ours.clone();
            let machine: u16 = if arch == "aarch64" { 183 } else { 62 };
            bytes[18..20].copy_from_slice(&machine.to_le_bytes());
            std::fs::write(&elf, bytes).unwrap();
        }
    }
    let macho = dir.join("libmacos.so");
    match cross_build("aarch64-apple-darwin", "libbatch_rename.dylib") {
        Some(real) => std::fs::copy(real, &macho).map(drop).unwrap(),
        None => {
            // mach_header_64: magic, CPU_TYPE_ARM64, subtype, MH_DYLIB, no load commands.
            let mut bytes = Vec::new();
            for word in [0xfeed_facf_u32, 0x0100_000c, 0, 6, 0, 0, 0, 0] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
            std::fs::write(&macho, bytes).unwrap();
        }
    }
    let glibc = dir.join("libnew_glibc.so");
    std::fs::write(&glibc, with_newest_glibc_renamed(&ours)).unwrap();
    let has = glibc_version();
    vec![
        Foreign {
            message: format!(
                "{} is an {arch} Linux library; this host is {host}",
                elf.display()
            ),
            path: elf,
        },
        Foreign {
            message: format!(
                "{} is a macOS arm64 library (Mach-O); this host is {host}",
                macho.display()
            ),
            path: macho,
        },
        Foreign {
            message: format!(
                "{} needs glibc 2.99; this system has glibc {has}",
                glibc.display()
            ),
            path: glibc,
        },
    ]
}

/// The running glibc's version, as `ldd --version` prints it.
fn glibc_version() -> String {
    let output = Command::new("ldd").arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next().unwrap();
    first.rsplit(' ').next().unwrap().trim().to_owned()
}

/// `library` with its newest `GLIBC_2.N` version need renamed `GLIBC_2.99` (same length or
/// padded with NULs in the string table): a library that needs a glibc no system has.
fn with_newest_glibc_renamed(library: &[u8]) -> Vec<u8> {
    let mut bytes = library.to_vec();
    let mut newest: Option<(u32, usize, usize)> = None;
    let needle = b"GLIBC_2.";
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(needle.len()).position(|w| w == needle) {
        let start = at + found;
        let digits = bytes[start + needle.len()..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = start + needle.len() + digits;
        if digits > 0 && bytes.get(end) == Some(&0) {
            let minor: u32 = std::str::from_utf8(&bytes[start + needle.len()..end])
                .unwrap()
                .parse()
                .unwrap();
            if newest.is_none_or(|(m, ..)| minor > m) {
                newest = Some((minor, start, end));
            }
        }
        at = end.max(start + 1);
    }
    let (_, start, end) = newest.expect("the sample plugin needs some GLIBC_2.x version");
    assert!(end - start >= 10, "GLIBC_2.N shorter than GLIBC_2.99");
    bytes[start..start + 10].copy_from_slice(b"GLIBC_2.99");
    for byte in &mut bytes[start + 10..end] {
        *byte = 0;
    }
    bytes
}

fn cli(cwd: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(artifacts().cli())
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn check_names_the_platform_and_says_how_to_build_for_this_host() {
    let dir = tempfile::tempdir().unwrap();
    for foreign in foreign_libraries(dir.path()) {
        let output = cli(
            dir.path(),
            &[
                "--json".as_ref(),
                "check".as_ref(),
                foreign.path.as_os_str(),
            ],
        );
        assert_eq!(output.status.code(), Some(1));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let problems = report["files"][0]["problems"].to_string();
        let cause = foreign
            .message
            .strip_prefix(&foreign.path.display().to_string())
            .unwrap()
            .trim_start()
            .to_owned();
        assert!(problems.contains(&cause), "{cause}\n{problems}");
        assert!(
            problems.contains(&format!("--target {HOST_TARGET}.2.17")),
            "{problems}"
        );
        assert!(
            !problems.contains("No such file"),
            "a file that exists is never reported missing: {problems}"
        );
    }
}

#[test]
fn list_and_sessions_in_both_isolation_modes_refuse_with_the_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = foreign_libraries(dir.path());
    let mut args: Vec<&std::ffi::OsStr> = vec!["list".as_ref(), "--no-default-dirs".as_ref()];
    for library in &foreign {
        args.push("--plugin".as_ref());
        args.push(library.path.as_os_str());
    }
    let listed = cli(dir.path(), &args);
    assert_eq!(listed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&listed.stderr);
    for library in &foreign {
        assert!(
            stderr.contains(&format!("load error: {}", library.message)),
            "{}\n{stderr}",
            library.message
        );
    }
    for isolation in [Isolation::Process, Isolation::InProcess] {
        let mut builder = Session::builder(dir.path())
            .default_dirs(false)
            .isolation(isolation);
        for library in &foreign {
            builder = builder.plugin(&library.path);
        }
        let session = builder.build();
        let errors: Vec<String> = session
            .load_errors()
            .iter()
            .map(ToString::to_string)
            .collect();
        let wanted: Vec<&str> = foreign.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(errors, wanted, "{isolation:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_gets_the_named_errors_as_load_messages() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = foreign_libraries(dir.path());
    let mut args: Vec<std::ffi::OsString> = vec![
        "--no-default-dirs".into(),
        "--cwd".into(),
        dir.path().into(),
    ];
    for library in &foreign {
        args.push("--plugin".into());
        args.push(library.path.clone().into());
    }
    let recorder = LogRecorder::default();
    let server = McpServerProcess::start_with_handler(args, recorder.clone()).await;
    let messages = recorder.wait_for(foreign.len()).await;
    let texts: Vec<&str> = messages
        .iter()
        .filter_map(|m| m.data["message"].as_str())
        .collect();
    for library in &foreign {
        assert!(
            texts.contains(&library.message.as_str()),
            "{}\n{texts:#?}",
            library.message
        );
    }
    server.stop().await;
}

#[test]
fn the_node_binding_reports_the_named_errors() {
    let Some(node_bin) = node::node() else {
        node::skipped("node");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let foreign = foreign_libraries(dir.path());
    let plugins: Vec<String> = foreign
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    let script = format!(
        r#"const {{ nativeToolFactory }} = require({package:?});
const {{ PendingActionStore, runtimeApi }} = require({seed:?});
(async () => {{
  for (const isolation of ["process", "in-process"]) {{
    const factory = nativeToolFactory({{ plugins: {plugins}, defaultDirs: false, isolation }});
    await factory(runtimeApi({cwd:?}, new PendingActionStore(), {{ warn() {{}} }}));
    console.log(JSON.stringify(factory.loadErrors.map((e) => e.message)));
    await factory.close();
  }}
  const folder = nativeToolFactory({{ plugins: [{folder:?}], defaultDirs: false }});
  const tools = await folder(runtimeApi({cwd:?}, new PendingActionStore(), {{ warn() {{}} }}));
  console.log(JSON.stringify({{ folder: tools.map((t) => t.name), errors: folder.loadErrors.length }}));
  await folder.close();
}})().catch((e) => {{ console.error(e); process.exit(1); }});"#,
        package = node::package_dir().display().to_string(),
        seed = node::package_dir()
            .join("examples/seed-runtime.js")
            .display()
            .to_string(),
        plugins = serde_json::to_string(&plugins).unwrap(),
        cwd = dir.path().display().to_string(),
        folder = plugin_folder(dir.path(), &foreign).display().to_string(),
    );
    let output = node::run(&node_bin, &["-e", &script], dir.path());
    node::assert_success("the binding's load", &output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let wanted: Vec<&str> = foreign.iter().map(|f| f.message.as_str()).collect();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    for line in &lines[..2] {
        assert_eq!(*line, serde_json::json!(wanted));
    }
    // A plugin folder in `plugins`: this host's library loads, the others are ignored.
    assert_eq!(
        lines[2],
        serde_json::json!({"folder": ["batch_rename_preview"], "errors": 0})
    );
}

/// A plugin folder holding this host's real sample plugin and the foreign libraries under
/// their own triples.
fn plugin_folder(parent: &Path, foreign: &[Foreign]) -> PathBuf {
    let folder = parent.join("batch-rename.xcsh-plugin");
    let place = |triple: &str, from: &Path, name: &str| {
        let dir = folder.join(triple);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(from, dir.join(name)).unwrap();
    };
    place(HOST_TARGET, &plugin("batch-rename"), "libbatch_rename.so");
    place(other_linux().0, &foreign[0].path, "libbatch_rename.so");
    place(
        "aarch64-apple-darwin",
        &foreign[1].path,
        "libbatch_rename.dylib",
    );
    folder
}

#[test]
fn a_plugin_folder_loads_the_hosts_library_wherever_a_plugin_file_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = foreign_libraries(dir.path());
    let folder = plugin_folder(dir.path(), &foreign);
    // --plugin FOLDER, in both isolation modes.
    for isolation in ["process", "in-process"] {
        let listed = cli(
            dir.path(),
            &[
                "--json".as_ref(),
                "list".as_ref(),
                "--no-default-dirs".as_ref(),
                "--isolation".as_ref(),
                isolation.as_ref(),
                "--plugin".as_ref(),
                folder.as_os_str(),
            ],
        );
        let text = String::from_utf8_lossy(&listed.stdout);
        assert!(
            listed.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&listed.stderr)
        );
        assert!(text.contains("batch_rename_preview"), "{text}");
        assert!(
            text.contains(&format!(
                "batch-rename.xcsh-plugin/{HOST_TARGET}/libbatch_rename.so"
            )),
            "the listing names the library loaded: {text}"
        );
    }
    // `check FOLDER`: the host's library loaded, each other platform's checked by its headers.
    let checked = cli(
        dir.path(),
        &["--json".as_ref(), "check".as_ref(), folder.as_os_str()],
    );
    let report: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{report:#}");
    let by_target = |triple: &str| {
        files
            .iter()
            .find(|f| f["target"] == triple)
            .unwrap_or_else(|| panic!("no {triple} in {report:#}"))
    };
    assert!(by_target(HOST_TARGET)["tools"]
        .to_string()
        .contains("batch_rename_preview"));
    let macos = by_target("aarch64-apple-darwin");
    assert_eq!(macos["builtFor"], "macOS arm64");
    if cross_build("aarch64-apple-darwin", "libbatch_rename.dylib").is_some() {
        assert_eq!(macos["apiVersion"], by_target(HOST_TARGET)["apiVersion"]);
        assert_eq!(checked.status.code(), Some(0), "{report:#}");
    } else {
        // The stand-in is a bare Mach-O header, without the plugin's version marker.
        assert_eq!(
            macos["problems"][0],
            "no xcsh-plugin-api version marker: not a plugin built with `export_plugin!`"
        );
        assert_eq!(checked.status.code(), Some(1), "{report:#}");
    }
    assert_eq!(
        by_target(other_linux().0)["problems"],
        serde_json::json!([])
    );
    assert_eq!(
        by_target(other_linux().0)["builtFor"],
        format!("{} Linux", other_linux().1)
    );
}

#[test]
fn a_plugin_folder_without_this_hosts_library_names_the_platforms_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = foreign_libraries(dir.path());
    let folder = plugin_folder(dir.path(), &foreign);
    std::fs::remove_dir_all(folder.join(HOST_TARGET)).unwrap();
    let listed = cli(
        dir.path(),
        &[
            "list".as_ref(),
            "--no-default-dirs".as_ref(),
            "--plugin".as_ref(),
            folder.as_os_str(),
        ],
    );
    assert_eq!(listed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&listed.stderr);
    let wanted = format!(
        "{}: no library for this host ({HOST_TARGET}) in this plugin folder; it has: {}",
        folder.display(),
        {
            let mut has = ["aarch64-apple-darwin", other_linux().0];
            has.sort();
            has.join(", ")
        }
    );
    assert!(stderr.contains(&wanted), "{wanted}\n{stderr}");
    // A library in the wrong platform's subfolder is caught by `check`.
    let misplaced = folder.join("x86_64-apple-darwin");
    std::fs::create_dir_all(&misplaced).unwrap();
    std::fs::copy(&foreign[0].path, misplaced.join("libbatch_rename.dylib")).unwrap();
    let checked = cli(dir.path(), &["check".as_ref(), folder.as_os_str()]);
    assert_eq!(checked.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(
        stderr.contains("but it is in the folder for x86_64-apple-darwin (macOS x86_64)"),
        "{stderr}"
    );
}

#[test]
fn trusting_a_project_plugin_folder_pins_every_library_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    let tools = project.join(".xcsh/tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let foreign = foreign_libraries(dir.path());
    let folder = plugin_folder(&tools, &foreign);
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new(artifacts().cli())
            .env("HOME", &home)
            .current_dir(&project)
            .args(args)
            .output()
            .unwrap()
    };
    let before = run(&["list".as_ref()]);
    let stderr = String::from_utf8_lossy(&before.stderr);
    assert!(stderr.contains("not trusted, not loaded"), "{stderr}");
    // The command it suggests trusts the whole folder.
    let suggested = format!("xcsh-plugins trust {}", folder.display());
    assert!(stderr.contains(&suggested), "{suggested}\n{stderr}");
    let trusted = run(&["--json".as_ref(), "trust".as_ref(), folder.as_os_str()]);
    assert!(
        trusted.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&trusted.stdout),
        String::from_utf8_lossy(&trusted.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&trusted.stdout).unwrap();
    assert_eq!(report["trusted"].as_array().unwrap().len(), 3, "{report:#}");
    let after = run(&["--json".as_ref(), "list".as_ref()]);
    let text = String::from_utf8_lossy(&after.stdout);
    assert!(
        after.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&after.stderr)
    );
    assert!(text.contains("batch_rename_preview"), "{text}");
}
