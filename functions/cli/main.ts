#!/usr/bin/env node
// The `lake-compactor` executable: runs the CLI on the process's arguments and exits with its code. Apart from
// index.ts so that importing the CLI (tests, the bench) never runs it, whatever the process's own arguments are.
import { run } from './index.js';
import { quietSdkNodeWarning } from './node-support.js';

quietSdkNodeWarning(process.env, process.versions.node);
process.exitCode = await run(process.argv.slice(2));
