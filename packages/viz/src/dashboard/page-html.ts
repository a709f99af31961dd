// The dashboard's one HTML page; the behaviour is the browser module /assets/app.js (page/app.ts).
import { escapeXml } from './svg.js';

export function dashboardHtml(opts: { context: string; defaultNamespace: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>minimesh viz</title>
<style>
  body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2733; background: #fafbfc; }
  header { background: #1d2733; color: #fff; padding: 10px 20px; display: flex; gap: 24px; align-items: center; }
  header h1 { font-size: 18px; margin: 0; }
  header .ctx { color: #b8c4d4; font-size: 12px; }
  header label { font-size: 13px; }
  main { padding: 12px 20px; display: grid; grid-template-columns: minmax(560px, 1fr) minmax(480px, 1fr); gap: 16px; }
  section { background: #fff; border: 1px solid #e1e6ee; border-radius: 6px; padding: 10px 14px; overflow-x: auto; min-width: 0; }
  section.wide { grid-column: 1 / -1; }
  h2 { font-size: 14px; margin: 2px 0 8px; }
  table { border-collapse: collapse; width: 100%; font-size: 12px; }
  th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid #eef1f5; white-space: nowrap; }
  th.num, td.num { text-align: right; }
  tbody tr { cursor: pointer; }
  tbody tr.selected { background: #e8f1fd; }
  #error { display: none; background: #fdecea; color: #8a1c1c; border: 1px solid #f5c2c0; padding: 8px 12px; margin: 10px 20px 0; border-radius: 4px; font-size: 13px; }
  #error.shown { display: block; }
  .muted { color: #8592a3; font-size: 12px; }
  .secured { color: #2a9d4b; }
  .plaintext { color: #d9363e; }
  #tap-log { max-height: 320px; overflow: auto; }
  button { font-size: 12px; padding: 3px 10px; }
  .charts { display: flex; gap: 12px; flex-wrap: wrap; }
</style>
</head>
<body>
<header>
  <h1>minimesh viz</h1>
  <span class="ctx" id="context">${escapeXml(opts.context)}</span>
  <label>Namespace <select id="namespace" data-default="${escapeXml(opts.defaultNamespace)}"></select></label>
  <label>Kind <select id="kind"><option value="deploy">deployments</option><option value="sts">statefulsets</option><option value="ds">daemonsets</option><option value="po">pods</option></select></label>
  <span class="ctx" id="updated"></span>
</header>
<div id="error" role="alert"></div>
<main>
  <section>
    <h2>Namespaces</h2>
    <table id="namespaces"><thead><tr><th>NAMESPACE</th><th class="num">MESHED</th></tr></thead><tbody></tbody></table>
  </section>
  <section>
    <h2>Edges <span class="muted">(who talks to whom; green √ = mTLS, red dashed = plaintext)</span></h2>
    <div id="graph"></div>
    <table id="edges"><thead><tr><th>SRC</th><th>DST</th><th>SECURED</th><th>CLIENT_ID</th><th>SERVER_ID</th></tr></thead><tbody></tbody></table>
  </section>
  <section class="wide">
    <h2>Workloads <span class="muted">(golden metrics over the last minute; RPS over the last 15 minutes)</span></h2>
    <table id="workloads"><thead><tr><th>NAME</th><th class="num">MESHED</th><th class="num">SUCCESS</th><th class="num">RPS</th><th class="num">P50</th><th class="num">P95</th><th class="num">P99</th><th class="num">TCP</th><th>RPS HISTORY</th></tr></thead><tbody></tbody></table>
  </section>
  <section class="wide">
    <h2>Over time: <span id="selected">no workload selected</span></h2>
    <div class="charts"><div id="latency-chart"></div><div id="rps-chart"></div></div>
  </section>
  <section class="wide">
    <h2>Live requests <span class="muted" id="tap-status"></span> <button id="tap-toggle" disabled>Start tap</button></h2>
    <div id="tap-log"><table id="tap"><thead><tr><th>TIME</th><th>PROXY</th><th>METHOD</th><th>AUTHORITY</th><th>PATH</th><th class="num">STATUS</th><th class="num">LATENCY</th><th>SOURCE</th><th>DESTINATION</th><th>TLS</th></tr></thead><tbody></tbody></table></div>
  </section>
</main>
<script type="module" src="/assets/page/app.js"></script>
</body>
</html>
`;
}
