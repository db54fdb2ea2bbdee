// Runs the CLI from its TypeScript sources through tsx: what `lake-compactor` (bin/lake-compactor.js) runs in a clone
// that has no dist/ yet, and what tests run to exercise the sources in a process of their own, whatever dist/ holds
// (the package test rebuilds it meanwhile). Not published: an installed package has no sources, and tsx is a
// devDependency. A clone whose devDependencies are not installed is told what to run.
import { fileURLToPath } from 'node:url';

let tsx;
try {
  tsx = await import('tsx/esm/api');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
  const clone = fileURLToPath(new URL('..', import.meta.url));
  process.stderr.write(
    `lake-compactor: the CLI is not built and tsx (a devDependency) is not installed; in ${clone} run \`npm ci\` (then \`npm run build\` for the compiled CLI, which starts faster)\n`,
  );
  process.exit(1);
}
tsx.register();
await import('../functions/cli/main.ts');
