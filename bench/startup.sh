#!/bin/sh
# Startup latency: `chock sandbox -- /bin/true` against bubblewrap doing the
# same job (every namespace, a new session, the toolchain read-only, a fresh
# /proc and /dev), in the same run, as the caller and as an unprivileged uid.
#   bench/startup.sh [CHOCK_BINARY] [RUNS]
# Prints a Markdown table of medians and the ratio chock/bwrap, with the
# kernel's floor beside them (bench/namespace_floor.c: the same five
# namespaces, one fork, /bin/true, nothing else).
set -eu
chock=$(realpath "${1:-build/bin/chock}")
runs=${2:-300}
command -v hyperfine >/dev/null || { echo "startup.sh: needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
command -v bwrap >/dev/null || { echo "startup.sh: needs bwrap (apt-get install bubblewrap)" >&2; exit 2; }

bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr"
for d in bin lib lib64 sbin; do
  if [ -L "/$d" ]; then bwrap_cmd="$bwrap_cmd --symlink $(readlink "/$d") /$d"
  elif [ -d "/$d" ]; then bwrap_cmd="$bwrap_cmd --ro-bind /$d /$d"; fi
done
bwrap_cmd="$bwrap_cmd --ro-bind /etc /etc --proc /proc --dev /dev /bin/true"

scratch=$(mktemp -d /tmp/chock-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
cp "$chock" "$scratch/chock"
chmod 0755 "$scratch/chock"
cc -O2 -static -o "$scratch/floor" "$(dirname "$0")/namespace_floor.c" 2>/dev/null ||
  cc -O2 -o "$scratch/floor" "$(dirname "$0")/namespace_floor.c"
chmod 0755 "$scratch/floor"
floor_flags=2013396992 # CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC
mkdir "$scratch/out"
chmod 1777 "$scratch/out"

median() { # json file, command index
  python3 -c "import json,sys,statistics; r=json.load(open(sys.argv[1]))['results'][int(sys.argv[2])]; print('%.2f' % (statistics.median(r['times'])*1000))" "$1" "$2"
}

run_as() { # label, prefix: hyperfine itself runs as the caller measured
  label=$1
  shift
  json="$scratch/out/$(echo "$label" | tr -c 'a-z0-9\n' _).json"
  "$@" hyperfine -N --warmup 30 --runs "$runs" --export-json "$json" \
    "$scratch/chock sandbox -- /bin/true" "$bwrap_cmd" "$scratch/floor $floor_flags" >/dev/null
  c=$(median "$json" 0)
  b=$(median "$json" 1)
  f=$(median "$json" 2)
  ratio=$(python3 -c "print('%.2f' % ($c / $b))")
  echo "| $label | $c | $b | $ratio | $f |"
}

echo "| caller | chock sandbox median (ms) | bwrap median (ms) | chock / bwrap | kernel floor (ms) |"
echo "| --- | --- | --- | --- | --- |"
if [ "$(id -u)" = 0 ]; then
  run_as root env
  run_as "uid 61000" setpriv --reuid=61000 --regid=61000 --clear-groups
else
  run_as "uid $(id -u)" env
fi
