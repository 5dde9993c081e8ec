//! The Node-API binding (`bindings/node`, `@xcsh/native-plugins`) on the real built addon and
//! real plugin files: its JS suite under Node and under Bun, the example, the typings under
//! `tsc --strict`, and the packed tarball installed into an empty directory.

use xcsh_integration_tests::node::{assert_success, bun, node, package_dir, run, skipped, tsc};

#[test]
fn the_js_suite_passes_under_node() {
    let Some(node) = node() else {
        return skipped("Node");
    };
    let output = run(&node, &["--test", "test/"], &package_dir());
    assert_success("node --test bindings/node/test/", &output);
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("# fail 0"), "{report}");
    assert!(!report.contains("# pass 0"), "{report}");
}

#[test]
fn the_js_suite_passes_under_bun() {
    let Some(bun) = bun() else {
        return skipped("Bun");
    };
    let output = run(&bun, &["test", "./test/"], &package_dir());
    assert_success("bun test bindings/node/test/", &output);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(report.contains(" 0 fail"), "{report}");
}

#[test]
fn the_example_runs_under_bun_and_type_checks_with_tsc_strict() {
    match tsc() {
        Some(tsc) => {
            let output = run(&tsc, &["-p", "tsconfig.json"], &package_dir());
            assert_success("tsc --strict -p bindings/node/tsconfig.json", &output);
        }
        None => skipped("TypeScript (tsc)"),
    }
    let Some(bun) = bun() else {
        return skipped("Bun");
    };
    let output = run(&bun, &["examples/runtime-demo.ts"], &package_dir());
    assert_success("bun examples/runtime-demo.ts", &output);
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        shown.contains("Applied batch rename. Reason: the plan is right"),
        "{shown}"
    );
    assert!(shown.contains("files: notes.md, plan.md"), "{shown}");
    assert!(
        shown.contains("Discarded batch rename. Reason: keep the name"),
        "{shown}"
    );
}

#[test]
fn the_packed_tarball_installs_into_an_empty_directory_and_loads_a_plugin_there() {
    let Some(node) = node() else {
        return skipped("Node");
    };
    let scratch = tempfile::tempdir().unwrap();
    let npm = std::path::Path::new("npm");
    let packed = run(
        npm,
        &[
            "pack",
            "--pack-destination",
            scratch.path().to_str().unwrap(),
            "--loglevel=error",
        ],
        &package_dir(),
    );
    assert_success("npm pack", &packed);
    let tarball = scratch.path().join("xcsh-native-plugins-0.1.0.tgz");
    assert!(
        tarball.exists(),
        "{}",
        String::from_utf8_lossy(&packed.stdout)
    );
    let project = scratch.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"p","private":true}"#,
    )
    .unwrap();
    let installed = run(
        npm,
        &[
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            tarball.to_str().unwrap(),
        ],
        &project,
    );
    assert_success("npm install <tarball>", &installed);
    let plugin = xcsh_integration_tests::artifacts().plugin("fixture-journal");
    let script = format!(
        r#"
        const {{ nativeToolFactory }} = require("@xcsh/native-plugins");
        (async () => {{
          const pending = [];
          const factory = nativeToolFactory({{ plugins: [{plugin:?}], defaultDirs: false }});
          const [tool] = await factory({{ cwd: process.cwd(), pushPendingAction: (a) => pending.push(a) }});
          const preview = await tool.execute("c", {{ journal: "journal.txt", entry: "packed" }});
          const applied = await pending.pop().apply("from the tarball");
          await factory.close();
          console.log(preview.content[0].text + " / " + applied.content[0].text);
        }})().catch((e) => {{ console.error(e); process.exit(1); }});
        "#
    );
    std::fs::write(project.join("use.js"), script).unwrap();
    let mut runtimes = vec![node];
    match bun() {
        Some(bun) => runtimes.push(bun),
        None => skipped("Bun"),
    }
    for runtime in runtimes {
        // Without the repository's overrides: the package must find its own addon and host.
        let output = std::process::Command::new(&runtime)
            .arg("use.js")
            .current_dir(&project)
            .env_remove("XCSH_NATIVE_PLUGINS_ADDON")
            .env_remove("XCSH_PLUGIN_HOST")
            .output()
            .unwrap();
        assert_success(&format!("{} use.js", runtime.display()), &output);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            "previewed packed / journaled packed"
        );
        let journal = std::fs::read_to_string(project.join("journal.txt")).unwrap();
        assert!(
            journal.contains("applied packed: from the tarball"),
            "{journal}"
        );
        std::fs::remove_file(project.join("journal.txt")).unwrap();
    }
}
