// As native-services.ts, with the plugins in the runtime's own process.
import { nativeToolFactory } from "@xcsh/native-plugins";
import { servicesOptions } from "./services";

export default nativeToolFactory({ ...servicesOptions, isolation: "in-process" });
