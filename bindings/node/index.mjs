// ES module entry of @xcsh/native-plugins: the same factory as index.js.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { nativeToolFactory, toolPackage, serveToolPackage } = require("./index.js");

export { nativeToolFactory, toolPackage, serveToolPackage };
export default nativeToolFactory;
