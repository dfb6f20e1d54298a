#!/bin/sh
# The cost of one fork+exec inside a call: a shell loop of N `/bin/true`,
# inside `chock run` in a git workspace with and without the PCRE2 no-JIT
# preload (README, "Git inside"), and inside bubblewrap doing the same job,
# in the same run, ROUNDS times in turn. Prints microseconds per exec.
#   bench/exec_in_call.sh [CHOCK_BINARY] [N] [ROUNDS]
set -eu
chock=$(realpath "${1:-build/bin/chock}")
n=${2:-2000}
rounds=${3:-5}
command -v bwrap >/dev/null || { echo "exec_in_call.sh: needs bwrap (apt-get install bubblewrap)" >&2; exit 2; }
scratch=$(mktemp -d /tmp/chock-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
project=$scratch/project
mkdir "$project"
git -C "$project" init -q -b main
echo x > "$project/x"
git -C "$project" add x
git -C "$project" -c user.name=b -c user.email=b@example.com commit -qm x
export XDG_DATA_HOME=$scratch/data XDG_STATE_HOME=$scratch/state XDG_CONFIG_HOME=$scratch/config
# Prints the microseconds one exec took, averaged over the loop.
loop='a=$(date +%s%N); i=0; while [ $i -lt '$n' ]; do /bin/true; i=$((i+1)); done; b=$(date +%s%N); echo $(( (b-a)/1000/'$n' ))'
# shellcheck source=bench/bwrap_like.sh
. "$(cd "$(dirname "$0")" && pwd)/bwrap_like.sh"
bwrap_cmd=$(bwrap_like)
printf '| round | chock run, preload (us) | chock run, no preload (us) | bwrap (us) |\n|---|---|---|---|\n'
r=1
while [ "$r" -le "$rounds" ]; do
  with=$(cd "$project" && "$chock" run -- sh -c "$loop" 2>/dev/null)
  without=$(cd "$project" && "$chock" run -- sh -c "unset LD_PRELOAD; $loop" 2>/dev/null)
  # shellcheck disable=SC2086
  plain=$($bwrap_cmd sh -c "$loop")
  printf '| %s | %s | %s | %s |\n' "$r" "$with" "$without" "$plain"
  r=$((r + 1))
done
