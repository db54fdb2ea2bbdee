#!/usr/bin/env node
// Entry point of the `lake-compactor` bin: runs the TypeScript CLI through tsx so that the
// installed package and the repository behave the same, with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../functions/cli/main.ts');
