#!/usr/bin/env node
// `npx @xcsh/native-plugins ARGS`: the lean `xcsh-plugins` of this machine's platform package
// (`accept-key`, `install`, `list --installed`, `mcp`, ...), for users of packed tools who have
// no other copy of the CLI.
"use strict";

require("./tool-package.js").runCli(process.argv.slice(2));
