// The plugins the host-services tests load (the Rust test runner sets the directory).
const dir = process.env.XCSH_TEST_PLUGIN_DIR;
if (!dir) throw new Error("XCSH_TEST_PLUGIN_DIR is not set: run this through `cargo test --test upstream_runtime`");

export const servicesOptions = {
  plugins: [`${dir}/libbatch_rename.so`, `${dir}/libfixture_conformance.so`, `${dir}/libfixture_todo.so`],
  defaultDirs: false,
};
