// Which addon @xcsh/native-plugins loads: the platform table (platform.js) for every platform
// with a prebuilt package and some without, and an installed layout (node_modules with the
// main package and its platform package) loading from the platform package.
//
// Environment (set by tests/src/node.rs): XCSH_NATIVE_PLUGINS_ADDON and XCSH_PLUGIN_HOST, the
// built addon and host copied into the fake platform package; XCSH_EXAMPLE_PLUGIN, the sample
// plugin it loads. Without them: the repository's target/debug.
"use strict";

const { test } = typeof Bun !== "undefined" ? require("bun:test") : require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawnSync } = require("node:child_process");

const platform = require("../platform.js");

const PACKAGE_DIR = path.join(__dirname, "..");
const REPO_DEBUG = path.join(PACKAGE_DIR, "..", "..", "target", "debug");
const BUILD = "`cargo build --release -p xcsh-native-plugins-node -p xcsh-plugins`";

test("each platform with a prebuilt addon maps to its package and addon file", () => {
  const cases = [
    ["linux", "x64", "glibc", "linux-x64-gnu", "x86_64-unknown-linux-gnu"],
    ["linux", "arm64", "glibc", "linux-arm64-gnu", "aarch64-unknown-linux-gnu"],
    ["darwin", "x64", null, "darwin-x64", "x86_64-apple-darwin"],
    ["darwin", "arm64", null, "darwin-arm64", "aarch64-apple-darwin"],
    ["win32", "x64", null, "win32-x64-gnu", "x86_64-pc-windows-gnu"],
    ["win32", "arm64", null, "win32-arm64-gnu", "aarch64-pc-windows-gnullvm"],
  ];
  for (const [os_, arch, libc, key, triple] of cases) {
    const target = platform.targetOf(os_, arch, libc);
    assert.equal(target.key, key);
    assert.equal(target.package, `@xcsh/native-plugins-${key}`);
    assert.equal(target.addon, `xcsh_native_plugins.${key}.node`);
    assert.equal(target.triple, triple);
  }
  assert.deepEqual(
    platform.PLATFORMS.map((entry) => entry.package),
    cases.map(([, , , key]) => `@xcsh/native-plugins-${key}`),
  );
});

