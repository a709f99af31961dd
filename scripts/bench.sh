#!/usr/bin/env bash
# Runs every package's benchmark (`npm run bench -w <pkg>`), or only the ones named: npm run bench -- proxy identity
# `npm run bench -- scale` runs the control plane at thousands of simulated pods (bench/scale, docs/scale.md; long:
# hold the machine's cluster lock around it). Not in the default list.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npx turbo run build --output-logs=errors-only
pkgs=("$@")
if [ "${#pkgs[@]}" -eq 0 ]; then pkgs=(identity destination injector proxy); fi
for p in "${pkgs[@]}"; do
  if [ "$p" = scale ]; then
    echo "== bench: scale"
    node scripts/bundle.mjs destination policy identity injector
    npx tsx bench/scale/scale.bench.ts
    npx tsx bench/scale/report.ts
    continue
  fi
  if node -e "process.exit(require('./packages/$p/package.json').scripts?.bench ? 0 : 1)"; then
    echo "== bench: $p"
    npm run --silent bench -w "@minimesh/$p"
  else
    echo "== bench: $p has no benchmark yet" >&2
  fi
done
