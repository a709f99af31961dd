// Command-line flags for every program: --name value / --name=value, --help, and exit code 2 with one
// clear line on bad input. A thin layer over node:util parseArgs that also renders the help text.
import { parseArgs } from 'node:util';

export interface FlagSpec {
  type: 'string' | 'boolean';
  default?: string | boolean;
  description: string;
  /** Repeatable: values collect into an array. */
  multiple?: boolean;
  short?: string;
}

export type FlagSpecs = Record<string, FlagSpec>;

export type FlagValues<S extends FlagSpecs> = {
  [K in keyof S]: S[K]['multiple'] extends true ? string[] : S[K]['type'] extends 'boolean' ? boolean : string;
};

export class UsageError extends Error {
  readonly code = 'MINIMESH_USAGE';
  readonly exitCode = 2;
}

export interface ProgramInfo {
  name: string;
  summary: string;
  usage?: string;
}

export function renderHelp(info: ProgramInfo, specs: FlagSpecs): string {
  const rows = Object.entries(specs).map(([name, spec]) => {
    const left = `  ${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.type === 'string' ? ' <value>' : ''}`;
    const def = spec.default !== undefined && spec.default !== '' ? ` (default: ${String(spec.default)})` : '';
    return `${left.padEnd(40)} ${spec.description}${def}`;
  });
  // --help is always a row, so the block is never empty; rows join with one newline (no blank line
  // when a command has no flags of its own, as `minimesh uninject` has none).
  rows.push(`${'  -h, --help'.padEnd(40)} show this help`);
  return `${info.name} — ${info.summary}\n\nUsage: ${info.usage ?? `${info.name} [flags]`}\n\nFlags:\n${rows.join('\n')}\n`;
}

/**
 * Parses argv. Returns the values, or { help: text } when --help was given.
 * Throws UsageError (exit code 2) naming the unknown flag or missing value.
 */
export function parseFlags<S extends FlagSpecs>(
  info: ProgramInfo,
  specs: S,
  argv: string[],
): { values: FlagValues<S>; positionals: string[] } | { help: string } {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const [name, spec] of Object.entries(specs)) {
    options[name] = {
      type: spec.type,
      ...(spec.multiple ? { multiple: true } : {}),
      ...(spec.short ? { short: spec.short } : {}),
    };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    const msg = (err as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(`${info.name}: ${msg} (see ${info.name} --help)`, { cause: err });
  }
  if (parsed.values.help) return { help: renderHelp(info, specs) };
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const v = parsed.values[name];
    values[name] = v ?? (spec.multiple ? [] : (spec.default ?? (spec.type === 'boolean' ? false : '')));
  }
  return { values: values as FlagValues<S>, positionals: parsed.positionals };
}
