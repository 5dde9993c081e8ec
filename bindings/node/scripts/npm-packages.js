// The binding's npm packages, as published: `@xcsh/native-plugins` (JavaScript and types, one
// optional dependency per platform at exactly its version) and one `@xcsh/native-plugins-KEY`
// per platform given (its addon, the `xcsh-plugin-host` of process isolation, and the lean
// `xcsh-plugins` that serves packed tools over MCP: their `bin` and `.mcpb` bundles).
// `.ci/dist` writes the published ones with it; the tests write this machine's from a cargo
// build, to publish to their own registry.
//
//   node scripts/npm-packages.js OUT VERSION [KEY ADDON HOST CLI]...
//
// Writes OUT/native-plugins/ and OUT/native-plugins-KEY/ (directories `npm pack` and
// `npm publish` take).
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const { PLATFORMS } = require("../platform.js");

const root = path.join(__dirname, "..");
const repo = path.join(root, "..", "..");
const [out, version, ...rest] = process.argv.slice(2);
if (!out || !version || rest.length % 4 !== 0) {
  console.error("usage: node scripts/npm-packages.js OUT VERSION [KEY ADDON HOST CLI]...");
  process.exit(2);
}

function licences(dir) {
  for (const file of ["LICENSE-MIT", "LICENSE-APACHE"]) fs.copyFileSync(path.join(repo, file), path.join(dir, file));
}

function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + "\n");
}

// The main package.
const source = require("../package.json");
const main = path.join(out, "native-plugins");
fs.rmSync(main, { recursive: true, force: true });
fs.mkdirSync(main, { recursive: true });
const shipped = source.files.filter((file) => file !== "native/");
for (const file of [...shipped, "README.md"]) fs.copyFileSync(path.join(root, file), path.join(main, file));
licences(main);
const manifest = { ...source, version };
delete manifest.scripts; // prepack bundles a local build into native/: not for the published package
manifest.files = shipped.concat(["LICENSE-MIT", "LICENSE-APACHE"]);
manifest.optionalDependencies = Object.fromEntries(PLATFORMS.map((platform) => [platform.package, version]));
writeJson(path.join(main, "package.json"), manifest);

// The platform packages.
for (let at = 0; at < rest.length; at += 4) {
  const [key, addon, host, cli] = rest.slice(at, at + 4);
  const platform = PLATFORMS.find((entry) => entry.key === key);
  if (!platform) {
    console.error(`npm-packages: unknown platform ${key}; the platforms are ${PLATFORMS.map((p) => p.key).join(", ")}`);
    process.exit(2);
  }
  const exe = platform.platform === "win32" ? ".exe" : "";
  const dir = path.join(out, `native-plugins-${key}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(addon, path.join(dir, platform.addon));
  for (const [file, name] of [[host, `xcsh-plugin-host${exe}`], [cli, `xcsh-plugins${exe}`]]) {
    fs.copyFileSync(file, path.join(dir, name));
    fs.chmodSync(path.join(dir, name), 0o755);
  }
  licences(dir);
  const packageJson = {
    name: platform.package,
    version,
    description: `The ${platform.triple} Node-API addon of @xcsh/native-plugins, its plugin host, and the xcsh-plugins that serves packed tools over MCP.`,
    license: source.license,
    main: platform.addon,
    files: [platform.addon, `xcsh-plugin-host${exe}`, `xcsh-plugins${exe}`, "LICENSE-MIT", "LICENSE-APACHE"],
    os: [platform.platform],
    cpu: [platform.arch],
    ...(platform.libc ? { libc: [platform.libc] } : {}),
    engines: { node: ">=20" },
  };
  writeJson(path.join(dir, "package.json"), packageJson);
  fs.writeFileSync(
    path.join(dir, "README.md"),
    `# ${platform.package}\n\nThe ${platform.triple} build of ` +
      "[`@xcsh/native-plugins`](https://www.npmjs.com/package/@xcsh/native-plugins)'s Node-API addon, " +
      "its `xcsh-plugin-host`, and the lean `xcsh-plugins` (no compiled-in tools) that serves packed " +
      `native tools over MCP. Install \`@xcsh/native-plugins\`, which depends on this package on ${key}; ` +
      "do not use it directly.\n",
  );
}
console.error(`npm-packages: wrote ${out}/native-plugins and ${rest.length / 4} platform package(s)`);
