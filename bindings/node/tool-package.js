// Packed native tools (`xcsh-plugins pack`): what the one-line entries a tool's npm package is
// generated with call. A packed tool's main package holds `xcsh-tool.json` (its manifest: the
// library of each platform and the optional package carrying it); npm or Bun installed the one
// package that fits this machine.
//
// - `toolPackage(dir)`: its `omp` tools and extensions entry in xcsh's runtime, a
//   `nativeToolFactory` over this machine's library. On a machine the package has no library
//   for it throws, naming the platforms it has: the runtime's installer loads the extension
//   entry before it commits an install, so `omp plugin install` refuses the package.
// - `serveToolPackage(dir)`: its `bin`, serving the tool over MCP on stdio (`npx -y`), through
//   the `xcsh-plugins` program of this binding's platform package.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const platform = require("./platform.js");

const MANIFEST = "xcsh-tool.json";
const CLI_ENV = "XCSH_PLUGINS_BIN";
const CLI_BIN = process.platform === "win32" ? "xcsh-plugins.exe" : "xcsh-plugins";

/// The manifest of the packed tool in `dir`.
function readManifest(dir) {
  const file = path.join(dir, MANIFEST);
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(`${dir}: no ${MANIFEST} (not a tool packed by \`xcsh-plugins pack\`): ${error.message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not valid JSON: ${error.message}`);
  }
}

/// `{ key, triple }` of this machine.
function thisMachine() {
  const target = platform.targetOf(process.platform, process.arch, platform.detectLibc());
  return { key: target.key, triple: target.triple || null };
}

/// The packed tool's library for this machine (an absolute path); throws, naming the platforms
/// the package has, when there is none.
function libraryOf(dir, manifest) {
  const here = thisMachine();
  const platforms = manifest.platforms || {};
  const has = Object.keys(platforms)
    .map((triple) => {
      const known = platform.PLATFORMS.find((entry) => entry.triple === triple);
      return known ? `${known.key} (${triple})` : triple;
    })
    .join(", ");
  const name = `${manifest.npmName || manifest.plugin} ${manifest.version || ""}`.trim();
  const entry = here.triple ? platforms[here.triple] : undefined;
  if (!entry) {
    throw new Error(
      `${name} has no library for this platform (${here.key}${here.triple ? `, ${here.triple}` : ""}); ` +
        `it has: ${has || "none"}`,
    );
  }
  let packageDir;
  try {
    packageDir = path.dirname(require.resolve(`${entry.package}/package.json`, { paths: [dir] }));
  } catch {
    throw new Error(
      `${name}: the package with this platform's library, ${entry.package}, is not installed ` +
        `(an install that skipped optional dependencies?); reinstall ${manifest.npmName} with them`,
    );
  }
  const library = path.join(packageDir, entry.library);
  if (!fs.existsSync(library)) {
    throw new Error(`${name}: ${entry.package} has no ${entry.library}`);
  }
  return library;
}

/**
 * The `omp` tools and extensions entry of the packed tool in `dir`: a `nativeToolFactory`
 * over this machine's library. Throws when the package has no library for this machine.
 */
function toolPackage(dir, options) {
  const manifest = readManifest(dir);
  const library = libraryOf(dir, manifest);
  checkPublisher(manifest, library);
  const { nativeToolFactory } = require("./index.js");
  return nativeToolFactory({ ...(options || {}), plugins: [library], defaultDirs: false });
}

/// The library's signature against the manifest's publisher key and the key pinned in the
/// user's trust store (pinned here at the first load); throws the refusal, which names the
/// command that accepts a new key.
function checkPublisher(manifest, library) {
  let signature = null;
  try {
    signature = fs.readFileSync(`${library}.minisig`, "utf8");
  } catch {
    // unsigned
  }
  const { loadAddon } = require("./index.js");
  const name = manifest.npmName || manifest.plugin;
  loadAddon().native.checkToolPublisher(
    name,
    `${name} ${manifest.version || ""}`.trim(),
    manifest.publisherKey || null,
    library,
    signature,
  );
}

/// This binding's `xcsh-plugins`: `XCSH_PLUGINS_BIN`, else the platform package's, else a
/// cargo build of the repository this binding sits in.
function cliProgram() {
  const explicit = process.env[CLI_ENV];
  if (explicit) return explicit;
  const target = platform.targetOf(process.platform, process.arch, platform.detectLibc());
  const candidates = [];
  if (target.package) {
    try {
      candidates.push(path.join(path.dirname(require.resolve(`${target.package}/package.json`)), CLI_BIN));
    } catch {
      // not installed
    }
  }
  for (const profile of ["release", "debug"]) {
    candidates.push(path.join(__dirname, "..", "..", "target", profile, CLI_BIN));
  }
  const found = candidates.find((file) => fs.existsSync(file));
  if (!found) {
    throw new Error(
      `@xcsh/native-plugins: no ${CLI_BIN} for this platform (${target.key}); looked for ` +
        `${candidates.join(", ") || "nothing"}; set ${CLI_ENV} to one`,
    );
  }
  return found;
}

/**
 * The `bin` of the packed tool in `dir`: serve it over MCP on stdio, with the command line's
 * own arguments after it (`--cwd DIR`, `--allow-write PATH`, ...), until the client leaves.
 */
function serveToolPackage(dir) {
  let library;
  let program;
  try {
    const manifest = readManifest(dir);
    library = libraryOf(dir, manifest);
    checkPublisher(manifest, library);
    program = cliProgram();
  } catch (error) {
    process.stderr.write(`error: ${error.message}\n`);
    process.exit(1);
  }
  const { spawn } = require("node:child_process");
  const args = ["mcp", "--no-default-dirs", "--no-builtins", "--plugin", library, ...process.argv.slice(2)];
  const child = spawn(program, args, { stdio: "inherit" });
  const forward = (signal) => () => child.kill(signal);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, forward(signal));
  child.on("error", (error) => {
    process.stderr.write(`error: cannot start ${program}: ${error.message}\n`);
    process.exit(1);
  });
  // A server ended by a signal exits as a shell reports it: 128 + the signal's number.
  child.on("exit", (code, signal) =>
    process.exit(code === null ? 128 + (require("node:os").constants.signals[signal] || 0) : code),
  );
}

/// `xcsh-plugins ARGS` of this binding (its `bin`: `npx @xcsh/native-plugins accept-key …`).
function runCli(args) {
  let program;
  try {
    program = cliProgram();
  } catch (error) {
    process.stderr.write(`error: ${error.message}\n`);
    process.exit(1);
  }
  const { spawnSync } = require("node:child_process");
  const result = spawnSync(program, args, { stdio: "inherit" });
  if (result.error) {
    process.stderr.write(`error: cannot start ${program}: ${result.error.message}\n`);
    process.exit(1);
  }
  process.exit(result.status === null ? 1 : result.status);
}

module.exports = { toolPackage, serveToolPackage, runCli, libraryOf, readManifest };
