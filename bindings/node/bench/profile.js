// A steady loop of awaited `bench_echo` calls in one isolation mode, for a profiler:
//   perf record -e cpu-clock -g -o perf.data node bindings/node/bench/profile.js in-process
// (see BENCHMARKS.md, "The Node-API binding"). XCSH_RELEASE_DIR as in calls.js.
"use strict";

const path = require("node:path");

const release = process.env.XCSH_RELEASE_DIR || path.join(__dirname, "..", "..", "..", "target", "release");
process.env.XCSH_NATIVE_PLUGINS_ADDON ||= path.join(release, "libxcsh_native_plugins.so");
const { nativeToolFactory } = require("..");

(async () => {
  const isolation = process.argv[2] || "in-process";
  const calls = Number(process.argv[3] || 20000);
  const factory = nativeToolFactory({ plugins: [path.join(release, "libfixture_bench.so")], defaultDirs: false, isolation });
  const tools = await factory({ cwd: process.cwd(), pushPendingAction() {} });
  const echo = tools.find((tool) => tool.name === "bench_echo");
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await echo.execute("c", { text: "x" });
  const us = Number(process.hrtime.bigint() - start) / calls / 1000;
  console.log(`${isolation}: ${us.toFixed(1)} µs per call (mean of ${calls})`);
  await factory.close();
})();
