#!/usr/bin/env node
// Compiled by `npm run build:cli` (tsconfig.node.json) into dist/node.
process.exitCode = require('../dist/node/cli/main.js').main(process.argv.slice(2));
