// The plugins in their processes, an idle one stopped after 200 ms (the conversation-change tests).
import { nativeToolFactory } from "@xcsh/native-plugins";
import { options } from "./plugins";

export default nativeToolFactory({ ...options, isolation: "process", stopIdleAfterMs: 200 });
