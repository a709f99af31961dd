// The root logger. Only a program's main.ts calls createLogger; everything else takes a child.
// Two formats, one event per line in both (what `kubectl logs` and log shippers want):
//   json   {"level":"info","time":"2026-11-24T08:00:00.000Z","name":"destination","msg":"...",...}
//   plain  2026-11-24T08:00:00.000Z info destination listening addr=0.0.0.0:8086 err="ECONNREFUSED ..."
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** Component name, e.g. "destination". */
  name: string;
  level?: string;
  format?: 'plain' | 'json';
  /** Where to write; stdout by default (tests pass a stream). */
  destination?: NodeJS.WritableStream;
}

/** Secrets never reach the logs: these paths are censored wherever they appear. */
const REDACT = [
  'token',
  '*.token',
  'key',
  '*.key',
  'privateKey',
  '*.privateKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
];

const SIMPLE = /^[^\s"=]+$/;

function plainValue(v: unknown): string {
  if (typeof v === 'string') return SIMPLE.test(v) ? v : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return JSON.stringify(v);
}

/**
 * One pino JSON record as one plain line: time level component message key=value ... Strings with
 * spaces, quotes or newlines are JSON-quoted (so a stack stays on the line as \n); objects are JSON.
 */
export function formatPlainLine(record: Record<string, unknown>): string {
  const { time, level, name, msg, pid: _pid, hostname: _hostname, ...rest } = record;
  const head = [String(time ?? ''), String(level ?? ''), String(name ?? '')];
  if (msg !== undefined && msg !== '') head.push(String(msg).replace(/\s*\n\s*/g, ' '));
  const fields = Object.entries(rest)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => {
      // An error: its message on the line, its stack as one quoted field (pino serializes err as an object).
      if (k === 'err' && v !== null && typeof v === 'object') {
        const { message, stack, type: _type, ...more } = v as Record<string, unknown>;
        const parts = [`${k}=${plainValue(message ?? '')}`];
        for (const [mk, mv] of Object.entries(more)) parts.push(`${k}.${mk}=${plainValue(mv)}`);
        if (typeof stack === 'string' && stack !== '') parts.push(`${k}.stack=${JSON.stringify(stack)}`);
        return parts.join(' ');
      }
      return `${k}=${plainValue(v)}`;
    });
  return `${[...head, ...fields].join(' ')}\n`;
}

export function createLogger(opts: LoggerOptions): Logger {
  const base: pino.LoggerOptions = {
    name: opts.name,
    level: opts.level ?? 'info',
    redact: { paths: REDACT, censor: '[redacted]' },
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  const dest = opts.destination ?? process.stdout;
  if ((opts.format ?? 'plain') === 'json') return pino(base, dest as pino.DestinationStream);
  const plain = {
    write(line: string): void {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        dest.write(line);
        return;
      }
      dest.write(formatPlainLine(record));
    },
  };
  return pino(base, plain);
}