test("an unsupported platform or musl has no package, and says why", () => {
  const musl = platform.targetOf("linux", "x64", "musl");
  assert.equal(musl.key, "linux-x64-musl");
  assert.equal(musl.package, null);
  assert.match(musl.reason, /^musl libc is not supported by the prebuilt addons \(they need glibc 2\.17/);
  for (const [os_, arch, libc, key] of [
    ["win32", "ia32", null, "win32-ia32-gnu"],
    ["linux", "ia32", "glibc", "linux-ia32-gnu"],
    ["freebsd", "x64", null, "freebsd-x64"],
  ]) {
    const target = platform.targetOf(os_, arch, libc);
    assert.equal(target.key, key);
    assert.equal(target.package, null);
    assert.equal(
      target.reason,
      `there is no prebuilt addon for ${key} (prebuilt for linux-x64-gnu, linux-arm64-gnu, darwin-x64, darwin-arm64, win32-x64-gnu, win32-arm64-gnu)`,
    );
  }
});

test("the C library is told from the process report, else from ldd", () => {
  const none = () => {
    throw new Error("not read off Linux");
  };
  assert.equal(platform.detectLibc("darwin", none, none), null);
  const glibc = () => ({ header: { glibcVersionRuntime: "2.36" }, sharedObjects: [] });
  assert.equal(platform.detectLibc("linux", glibc, none), "glibc");
  const musl = () => ({ header: {}, sharedObjects: ["/lib/ld-musl-x86_64.so.1"] });
  assert.equal(platform.detectLibc("linux", musl, none), "musl");
  assert.equal(platform.detectLibc("linux", () => null, () => "#!/bin/sh\n# musl libc\n"), "musl");
  assert.equal(platform.detectLibc("linux", () => null, () => "#! /bin/bash\n# GNU libc"), "glibc");
  assert.equal(platform.detectLibc("linux", () => null, () => null), "glibc");
  // This machine: whatever it is, an answer.
  const here = platform.detectLibc();
  assert.ok(process.platform === "linux" ? ["glibc", "musl"].includes(here) : here === null, String(here));
});

test("the addon is looked for in the platform package, then native/, then the cargo build", () => {
  const target = platform.targetOf("linux", "arm64", "glibc");
  const installed = platform.addonCandidates(target, "/p/node_modules/@xcsh/native-plugins", (name) =>
    name === "@xcsh/native-plugins-linux-arm64-gnu" ? "/p/node_modules/@xcsh/native-plugins-linux-arm64-gnu" : null,
  );
  assert.deepEqual(
    installed.map(({ file }) => file),
    [
      "/p/node_modules/@xcsh/native-plugins-linux-arm64-gnu/xcsh_native_plugins.linux-arm64-gnu.node",
      "/p/node_modules/@xcsh/native-plugins/native/xcsh_native_plugins.node",
      "/p/node_modules/target/release/libxcsh_native_plugins.so",
      "/p/node_modules/target/debug/libxcsh_native_plugins.so",
    ],
  );
  const mac = platform.addonCandidates(platform.targetOf("darwin", "arm64", null), "/r/bindings/node", () => null);
  assert.deepEqual(
    mac.map(({ file }) => file),
    [
      null,
      "/r/bindings/node/native/xcsh_native_plugins.node",
      "/r/target/release/libxcsh_native_plugins.dylib",
      "/r/target/debug/libxcsh_native_plugins.dylib",
    ],
  );
  const windows = platform.addonCandidates(platform.targetOf("win32", "x64", null), "/r/bindings/node", () => null);
  assert.deepEqual(
    windows.map(({ file }) => file).slice(2),
    ["/r/target/release/xcsh_native_plugins.dll", "/r/target/debug/xcsh_native_plugins.dll"],
  );
  const unsupported = platform.addonCandidates(platform.targetOf("freebsd", "x64", null), "/r/bindings/node", () => {
    throw new Error("no package to resolve");
  });
  assert.equal(unsupported.length, 3);
});

test("the error names the platform, every place looked at, and how to get an addon", () => {
  const target = platform.targetOf("linux", "arm64", "glibc");
  const message = platform.missingAddonMessage(
    target,
    platform.addonCandidates(target, "/p/node_modules/@xcsh/native-plugins", () => null),
    "XCSH_NATIVE_PLUGINS_ADDON",
  );
  assert.equal(
    message,
    "@xcsh/native-plugins: no native addon for this platform (linux-arm64-gnu). Looked for " +
      "the package @xcsh/native-plugins-linux-arm64-gnu (not installed); " +
      "/p/node_modules/@xcsh/native-plugins/native/xcsh_native_plugins.node (a local build bundled by `npm pack`); " +
      "/p/node_modules/target/release/libxcsh_native_plugins.so (a cargo release build of the repository); " +
      "/p/node_modules/target/debug/libxcsh_native_plugins.so (a cargo debug build of the repository). " +
      "To fix: reinstall @xcsh/native-plugins with its optional dependencies, or " +
      "`npm install @xcsh/native-plugins-linux-arm64-gnu`; or build it from source in a checkout of the " +
      `repository with ${BUILD}; or set XCSH_NATIVE_PLUGINS_ADDON to a built addon`,
  );
  const musl = platform.targetOf("linux", "x64", "musl");
  const refused = platform.missingAddonMessage(musl, platform.addonCandidates(musl, "/p", () => null), "X");
  assert.match(refused, /^@xcsh\/native-plugins: no native addon for this platform \(linux-x64-musl\)\. /);
  assert.match(refused, /To fix: musl libc is not supported by the prebuilt addons .*; or build it from source/);
});

/// A project with @xcsh/native-plugins (this package's JavaScript) in node_modules, and the
/// platform package for this machine when `addon` is given.
function installedLayout(target, addon, host) {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), "xcsh-node-layout-"));
  const main = path.join(project, "node_modules", "@xcsh", "native-plugins");
  fs.mkdirSync(main, { recursive: true });
  // Exactly the files npm ships (package.json's `files`, the addon folder aside).
  const shipped = require(path.join(PACKAGE_DIR, "package.json")).files.filter((file) => !file.endsWith("/"));
  for (const file of [...shipped, "package.json"]) {
    fs.copyFileSync(path.join(PACKAGE_DIR, file), path.join(main, file));
  }
  if (addon) {
    const dir = path.join(project, "node_modules", target.package);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, "package.json"),
      JSON.stringify({ name: target.package, version: "0.0.0", main: target.addon }),
    );
    fs.copyFileSync(addon, path.join(dir, target.addon));
    if (host) {
      fs.copyFileSync(host, path.join(dir, "xcsh-plugin-host"));
      fs.chmodSync(path.join(dir, "xcsh-plugin-host"), 0o755);
    }
  }
  return project;
}

