// A native-plugins extension as the runtime loads it: its default export is the factory.
import { nativeToolFactory } from "@xcsh/native-plugins";
import { options } from "./plugins";

export default nativeToolFactory({ ...options, isolation: "process" });
