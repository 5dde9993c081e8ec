// The native plugins of the host-services tests (issue 43), in plugin processes: the runtime
// loads this file both as custom tools (preloaded, as from .omp/tools/) and as an extension
// (the same default export), as a user sets them up.
import { nativeToolFactory } from "@xcsh/native-plugins";
import { servicesOptions } from "./services";

export default nativeToolFactory({ ...servicesOptions, isolation: "process" });
