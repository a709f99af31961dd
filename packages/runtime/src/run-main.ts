// Every program's entry point: runs main, turns errors into one clear line and an exit code
// (2 for bad input, 1 otherwise), and never lets a stack trace be the only message.
export async function runMain(name: string, main: (argv: string[]) => Promise<void | number>): Promise<void> {
  try {
    const code = await main(process.argv.slice(2));
    if (typeof code === 'number') process.exitCode = code;
  } catch (err) {
    const e = err as Error & { exitCode?: number; code?: string };
    // Some errors (UsageError from parseFlags) already start with the program name: say it once.
    const line = e.message.startsWith(`${name}: `) ? e.message : `${name}: ${e.message}`;
    process.stderr.write(`${line}\n`);
    if (process.env.MINIMESH_DEBUG && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exitCode = typeof e.exitCode === 'number' ? e.exitCode : 1;
  }
}
