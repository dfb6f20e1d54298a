#!/bin/sh
# What a call in an open session costs beyond the sandbox: `chock run
# --session ID -- true` against `chock sandbox -- /bin/true` and `chock
# sandbox -- true` (found through PATH, as the session's call finds it; the
# ratios are to the latter, the issue's own pair), in the same run,
# taking turns (bench/interleave.c), in a git project of one file and in one
# of FILES files (the cost of a call must not grow with the project), and in
# FILES files that are not git (an overlay; a root caller's over the project
# idmapped to the run uid), as root and as uid 61000. Wall time and CPU time
# (every process of the command, until all are reaped), and the wall time to
# chock's own exit: what its caller waits for (the call's teardown, left to a
# process of its own, is after it; the call's output ends with chock).
#   bench/session_call.sh [CHOCK_BINARY] [RUNS] [FILES]
# Prints a Markdown table of medians (10th to 90th percentile) in ms.
set -eu
chock=$(realpath "${1:-build/bin/chock}")
runs=${2:-200}
files=${3:-20000}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/callers.sh
. "$here/callers.sh"

scratch=$(mktemp -d /tmp/chock-call-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
cp "$chock" "$scratch/chock"
cc -O2 -o "$scratch/interleave" "$here/interleave.c"
chmod 0755 "$scratch/chock" "$scratch/interleave"

# A project of $2 files in 100 directories: not git with a third argument
# "plain", else a git repository of one commit.
make_project() {
  mkdir -p "$1"
  (
    cd "$1"
    i=0
    while [ "$i" -lt "$2" ]; do
      d=d$((i % 100))
      [ -d "$d" ] || mkdir "$d"
      echo "$i" >"$d/f$i"
      i=$((i + 1))
    done
  )
  [ "${3:-}" = plain ] && return
  git -C "$1" init -q -b main
  git -C "$1" add -A
  git -C "$1" -c user.name=b -c user.email=b@example.com -c gc.auto=0 -c maintenance.auto=false commit -qm base
}

one_caller() {
  label=$1
  uid=$2
  shift 2
  home=$scratch/home-$uid
  mkdir -p "$home"
  make_project "$home/small" 1
  make_project "$home/large" "$files"
  make_project "$home/plain" "$files" plain
  chown -R "$uid:$uid" "$home"
  # A repository whose refs changed in the last 2 s is asked again on each
  # call (src/workspace/refs_stamp.hpp): the bench measures the usual case.
  sleep 2
  # shellcheck disable=SC2016,SC2046
  "$@" env $(caller_env "$home") INTERLEAVE_CPU=1 INTERLEAVE_EXIT=1 sh -c '
      set -eu
      session() { "$1/chock" run --project "$2" --keep -- true 2>&1 >/dev/null | sed -n "s/^chock: session \([a-z0-9]*\) .*/\1/p"; }
      small=$(session "$1" "$2/small")
      large=$(session "$1" "$2/large")
      plain=$(session "$1" "$2/plain")
      cd "$2"
      "$1/interleave" "$3" 10 "$1/chock" sandbox -- /bin/true :: \
        "$1/chock" sandbox -- true :: \
        "$1/chock" run --project "$2/small" --session "$small" -- true :: \
        "$1/chock" run --project "$2/large" --session "$large" -- true :: \
        "$1/chock" run --project "$2/plain" --session "$plain" -- true
      for s in "$small" "$large" "$plain"; do "$1/chock" workspace remove --force "$s" >/dev/null 2>&1; done' \
    sh "$scratch" "$home" "$runs" >"$home/out"
  awk -v label="$label" -v files="$files" '
    { w[NR] = $1; wr[NR] = sprintf("%.2f-%.2f", $2, $3); c[NR] = $4; cr[NR] = sprintf("%.2f-%.2f", $5, $6)
      x[NR] = $7; xr[NR] = sprintf("%.2f-%.2f", $8, $9) }
    END {
      split("chock sandbox -- /bin/true|chock sandbox -- true|chock run --session ID -- true, 1 file|chock run --session ID -- true, " files " files|chock run --session ID -- true, " files " files, not git", what, "|")
      for (i = 1; i <= 5; ++i)
        printf "| %s | %s | %.2f (%s) | %.2f | %.2f (%s) | %.2f | %.2f (%s) | %.2f |\n", label, what[i], w[i], wr[i], w[i] / w[2], c[i], cr[i], c[i] / c[2], x[i], xr[i], x[i] / x[2]
    }
  ' "$home/out"
}

echo "| caller | command | wall, ms | / sandbox | CPU, ms | / sandbox | to chock's exit, ms | / sandbox |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
each_caller one_caller