/// `script` run by this runtime (Node or Bun) in `project`, without the repository's overrides.
function runIn(project, script) {
  fs.writeFileSync(path.join(project, "use.js"), script);
  const env = { ...process.env };
  delete env.XCSH_NATIVE_PLUGINS_ADDON;
  delete env.XCSH_PLUGIN_HOST;
  return spawnSync(process.execPath, ["use.js"], { cwd: project, env, encoding: "utf8" });
}

const here = platform.targetOf(process.platform, process.arch, platform.detectLibc());

test("without its platform package, an installed @xcsh/native-plugins says what it looked for", { timeout: 60_000 }, () => {
  const project = installedLayout(here, null);
  try {
    const run = runIn(
      project,
      `require("@xcsh/native-plugins").nativeToolFactory({ defaultDirs: false })({})
         .then(() => console.log("loaded"), (error) => console.log(error.message));`,
    );
    assert.equal(run.status, 0, run.stderr);
    const message = run.stdout.trim();
    assert.ok(message.startsWith(`@xcsh/native-plugins: no native addon for this platform (${here.key}). `), message);
    if (here.package) assert.ok(message.includes(`the package ${here.package} (not installed)`), message);
    assert.ok(message.includes(BUILD), message);
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
});

// The built addon, its host and the sample plugin of this checkout, when they are built.
const builtAddon = path.resolve(process.env.XCSH_NATIVE_PLUGINS_ADDON || path.join(REPO_DEBUG, "libxcsh_native_plugins.so"));
const builtHost = path.resolve(process.env.XCSH_PLUGIN_HOST || path.join(REPO_DEBUG, "xcsh-plugin-host"));
const samplePlugin = path.resolve(process.env.XCSH_EXAMPLE_PLUGIN || path.join(REPO_DEBUG, "libbatch_rename.so"));
const canLoad =
  process.platform === "linux" &&
  here.package !== null &&
  [builtAddon, builtHost, samplePlugin].every((file) => fs.existsSync(file));

test("an installed @xcsh/native-plugins loads the addon and the host of its platform package", { timeout: 60_000, skip: !canLoad && "no built addon, host and sample plugin for this Linux machine" }, () => {
  const project = installedLayout(here, builtAddon, builtHost);
  try {
    // Process isolation: the plugin runs in the platform package's xcsh-plugin-host.
    const run = runIn(
      project,
      `const fs = require("node:fs");
       (async () => {
         const factory = require("@xcsh/native-plugins").nativeToolFactory({
           plugins: [${JSON.stringify(samplePlugin)}], defaultDirs: false, isolation: "process",
         });
         const tools = await factory({ cwd: process.cwd() });
         if (tools.length === 0) throw new Error(JSON.stringify(factory.loadErrors));
         // A call, answered by the plugin in its process (whatever it says of no files).
         const preview = await tools[0].execute("c", { files: [], find: "a", replace: "b" })
           .then((result) => result.content[0].text, (error) => error.message);
         await factory.close();
         const mapped = fs.readFileSync("/proc/self/maps", "utf8").split("\\n")
           .filter((line) => line.includes("xcsh_native_plugins")).map((line) => line.split(/\\s+/).pop());
         console.log(JSON.stringify({ tools: tools.map((tool) => tool.name), mapped: [...new Set(mapped)], preview }));
       })().catch((error) => { console.error(error); process.exit(1); });`,
    );
    assert.equal(run.status, 0, run.stderr);
    const shown = JSON.parse(run.stdout.trim().split("\n").pop());
    assert.deepEqual(shown.tools, ["batch_rename_preview"]);
    assert.equal(typeof shown.preview, "string");
    assert.ok(!/plugin process|xcsh-plugin-host/.test(shown.preview), shown.preview);
    const expected = fs.realpathSync(path.join(project, "node_modules", here.package, here.addon));
    assert.deepEqual(shown.mapped, [expected]);
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
});
