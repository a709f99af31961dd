#!/bin/sh
# Runs in a build stage of the Dockerfile (Debian, with a shell), never in a final image. Copies what a
# program needs at run time into a root file system that a `FROM scratch` stage then takes whole:
#
#   sh docker/runtime-files.sh [--skip-in DIR] OUT PATH...
#
# - each PATH (a program, a shared library, or a directory whose files are all taken, such as the
#   xtables modules) at the same path under OUT; a symbolic link is copied as a link and its target
#   follows (so /usr/sbin/iptables-save -> /etc/alternatives/iptables-save -> xtables-nft-multi stays a
#   chain of links to one binary);
# - every shared library those files load, as `ldd` resolves them, and the dynamic loader;
# - for every Debian package one of those files belongs to: its dpkg status stanza in
#   OUT/var/lib/dpkg/status.d/<package>, the md5sums of the files copied from it in
#   OUT/var/lib/dpkg/status.d/<package>.md5sums, and its copyright file, as distroless images have them:
#   an SBOM scanner (syft) names exactly the Debian packages, and versions, whose files are inside, and
#   every file is accounted for (e2e/test/sbom.test.ts).
# --skip-in DIR: leave out files DIR already has at the same path (the shared Node base, for proxy-init's
#   iptables layer), and their packages.
# File attributes are kept (cp -a: mode, owner, and the security.capability of the xtables binaries).
set -eu

skip=""
if [ "${1:-}" = "--skip-in" ]; then
  skip=$2
  shift 2
fi
out=${1:?usage: runtime-files.sh [--skip-in DIR] OUT PATH...}
shift
[ $# -gt 0 ] || { echo "runtime-files.sh: no PATH to copy" >&2; exit 2; }

# Debian bookworm's merged /usr: /lib, /lib64, /bin and /sbin are links into /usr, in OUT too, so that a
# library ldd finds as /lib/x86_64-linux-gnu/libc.so.6 lands once, in /usr/lib.
mkdir -p "$out/usr/lib" "$out/usr/bin" "$out/usr/sbin"
for d in lib lib64 bin sbin; do
  if [ -L "/$d" ] && [ ! -e "$out/$d" ] && [ ! -L "$out/$d" ]; then
    ln -s "$(readlink "/$d")" "$out/$d"
    [ -e "/usr/$d" ] && mkdir -p "$out/usr/$d"
  fi
done

owners=$(mktemp)
seen=$(mktemp)

# copy_one PATH: the file (or link, and what it points to) at the same path under OUT.
copy_one() {
  p=$1
  grep -qxF "$p" "$seen" && return 0
  echo "$p" >>"$seen"
  if [ -n "$skip" ] && { [ -e "$skip$p" ] || [ -L "$skip$p" ]; }; then return 0; fi
  if [ ! -e "$out$p" ] && [ ! -L "$out$p" ]; then
    mkdir -p "$out$(dirname "$p")"
    cp -a "$p" "$out$p"
  fi
  # dpkg knows bookworm's libraries by their /lib path, the rest by their real one.
  owner=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$owner" ] || owner=$(dpkg -S "$(readlink -f "$p")" 2>/dev/null | head -1 | cut -d: -f1) || true
  if [ -n "$owner" ]; then
    if [ -f "$p" ] && [ ! -L "$p" ]; then
      printf '%s %s  %s\n' "$owner" "$(md5sum <"$p" | cut -d' ' -f1)" "${p#/}" >>"$owners"
    else
      printf '%s\n' "$owner" >>"$owners"
    fi
  fi
  if [ -L "$p" ]; then
    target=$(readlink "$p")
    case "$target" in
      /*) copy_one "$target" ;;
      *) copy_one "$(cd "$(dirname "$p")" && pwd -P)/$target" ;;
    esac
  fi
  return 0
}

# copy_with_libs FILE: the file, then every library ldd resolves for it (none for a static file).
copy_with_libs() {
  copy_one "$1"
  [ -f "$1" ] || return 0
  ldd "$1" 2>/dev/null | while read -r a b c _; do
    # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
    lib=""
    if [ "$b" = "=>" ]; then lib=$c; else case "$a" in /*) lib=$a ;; esac; fi
    [ -n "$lib" ] && [ -e "$lib" ] && copy_one "$lib"
  done
  return 0
}

for p in "$@"; do
  if [ -d "$p" ] && [ ! -L "$p" ]; then
    for f in "$p"/*; do copy_with_libs "$f"; done
  else
    copy_with_libs "$p"
  fi
done

# The packages' status stanzas and copyright files (a package the skipped base has is left out).
mkdir -p "$out/var/lib/dpkg/status.d"
cut -d' ' -f1 "$owners" | sort -u | while read -r pkg; do
  [ -n "$skip" ] && [ -e "$skip/var/lib/dpkg/status.d/$pkg" ] && continue
  dpkg-query -s "$pkg" >"$out/var/lib/dpkg/status.d/$pkg"
  grep "^$pkg " "$owners" | cut -d' ' -f2- | grep -v '^$' | sort -k2 >"$out/var/lib/dpkg/status.d/$pkg.md5sums" || true
  if [ -f "/usr/share/doc/$pkg/copyright" ]; then
    mkdir -p "$out/usr/share/doc/$pkg"
    cp "/usr/share/doc/$pkg/copyright" "$out/usr/share/doc/$pkg/copyright"
  fi
done
rm -f "$owners" "$seen"
