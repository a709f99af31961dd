// npm run e2e -- <spec> [options]: one e2e spec (e2e/specs/<spec>.test.ts) on the local cluster, once or
// several times in a row, each run's evidence kept apart, and for the faults spec the tables
// docs/reliability.md wants, one per run, then a summary. As root (the local cluster needs it).
//
//   npm run e2e -- faults --repeat 5              the whole faults spec five times, each in a shuffled order
//   npm run e2e -- faults --cases c1,c2 --rounds 10   the rotations ten times in a row on one install
//   npm run e2e -- policy                         any other spec, once
//
// Options:
//   --repeat N       run the spec N times in a row (a fresh install each time); default 1
//   --rounds N       faults: run the chosen cases N times on one install (MINIMESH_FAULTS_ROUNDS)
//   --cases a,b      faults: only these cases (f a b c1 c2 d e), by vitest's -t
//   --order O        faults: written | shuffle | shuffle:<seed>; default: shuffle with --repeat or --rounds
//                    above 1, written otherwise (MINIMESH_FAULTS_ORDER)
//   --rps N          faults: the load's rate (MINIMESH_FAULTS_RPS); default 200, the rate of
//                    docs/reliability.md; lower only on a machine too busy to serve it (the table says)
// Each run writes e2e/.artifacts/<spec>-runs/<time>/run-<i>/ (the spec's report, its vitest output);
// the summary goes to summary.md there. Exit code 1 if any run failed.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../src/tools.js';

const USAGE =
  'usage: npm run e2e -- <spec> [--repeat N] [--rounds N] [--cases c1,c2] [--order written|shuffle[:seed]] [--rps N]';
const FAULT_CASES = ['f', 'a', 'b', 'c1', 'c2', 'd', 'e'];

