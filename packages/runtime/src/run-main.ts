// The older entry point (the proxy's main.ts still uses it until it moves to defineProgram): runs main,
// turns errors into one clear line and an exit code (the error's exitCode, else 1).
import { exitCodeOf, reportError } from './program.js';

export async function runMain(name: string, main: (argv: string[]) => Promise<void | number>): Promise<void> {
  try {
    const code = await main(process.argv.slice(2));
    if (typeof code === 'number') process.exitCode = code;
  } catch (err) {
    reportError(name, err);
    process.exitCode = exitCodeOf(err);
  }
}
