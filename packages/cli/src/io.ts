// What every command gets: its arguments and the three standard streams (tests pass their own).
import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { UsageError } from '@minimesh/runtime';

export interface CommandIO {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
}

export type Command = (argv: string[], io: CommandIO) => Promise<number>;

/** FILE or "-" (stdin; also when no argument is given). */
export async function readInput(
  positionals: string[],
  io: CommandIO,
  command: string,
): Promise<{ text: string; source: string }> {
  if (positionals.length > 1)
    throw new UsageError(`${command}: expected one FILE or "-", got ${positionals.length} arguments`);
  const source = positionals[0] ?? '-';
  if (source === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of io.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
    return { text: Buffer.concat(chunks).toString('utf8'), source: 'stdin' };
  }
  try {
    return { text: readFileSync(source, 'utf8'), source };
  } catch (err) {
    throw new UsageError(`${command}: cannot read ${source}: ${(err as Error).message}`, { cause: err });
  }
}
