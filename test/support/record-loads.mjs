// `node --import ./record-loads.mjs …`: appends the URL of every module the process resolves (static and dynamic
// imports, its own and its packages' ES modules) to the file LAKE_COMPACTOR_LOAD_LOG names, one per line, so a
// test can say which packages a command loaded without timing anything.
import { register } from 'node:module';

const log = process.env.LAKE_COMPACTOR_LOAD_LOG;
if (log !== undefined && log !== '') register('./record-loads-hooks.mjs', import.meta.url, { data: { log } });
