// The same plugins loaded into the runtime's own process (no plugin processes).
import { nativeToolFactory } from "@xcsh/native-plugins";
import { options } from "./plugins";

export default nativeToolFactory({ ...options, isolation: "in-process" });
