// `prepack`: a package is packed (or published) only with its compiled CLI, declarations and pre-bundled Lambdas,
// which `npm run build` makes: without dist/ the installed `lake-compactor` could only say it is incomplete, and the
// construct could find no Lambda code. Checked, not built here, so that packing right after a build (the package
// test) does not build twice.
import { existsSync } from 'node:fs';

const required = [
  'dist/functions/cli/main.js',
  'dist/infra/lake-compactor.d.ts',
  'dist/lambda/compact/index.mjs',
];
const missing = required.filter((file) => !existsSync(new URL(`../${file}`, import.meta.url)));
if (missing.length > 0) {
  console.error(`npm pack: ${missing.join(', ')} missing; run \`npm run build\` first`);
  process.exit(1);
}
