// `-o` for every command that prints a report or a table, with kubectl's names: table (the default),
// wide (the table with more columns or details), json, yaml. Pure: a value in, text out.
import { stringify } from 'yaml';
import { UsageError } from './flags.js';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

/** The `-o` flag's spec; `allowed` names the formats in the help text. */
export function outputFlag(allowed: readonly OutputFormat[] = ['table', 'wide', 'json', 'yaml']) {
  return {
    type: 'string',
    short: 'o',
    default: '',
    description: `output format: ${allowed.join(', ')} (default: ${allowed[0] ?? 'table'})`,
  } as const;
}

/**
 * The value of `-o` ('' is the first allowed format, the default). Throws UsageError (exit 2) naming the
 * value and the formats the command has.
 */
export function parseOutputFormat<F extends OutputFormat = OutputFormat>(
  command: string,
  value: string,
  allowed: readonly F[] = ['table', 'wide', 'json', 'yaml'] as F[],
): F {
  const format = value === '' ? (allowed[0] ?? 'table') : value;
  if (!(allowed as readonly string[]).includes(format))
    throw new UsageError(`${command}: -o ${JSON.stringify(value)} is not valid: expected ${allowed.join(', ')}`);
  return format as F;
}

/** JSON (2-space indented) or YAML text of a value, ending with a newline. */
export function renderData(format: 'json' | 'yaml', value: unknown): string {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  return stringify(value, { lineWidth: 0 });
}

/** One record of a stream (tap): a JSON line, or a YAML document that starts with "---". */
export function renderRecord(format: 'json' | 'yaml', value: unknown): string {
  if (format === 'json') return `${JSON.stringify(value)}\n`;
  return `---\n${stringify(value, { lineWidth: 0 })}`;
}
