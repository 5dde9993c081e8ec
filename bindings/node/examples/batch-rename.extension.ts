// An xcsh extension file: the bundled `batch-rename` plugin as xcsh custom tools, in process
// isolation, its previews pushed onto xcsh's own pending-action store. Put it where xcsh
// loads extensions (or import it from one); `XCSH_EXAMPLE_PLUGIN` points elsewhere.
import { nativeToolFactory } from "@xcsh/native-plugins";

const plugin =
  process.env.XCSH_EXAMPLE_PLUGIN ??
  new URL("../../../target/release/libbatch_rename.so", import.meta.url).pathname;

export default nativeToolFactory({ plugins: [plugin], defaultDirs: false });
