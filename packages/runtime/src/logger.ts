// The root logger. Only a program's main.ts calls createLogger; everything else takes a child.
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

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

export function createLogger(opts: LoggerOptions): Logger {
  const base = { name: opts.name, level: opts.level ?? 'info', redact: { paths: REDACT, censor: '[redacted]' } };
  const dest = opts.destination ?? process.stdout;
  if ((opts.format ?? 'plain') === 'json') return pino(base, dest as pino.DestinationStream);
  const stream = pretty({
    colorize: false,
    sync: true,
    destination: dest,
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
  return pino(base, stream);
}
