#!/bin/sh
# Packs the test VM's initramfs: static busybox, /init, and the given
# programs with the shared libraries they load, at the paths they load them.
#   build-initramfs.sh OUT.cpio.gz INIT PROGRAM...
set -eu
out=$1
init=$2
shift 2
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"
mkdir -p "$root/bin" "$root/chock/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/etc"
cp "$(command -v busybox)" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
cp "$init" "$root/init"
chmod 0755 "$root/init"
printf 'root:x:0:0:root:/:/bin/sh\nchock-test:x:61000:61000::/tmp:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nchock-test:x:61000:\nnogroup:x:65534:\n' > "$root/etc/group"
for p in "$@"; do
  cp "$p" "$root/chock/bin/"
  ldd "$p" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' | while read -r lib; do
    [ -e "$root$lib" ] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out.part"
mv "$out.part" "$out"
