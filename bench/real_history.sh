#!/bin/sh
# Workspaces on a real repository's history: any git repository with history
# (curl's was used for bench/README.md: `git clone https://github.com/curl/curl`),
# cloned locally, its HEAD moved back STEPS first-parent commits, then walked
# forward one commit at a time, as an agent's project moves under it. Timed
# side by side in one run, as root and as uid 61000:
#   worktree add   `git worktree add --detach` of the same commit (the baseline)
#   first session  `chock run --keep -- true` at the oldest commit, no base
#                  yet (three times, taking turns with worktree add)
#   next session   the same again at that commit (its base exists)
#   next commit    the first session at each later commit: a base derived
#                  from the one before, at the cost of what the commit changed
#   bench/real_history.sh [CHOCK_BINARY] REPOSITORY [STEPS]
# Prints a Markdown table of medians in ms (next commit also its slowest),
# and the files each step changed (median and most).
set -eu
chock=$(realpath "${1:-build/bin/chock}")
repository=$(realpath "${2:?a git repository with history}")
steps=${3:-10}

scratch=$(mktemp -d /tmp/chock-history-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
cp "$chock" "$scratch/chock"
chmod 0755 "$scratch/chock"

# shellcheck source=bench/callers.sh
. "$(cd "$(dirname "$0")" && pwd)/callers.sh"
most() { sort -n | tail -1; }

one_caller() {
  label=$1
  uid=$2
  shift 2
  home=$scratch/home-$uid
  mkdir -p "$home"
  # A copy, not hard links: the chown below must not reach the repository's own files.
  git clone -q --no-checkout --no-hardlinks "$repository" "$home/project"
  git -C "$home/project" rev-parse HEAD >"$home/tip"
  git -C "$home/project" checkout -q --detach "HEAD~$steps"
  chown -R "$uid:$uid" "$home"
  # shellcheck disable=SC2016,SC2046
  "$@" env $(caller_env "$home") sh -c '
      set -eu
      chock=$1 home=$2 steps=$3
      p=$home/project
      now_ns() { date +%s%N; }
      ms() { echo $(( ($2 - $1) / 1000 )) | awk "{ printf \"%.1f\\n\", \$1 / 1000 }"; }
      session() { "$chock" run --project "$p" --keep -- true 2>&1 >/dev/null | sed -n "s/^chock: session \([a-z0-9]*\) .*/\1/p"; }
      settle() { sync; sleep 1; }
      : >"$home/wt" >"$home/first" >"$home/next" >"$home/step" >"$home/changed"
      tip=$(cat "$home/tip")
      worktree_add() {
        settle
        a=$(now_ns); git -C "$p" worktree add -q --detach "$home/tree-$1" HEAD; b=$(now_ns)
        ms "$a" "$b" >>"$home/wt"
      }
      # The first session and worktree add take turns going first, each
      # session in a data directory of its own (no base there yet).
      r=0
      while [ $r -lt 3 ]; do
        [ $((r % 2)) = 0 ] && worktree_add "first$r"
        settle
        a=$(now_ns); XDG_DATA_HOME="$home/data-first$r" session >/dev/null; b=$(now_ns)
        ms "$a" "$b" >>"$home/first"
        [ $((r % 2)) = 1 ] && worktree_add "first$r"
        r=$((r + 1))
      done
      session >/dev/null
      sleep 1.1
      session >/dev/null
      a=$(now_ns); session >/dev/null; b=$(now_ns)
      ms "$a" "$b" >>"$home/next"
      k=1
      while [ $k -le "$steps" ]; do
        back=$((steps - k))
        git -C "$p" checkout -q --detach "$tip~$back"
        git -C "$p" diff --name-only "HEAD~1" HEAD | wc -l >>"$home/changed"
        # The two take turns going first.
        [ $((k % 2)) = 0 ] && worktree_add "$k"
        settle
        a=$(now_ns); session >/dev/null; b=$(now_ns)
        ms "$a" "$b" >>"$home/step"
        [ $((k % 2)) = 1 ] && worktree_add "$k"
        k=$((k + 1))
      done
      for wt in "$home"/tree-*; do git -C "$p" worktree remove --force "$wt"; done
    ' sh "$scratch/chock" "$home" "$steps"
  printf '| %s | %s | %s | %s | %s | %s (slowest %s) | %s (most %s) |\n' "$label" \
    "$(git -c safe.directory="*" -C "$home/project" ls-tree -r HEAD | wc -l)" "$(median <"$home/wt")" "$(median <"$home/first")" \
    "$(median <"$home/next")" "$(median <"$home/step")" "$(most <"$home/step")" "$(median <"$home/changed")" \
    "$(most <"$home/changed")"
}

echo "| caller | files | worktree add, ms | first session, ms | next session, ms | next commit, ms | files changed a commit |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
each_caller one_caller
