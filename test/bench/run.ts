// Benchmark dispatcher: `npm run bench` runs every registered suite, `npm run bench -- <suite> [flags]`
// runs the named ones; flags after the suite names are handed to each suite unchanged.

/** A suite module exports `run(flags)`; register new suites here (e.g. `profiler`). */
const suites: Record<string, () => Promise<{ run(flags: readonly string[]): Promise<unknown> }>> = {
  rewrite: () => import('./rewrite.js'),
  profiler: () => import('./profiler.js'),
  delta: () => import('./delta.js'),
  iceberg: () => import('./iceberg.js'),
  hudi: () => import('./hudi.js'),
  's3-client': () => import('./s3-client.js'),
  'cli-startup': () => import('./cli-startup.js'),
};

async function main(argv: readonly string[]): Promise<void> {
  const names = argv.filter((a, i) => !a.startsWith('-') && (i === 0 || !argv[i - 1]?.startsWith('--')));
  const flags = argv.filter((a) => !names.includes(a));
  const unknown = names.filter((n) => !(n in suites));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown benchmark suite(s) ${unknown.join(', ')}; known: ${Object.keys(suites).join(', ')}`,
    );
  }
  for (const name of names.length > 0 ? names : Object.keys(suites)) {
    console.log(`\n=== bench: ${name} ===`);
    const suite = await (
      suites[name] as () => Promise<{ run(flags: readonly string[]): Promise<unknown> }>
    )();
    await suite.run(flags);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
