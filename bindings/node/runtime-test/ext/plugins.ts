// The plugin files and options both test extensions load (the Rust test runner sets the paths).
const dir = process.env.XCSH_TEST_PLUGIN_DIR;
if (!dir) throw new Error("XCSH_TEST_PLUGIN_DIR is not set: run this through `cargo test --test upstream_runtime`");
const v02 = process.env.XCSH_TEST_V0_2_PLUGIN;

export const options = {
  plugins: [
    `${dir}/libbatch_rename.so`,
    `${dir}/libfixture_journal.so`,
    `${dir}/libfixture_multi.so`,
    `${dir}/libfixture_crash.so`,
    ...(v02 ? [v02] : []),
  ],
  defaultDirs: false,
  approval: { stack_preview: "exec" as const },
};
