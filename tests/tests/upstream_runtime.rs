//! The Node-API binding inside xcsh's real upstream runtime, `@oh-my-pi/pi-coding-agent`
//! (pinned in `bindings/node/runtime-test/package-lock.json`), under the Bun that package pins:
//! `bindings/node/runtime-test/native-plugins.test.ts` and `host-services.test.ts` (issue 43:
//! the runtime's UI, its model and its session events for native tools) and `rpc.test.ts`
//! (`omp --mode rpc`: a native tool's question as `extension_ui_request` frames) and
//! `views.test.ts` (a native result drawn with the runtime's theme, against snapshot files) on
//! the real built addon and plugins.
//!
//! The runtime is 1.2 GB of npm packages, so it is installed by `.ci/run` (`npm install
//! --ignore-scripts --no-save` from the lockfile, then Bun's install script), not by this test. Without it the test says
//! so and passes, unless `XCSH_REQUIRE_UPSTREAM_RUNTIME=1` (set by `.ci/run`) makes that a
//! failure.

use xcsh_integration_tests::node::{assert_success, run_with, upstream_runtime};

#[test]
fn the_binding_works_inside_the_real_upstream_runtime() {
    let Some((dir, bun)) = upstream_runtime("@oh-my-pi/pi-coding-agent") else {
        return;
    };
    // A scratch HOME: nothing the runtime or Bun writes lands in the user's.
    let home = tempfile::tempdir().unwrap();
    let output = run_with(
        &bun,
        &[
            "test",
            "./native-plugins.test.ts",
            "./host-services.test.ts",
            "./rpc.test.ts",
            "./views.test.ts",
        ],
        &dir,
        &[
            ("HOME", home.path().as_os_str()),
            // views.test.ts previews with the native ast_edit through the command line.
            (
                "XCSH_CLI",
                xcsh_integration_tests::artifacts().cli().as_os_str(),
            ),
        ],
    );
    assert_success("bun test bindings/node/runtime-test/", &output);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(report.contains(" 0 fail"), "{report}");
    assert!(!report.contains(" 0 pass"), "{report}");
}
