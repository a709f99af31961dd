// Runs inside a pod: polls <url> every 5 ms until it answers 200, then prints "ready <ms>" where ms is the
// time since <startEpochMs> (when the proxy was spawned). Gives up after 60 s ("ready -1").
const [start, url] = process.argv.slice(2);
const deadline = Date.now() + 60_000;
for (;;) {
  try {
    const r = await fetch(url);
    if (r.status === 200) break;
  } catch {
    // not listening yet
  }
  if (Date.now() > deadline) {
    process.stdout.write('ready -1\n');
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 5));
}
process.stdout.write(`ready ${Date.now() - Number(start)}\n`);
