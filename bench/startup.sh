#!/bin/sh
# Startup latency: `chock sandbox -- /bin/true` against bubblewrap doing the
# same job (every namespace, a new session, the toolchain read-only, a fresh
# /proc and /dev), in the same run, as the caller and as an unprivileged uid.
#   bench/startup.sh [CHOCK_BINARY] [RUNS]
# With INTERLEAVE_STDOUT=FILE, every command's stdout and stderr are FILE,
# opened for appending, instead of /dev/null (chock then relays the call's
# output through a pipe: issue 54, class 4).
# The commands take turns (bench/interleave.c), so a change in the machine's
# load falls on all of them alike. Prints a Markdown table of medians (and
# the 10th to 90th percentile) in ms, the ratio chock/bwrap, and the kernel's
# floor (bench/namespace_floor.c: the same five namespaces, one fork,
# /bin/true, nothing else) and the spec's floor (bench/spec_floor.c: that,
# plus a pid 1 and the spec's mount tree in plain system calls, without
# seccomp, Landlock or any checking: a lower bound for any sandbox that keeps
# the spec's promises).
set -eu
chock=$(realpath "${1:-build/bin/chock}")
runs=${2:-300}
here=$(cd "$(dirname "$0")" && pwd)
command -v bwrap >/dev/null || { echo "startup.sh: needs bwrap (apt-get install bubblewrap)" >&2; exit 2; }

# shellcheck source=bench/bwrap_like.sh
. "$here/bwrap_like.sh"
bwrap_cmd="$(bwrap_like) /bin/true"

scratch=$(mktemp -d /tmp/chock-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
cp "$chock" "$scratch/chock"
cc -O2 -o "$scratch/interleave" "$here/interleave.c"
cc -O2 -static -o "$scratch/floor" "$here/namespace_floor.c" 2>/dev/null ||
  cc -O2 -o "$scratch/floor" "$here/namespace_floor.c"
cc -O2 -static -o "$scratch/spec_floor" "$here/spec_floor.c" 2>/dev/null ||
  cc -O2 -o "$scratch/spec_floor" "$here/spec_floor.c"
chmod 0755 "$scratch/chock" "$scratch/interleave" "$scratch/floor" "$scratch/spec_floor"
floor_flags=2013396992 # CLONE_NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC

run_as() { # label, prefix: the driver itself runs as the caller measured
  label=$1
  shift
  # shellcheck disable=SC2086
  "$@" "$scratch/interleave" "$runs" 30 "$scratch/chock" sandbox -- /bin/true :: $bwrap_cmd :: \
    "$scratch/floor" $floor_flags :: "$scratch/spec_floor" >"$scratch/out"
  # Each line: median p10 p90 command...
  awk -v label="$label" '
    NR == 1 { c = $1; cr = sprintf("%.2f-%.2f", $2, $3) }
    NR == 2 { b = $1; br = sprintf("%.2f-%.2f", $2, $3) }
    NR == 3 { f = $1; fr = sprintf("%.2f-%.2f", $2, $3) }
    NR == 4 { s = $1; sr = sprintf("%.2f-%.2f", $2, $3) }
    END {
      printf "| %s | %.2f (%s) | %.2f (%s) | %.2f | %.2f (%s) | %.2f | %.2f (%s) | %.2f |\n",
        label, c, cr, b, br, c / b, f, fr, f / b, s, sr, s / b
    }
  ' "$scratch/out"
}

echo "| caller | chock sandbox, ms (p10-p90) | bwrap, ms (p10-p90) | chock / bwrap | kernel floor, ms | floor / bwrap | spec floor, ms | spec floor / bwrap |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
if [ "$(id -u)" = 0 ]; then
  run_as root env
  run_as "uid 61000" setpriv --reuid=61000 --regid=61000 --clear-groups
else
  run_as "uid $(id -u)" env
fi