function fail(msg: string): never {
  process.stderr.write(`e2e: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

interface Options {
  spec: string;
  repeat: number;
  rounds: number;
  cases: string[];
  order: string | undefined;
  rps: number | undefined;
}

function parse(argv: string[]): Options {
  const o: Options = { spec: '', repeat: 1, rounds: 1, cases: [], order: undefined, rps: undefined };
  const count = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) fail(`${flag} ${v ?? ''}: expected a whole number ≥ 1`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--help' || a === '-h') {
      process.stdout.write(`${USAGE}\n(see the top of e2e/scripts/e2e.ts and docs/e2e.md)\n`);
      process.exit(0);
    } else if (a === '--repeat') o.repeat = count(a, argv[++i]);
    else if (a === '--rounds') o.rounds = count(a, argv[++i]);
    else if (a === '--cases') o.cases = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a === '--order') o.order = argv[++i];
    else if (a === '--rps') o.rps = count(a, argv[++i]);
    else if (a.startsWith('-')) fail(`unknown option ${a}`);
    else if (!o.spec) o.spec = a;
    else fail(`one spec at a time (got ${o.spec} and ${a})`);
  }
  if (!o.spec) fail('name a spec, e.g. faults');
  if (!existsSync(join(repoRoot, 'e2e', 'specs', `${o.spec}.test.ts`))) fail(`no spec e2e/specs/${o.spec}.test.ts`);
  const faults = o.spec === 'faults';
  if (!faults && (o.rounds > 1 || o.cases.length || o.order || o.rps))
    fail('--rounds, --cases, --order and --rps are for faults');
  if (o.rps !== undefined && (o.rps < 10 || o.rps > 1000)) fail(`--rps ${o.rps}: expected 10 to 1000`);
  const unknown = o.cases.filter((c) => !FAULT_CASES.includes(c));
  if (unknown.length) fail(`--cases ${unknown.join(',')}: expected some of ${FAULT_CASES.join(' ')}`);
  if (o.order !== undefined && !/^(written|shuffle(:\d+)?)$/.test(o.order))
    fail(`--order ${o.order}: expected written, shuffle or shuffle:<seed>`);
  return o;
}

interface FaultRows {
  order: string;
  rps?: number;
  started: string;
  seconds: number;
  rows: Array<{
    id: string;
    round: number;
    fault: string;
    sent: number;
    failed: number;
    recoveryMs: number;
    note: string;
  }>;
  between: { sent: number; failed: number };
}

/** Runs vitest once; its output goes to `log`, and the spec's own `[faults]`-style lines to the console. */
function runOnce(o: Options, dir: string): Promise<number> {
  mkdirSync(dir, { recursive: true });
  const args = ['vitest', 'run', `specs/${o.spec}.test.ts`];
  if (o.cases.length) args.push('-t', ` (${o.cases.join('|')})\\. `);
  const env: NodeJS.ProcessEnv = { ...process.env, MINIMESH_E2E_ARTIFACTS: dir };
  if (o.spec === 'faults') {
    env.MINIMESH_FAULTS_ROUNDS = String(o.rounds);
    env.MINIMESH_FAULTS_ORDER = o.order ?? (o.repeat > 1 || o.rounds > 1 ? 'shuffle' : 'written');
    if (o.rps !== undefined) env.MINIMESH_FAULTS_RPS = String(o.rps);
  }
  const log = createWriteStream(join(dir, 'vitest.log'));
  return new Promise((resolve) => {
    const child = spawn('npx', args, { cwd: join(repoRoot, 'e2e'), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    const onData = (d: Buffer) => {
      log.write(d);
      buf += d.toString('utf8');
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (/^\[\w+\]|✓|×|Tests |Test Files /.test(line.trim())) process.stdout.write(`${line}\n`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => log.end(() => resolve(code ?? 1)));
  });
}

function faultTable(r: FaultRows): string {
  const lines = [
    '| Fault | Requests sent | Failed | Recovery time | Notes |',
    '| --- | --- | --- | --- | --- |',
    ...r.rows.map(
      (x) =>
        `| ${x.id}. ${x.fault}${x.round > 1 ? ` (round ${x.round})` : ''} | ${x.sent.toLocaleString('en')} | ${x.failed} | ${(x.recoveryMs / 1000).toFixed(1)} s | ${x.note} |`,
    ),
    `| (between the faults: start, set-up steps) | ${r.between.sent.toLocaleString('en')} | ${r.between.failed} | | |`,
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const base = join(repoRoot, 'e2e', '.artifacts', `${o.spec}-runs`, stamp);
  const out: string[] = [`# npm run e2e -- ${process.argv.slice(2).join(' ')}: ${new Date().toISOString()}`, ''];
  const summary: Array<{ run: number; code: number; rows?: FaultRows }> = [];
  for (let i = 1; i <= o.repeat; i++) {
    const dir = join(base, `run-${i}`);
    process.stdout.write(`\n[e2e] run ${i} of ${o.repeat} (${o.spec}); evidence in ${dir}\n`);
    const t0 = Date.now();
    const code = await runOnce(o, dir);
    const rowsFile = join(dir, 'faults-rows.json');
    const rows = existsSync(rowsFile) ? (JSON.parse(readFileSync(rowsFile, 'utf8')) as FaultRows) : undefined;
    summary.push({ run: i, code, rows });
    const head = `### Run ${i}: ${code === 0 ? 'passed' : `FAILED (vitest exit ${code})`}, ${Math.round((Date.now() - t0) / 1000)} s${rows ? `, started ${rows.started}, ${rows.rps ?? 200} rps, order ${rows.order}` : ''}`;
    out.push(head, '', rows ? faultTable(rows) : '(no table: see vitest.log)', '');
    process.stdout.write(`\n${head}\n\n${rows ? faultTable(rows) : ''}\n`);
    writeFileSync(join(base, 'summary.md'), `${out.join('\n')}\n`);
  }
  if (o.spec === 'faults') {
    // Per fault: failed requests in each run (every round), and the requests sent in all.
    const ids = [...new Set(summary.flatMap((s) => s.rows?.rows.map((r) => r.id) ?? []))];
    const lines = [
      `| Fault | ${summary.map((s) => `run ${s.run}`).join(' | ')} | sent in all |`,
      `| --- | ${summary.map(() => '---').join(' | ')} | --- |`,
      ...ids.map((id) => {
        const per = summary.map((s) => {
          const rs = s.rows?.rows.filter((r) => r.id === id) ?? [];
          return rs.length ? String(rs.reduce((n, r) => n + r.failed, 0)) : '–';
        });
        const sent = summary.reduce(
          (n, s) => n + (s.rows?.rows.filter((r) => r.id === id).reduce((m, r) => m + r.sent, 0) ?? 0),
          0,
        );
        return `| ${id} | ${per.join(' | ')} | ${sent.toLocaleString('en')} |`;
      }),
    ];
    out.push('### Failed requests per fault and run', '', ...lines, '');
    process.stdout.write(`\n### Failed requests per fault and run\n\n${lines.join('\n')}\n`);
  }
  writeFileSync(join(base, 'summary.md'), `${out.join('\n')}\n`);
  const failed = summary.filter((s) => s.code !== 0).length;
  process.stdout.write(
    `\n[e2e] ${o.repeat - failed} of ${o.repeat} run(s) passed; summary: ${join(base, 'summary.md')}\n`,
  );
  process.exit(failed ? 1 : 0);
}

await main();
