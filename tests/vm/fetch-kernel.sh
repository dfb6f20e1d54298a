#!/bin/sh
# Fetches Debian 12's cloud kernel image for the test VM, without installing
# it: apt-get download the .deb, take vmlinuz out with dpkg-deb.
#   fetch-kernel.sh OUTDIR   ->  OUTDIR/vmlinuz, OUTDIR/release
set -eu
out=$1
[ -s "$out/vmlinuz" ] && exit 0
mkdir -p "$out"
# The metapackage names the current versioned image package.
pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)
if [ -z "$pkg" ]; then
  echo "fetch-kernel: apt-cache knows no linux-image-cloud-amd64 (run apt-get update)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) || {
  echo "fetch-kernel: apt-get download $pkg failed" >&2
  exit 1
}
dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*'
cp "$tmp"/boot/vmlinuz-* "$out/vmlinuz.part"
basename "$tmp"/boot/vmlinuz-* | sed 's/^vmlinuz-//' > "$out/release"
mv "$out/vmlinuz.part" "$out/vmlinuz"
