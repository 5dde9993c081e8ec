// ES module entry of @xcsh/native-plugins: the same factory as index.js.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { nativeToolFactory } = require("./index.js");

export { nativeToolFactory };
export default nativeToolFactory;
