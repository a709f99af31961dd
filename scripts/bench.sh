#!/usr/bin/env bash
# Runs every package's benchmark (`npm run bench -w <pkg>`), or only the ones named: npm run bench -- proxy identity
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npx turbo run build --output-logs=errors-only
pkgs=("$@")
if [ "${#pkgs[@]}" -eq 0 ]; then pkgs=(identity destination injector proxy); fi
for p in "${pkgs[@]}"; do
  if node -e "process.exit(require('./packages/$p/package.json').scripts?.bench ? 0 : 1)"; then
    echo "== bench: $p"
    npm run --silent bench -w "@minimesh/$p"
  else
    echo "== bench: $p has no benchmark yet" >&2
  fi
done
