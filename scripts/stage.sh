# shellcheck shell=bash
# The stage runner of scripts/setup.sh, demo.sh and test.sh: one line per stage on the console, the
# stage's own output (go, npm, apt, docker build) in a log file, shown when the stage fails.
#
#   source scripts/stage.sh
#   STAGE_PREFIX=setup                                   # the [tag] of every line (default: the script's name)
#   stage "Kubernetes binaries" "building (first time, 10–18 min)" bash packages/local-cluster/scripts/build-k8s.sh
#   stage_note "npm packages" "up to date"
#
# stage NAME DOING COMMAND... runs COMMAND with stdin from /dev/null and stdout and stderr into
# $STAGE_LOG_DIR/<prefix>-<name>.log (default ~/.cache/minimesh/logs), and prints, on stderr:
#   [setup] Kubernetes binaries: building (first time, 10–18 min), output in <log>… done in 1,093 s
# The first part is printed before the command starts, the rest when it ends, so a long stage shows
# what it is doing while it runs. When COMMAND fails the line ends in `failed after N s (exit C)`,
# followed by the log (the last $STAGE_TAIL lines, default 80, and the path when it is longer), and
# stage returns COMMAND's exit code. stage_note NAME WHAT prints `[setup] NAME: WHAT` for a stage
# that has nothing to do.

STAGE_PREFIX=${STAGE_PREFIX:-$(basename "${0:-stage}" .sh)}
STAGE_LOG_DIR=${STAGE_LOG_DIR:-${MINIMESH_CACHE:-$HOME/.cache/minimesh}/logs}
STAGE_TAIL=${STAGE_TAIL:-80}

# 1093 -> 1,093 (the thousands separator, whatever the locale).
stage_number() {
  local n=$1 out=""
  while [ "${#n}" -gt 3 ]; do
    out=",${n: -3}${out}"
    n=${n:0:${#n}-3}
  done
  printf '%s%s' "$n" "$out"
}

# "Kubernetes binaries" -> kubernetes-binaries
stage_slug() {
  local s
  s=$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-')
  s=${s#-}
  printf '%s' "${s%-}"
}

stage_note() {
  printf '[%s] %s: %s\n' "$STAGE_PREFIX" "$1" "$2" >&2
}

stage() {
  local name=$1 doing=$2
  shift 2
  [ $# -gt 0 ] || { printf 'stage %s: no command to run\n' "$name" >&2; return 2; }
  mkdir -p "$STAGE_LOG_DIR"
  local log
  log="$STAGE_LOG_DIR/${STAGE_PREFIX}-$(stage_slug "$name").log"
  local shown=$log
  [ -n "${HOME:-}" ] && [[ $log == "$HOME"/* ]] && shown="~${log#"$HOME"}"
  printf '[%s] %s: %s, output in %s… ' "$STAGE_PREFIX" "$name" "$doing" "$shown" >&2
  local t0=$SECONDS code=0
  "$@" </dev/null >"$log" 2>&1 || code=$?
  local took
  took=$(stage_number $((SECONDS - t0)))
  if [ "$code" -eq 0 ]; then
    printf 'done in %s s\n' "$took" >&2
    return 0
  fi
  printf 'failed after %s s (exit %d)\n' "$took" "$code" >&2
  local lines
  lines=$(wc -l <"$log")
  if [ "$lines" -gt "$STAGE_TAIL" ]; then
    printf -- '--- the last %d of %d lines of %s:\n' "$STAGE_TAIL" "$lines" "$log" >&2
    tail -n "$STAGE_TAIL" "$log" >&2
  else
    printf -- '--- %s:\n' "$log" >&2
    cat "$log" >&2
  fi
  printf -- '---\n' >&2
  return "$code"
}
