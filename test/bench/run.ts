// Benchmark dispatcher: `npm run bench` runs every registered suite, `npm run bench -- <suite> [flags]`
// runs the named ones; flags after the suite names are handed to each suite unchanged. `--help` prints the
// usage and runs nothing (dispatch.ts).
import { benchCommand, SUITES } from './dispatch.js';

async function main(argv: readonly string[]): Promise<void> {
  const command = benchCommand(argv);
  if (command.kind === 'help') {
    console.log(command.text);
    return;
  }
  for (const name of command.suites) {
    console.log(`\n=== bench: ${name} ===`);
    const suite = await (SUITES[name] as (typeof SUITES)[string]).load();
    await suite.run(command.flags);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
