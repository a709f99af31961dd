#!/usr/bin/env bash
# Regenerates src/gen from proto/ with buf (its own compiler, no protoc needed) and ts-proto.
# `--check` regenerates into a temp dir and fails when the checked-in code is stale (used by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
buf=../../node_modules/.bin/buf
if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  "$buf" generate --template buf.gen.yaml -o "$tmp"
  if ! diff -r "$tmp/src/gen" src/gen >/dev/null; then
    echo "src/gen is out of date with proto/: run 'npm run generate -w @minimesh/proto'" >&2
    diff -r "$tmp/src/gen" src/gen | head -20 >&2
    exit 1
  fi
  echo "src/gen is up to date"
  exit 0
fi
rm -rf src/gen
"$buf" generate --template buf.gen.yaml
echo "generated $(find src/gen -name '*.ts' | wc -l) files into src/gen"
