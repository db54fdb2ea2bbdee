#!/usr/bin/env node
// The `lake-compactor` command (package.json `bin`). An installed package runs its compiled CLI, dist/, which every
// published package holds (`npm run build` makes it; `npm pack` refuses to pack without it). A clone that has not
// been built runs the TypeScript sources through tsx instead (bin/from-source.js: a clone's file, never published,
// since an installed package has neither sources nor tsx), so `npx lake-compactor` works right after `npm ci`; the
// compiled CLI only starts faster. A built clone runs dist/ as it was built: rebuild after changing the sources.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/functions/cli/main.js', import.meta.url);
const fromSource = new URL('./from-source.js', import.meta.url);

if (existsSync(compiled)) {
  await import(compiled.href);
} else if (existsSync(fromSource)) {
  await import(fromSource.href);
} else {
  process.stderr.write(
    `lake-compactor: this installation has no compiled CLI (${compiled.pathname} is missing); reinstall the package (npm install lake-compactor)\n`,
  );
  process.exitCode = 1;
}
