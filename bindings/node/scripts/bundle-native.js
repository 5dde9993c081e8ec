// `npm pack` (prepack): put the built addon and the plugin host executable of the same build
// into native/, where index.js finds them without configuration. Sources: the environment's
// XCSH_NATIVE_PLUGINS_ADDON and XCSH_PLUGIN_HOST, else the repository's release build.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const release = path.join(__dirname, "..", "..", "..", "target", "release");
const suffix = process.platform === "darwin" ? "dylib" : "so";
const addon = process.env.XCSH_NATIVE_PLUGINS_ADDON || path.join(release, `libxcsh_native_plugins.${suffix}`);
const host = process.env.XCSH_PLUGIN_HOST || path.join(release, "xcsh-plugin-host");

for (const [what, file] of [["the addon", addon], ["xcsh-plugin-host", host]]) {
  if (!fs.existsSync(file)) {
    console.error(`bundle-native: ${what} is not built (${file}); run \`cargo build --release --workspace\` first`);
    process.exit(1);
  }
}
const native = path.join(__dirname, "..", "native");
fs.rmSync(native, { recursive: true, force: true });
fs.mkdirSync(native);
fs.copyFileSync(addon, path.join(native, "xcsh_native_plugins.node"));
fs.copyFileSync(host, path.join(native, "xcsh-plugin-host"));
fs.chmodSync(path.join(native, "xcsh-plugin-host"), 0o755);
console.error(`bundle-native: packed ${addon} and ${host}`);
