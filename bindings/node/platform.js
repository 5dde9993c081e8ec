// Which prebuilt addon fits this machine, and where index.js looks for the addon: pure
// functions of the platform, the architecture and the C library (test/platform.test.js), and
// the one detection that reads the running process (`detectLibc`).
"use strict";

const path = require("node:path");

const SCOPE = "@xcsh/native-plugins";
/// The addon's file name inside its platform package (napi-rs's `<name>.<platform>.node`).
const addonFile = (key) => `xcsh_native_plugins.${key}.node`;

/// The platforms with a prebuilt package (`.ci/dist` builds one per Rust target here).
const PLATFORMS = [
  { key: "linux-x64-gnu", platform: "linux", arch: "x64", libc: "glibc", triple: "x86_64-unknown-linux-gnu" },
  { key: "linux-arm64-gnu", platform: "linux", arch: "arm64", libc: "glibc", triple: "aarch64-unknown-linux-gnu" },
  { key: "darwin-x64", platform: "darwin", arch: "x64", libc: null, triple: "x86_64-apple-darwin" },
  { key: "darwin-arm64", platform: "darwin", arch: "arm64", libc: null, triple: "aarch64-apple-darwin" },
  { key: "win32-x64-gnu", platform: "win32", arch: "x64", libc: null, triple: "x86_64-pc-windows-gnu" },
  { key: "win32-arm64-gnu", platform: "win32", arch: "arm64", libc: null, triple: "aarch64-pc-windows-gnullvm" },
].map((entry) => ({ ...entry, package: `${SCOPE}-${entry.key}`, addon: addonFile(entry.key) }));

/// The prebuilt package for `platform`/`arch` (`process.platform`, `process.arch`) and, on
/// Linux, `libc` ("glibc" or "musl"): `{ key, package, addon, triple }`, or `{ key, package:
/// null, reason }` when there is none (the reason says why, and what there is).
function targetOf(platform, arch, libc) {
  // Windows' builds are the GNU targets (`-gnu`, as napi-rs names them; MSVC's would be `-msvc`).
  const suffix =
    platform === "linux" ? (libc === "musl" ? "-musl" : "-gnu") : platform === "win32" ? "-gnu" : "";
  const key = `${platform}-${arch}${suffix}`;
  const found = PLATFORMS.find((entry) => entry.key === key);
  if (found) return found;
  const supported = PLATFORMS.map((entry) => entry.key).join(", ");
  const reason =
    platform === "linux" && libc === "musl"
      ? `musl libc is not supported by the prebuilt addons (they need glibc 2.17 or later; ` +
        `prebuilt for ${supported})`
      : `there is no prebuilt addon for ${key} (prebuilt for ${supported})`;
  return { key, package: null, reason };
}

/// "glibc" or "musl" on Linux (as napi-rs tells them apart), null elsewhere. `report` and
/// `readFile` are for the tests; by default the process report and the file system.
function detectLibc(platform = process.platform, report = processReport, readFile = readText) {
  if (platform !== "linux") return null;
  const header = report();
  if (header) {
    if (header.header && header.header.glibcVersionRuntime) return "glibc";
    if (
      Array.isArray(header.sharedObjects) &&
      header.sharedObjects.some((file) => file.includes("libc.musl-") || file.includes("ld-musl-"))
    ) {
      return "musl";
    }
  }
  // No report (some runtimes): ldd is a script of the C library's own.
  const ldd = readFile("/usr/bin/ldd");
  if (ldd !== null && ldd.includes("musl")) return "musl";
  return "glibc";
}

function processReport() {
  try {
    if (!process.report || typeof process.report.getReport !== "function") return null;
    const excluded = process.report.excludeNetwork;
    process.report.excludeNetwork = true; // no reverse DNS look-ups of open sockets
    try {
      return process.report.getReport();
    } finally {
      process.report.excludeNetwork = excluded;
    }
  } catch {
    return null;
  }
}

function readText(file) {
  try {
    return require("node:fs").readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/// Where the addon may be, in order, for `target` (from `targetOf`): the platform package
/// (`resolvePackage(name)` returns its directory, or null when it is not installed), the
/// `native/` folder a local `npm pack` bundles, then a cargo build of the repository this
/// package sits in (`packageDir/../..`). Each `{ file, from }`; a platform package that is not
/// installed is `{ file: null, from }`.
function addonCandidates(target, packageDir, resolvePackage) {
  const candidates = [];
  if (target.package) {
    const dir = resolvePackage(target.package);
    candidates.push({
      file: dir === null ? null : path.join(dir, target.addon),
      from: `the package ${target.package}`,
    });
  }
  candidates.push({
    file: path.join(packageDir, "native", "xcsh_native_plugins.node"),
    from: "a local build bundled by `npm pack`",
  });
  const repoTarget = path.join(packageDir, "..", "..", "target");
  // cargo's name for the cdylib there: `libX.so`, `libX.dylib`, `X.dll`.
  const library = target.key.startsWith("darwin-")
    ? "libxcsh_native_plugins.dylib"
    : target.key.startsWith("win32-")
      ? "xcsh_native_plugins.dll"
      : "libxcsh_native_plugins.so";
  for (const profile of ["release", "debug"]) {
    candidates.push({
      file: path.join(repoTarget, profile, library),
      from: `a cargo ${profile} build of the repository`,
    });
  }
  return candidates;
}

/// The error when no candidate exists: the platform, what was looked for, how to get an addon.
function missingAddonMessage(target, candidates, envName) {
  const looked = candidates
    .map(({ file, from }) => (file === null ? `${from} (not installed)` : `${file} (${from})`))
    .join("; ");
  const install = target.package
    ? `reinstall @xcsh/native-plugins with its optional dependencies, or \`npm install ${target.package}\`; `
    : `${target.reason}; `;
  return (
    `@xcsh/native-plugins: no native addon for this platform (${target.key}). Looked for ${looked}. ` +
    `To fix: ${install}or build it from source in a checkout of the repository with ` +
    "`cargo build --release -p xcsh-native-plugins-node -p xcsh-plugins`; or set " +
    `${envName} to a built addon`
  );
}

module.exports = { PLATFORMS, SCOPE, targetOf, detectLibc, addonCandidates, missingAddonMessage };
