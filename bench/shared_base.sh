#!/bin/sh
# Workspaces at scale: a git project of FILES files (one commit made with
# git fast-import: 100 directories, files of about 40 bytes), timed side by
# side in one run, as root and as uid 61000:
#   worktree add   `git worktree add --detach` of HEAD (the baseline)
#   first session  `chock run --keep -- true` at a commit with no base yet
#                  (the base is made: a checkout, as worktree add does)
#   next session   the same at a commit whose base exists (and is settled:
#                  one untimed session a second later refreshed its index)
#   next commit    the first session at a commit one file away from a base
#   remove         `chock workspace remove ID` of a session
#   du             the data directory after ten sessions at one commit
#                  (its base settled before them), against the base alone
#   [LINK_BASE_INDEX=1] bench/shared_base.sh [CHOCK_BINARY] [FILES] [RUNS]
# Prints a Markdown table of medians in ms. Each first session has a data
# directory of its own, and the checkouts are deleted after the loop, outside
# the timing; each timing starts once the background sweeper has deleted
# what the last removal left (else it would time the deletion of 100,000
# files going on beside it).
set -eu
chock=$(realpath "${1:-build/bin/chock}")
files=${2:-100000}
runs=${3:-5}

scratch=$(mktemp -d /tmp/chock-base-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
cp "$chock" "$scratch/chock"
chmod 0755 "$scratch/chock"

# The repository, its commit written by fast-import (no working files needed:
# Chock and worktree add check out from the objects).
make_project() {
  git init -q -b main "$1"
  awk -v n="$2" 'BEGIN {
    print "commit refs/heads/main"
    print "committer b <b@example.com> 1700000000 +0000"
    print "data 4\nbase"
    for (i = 0; i < n; i++) {
      body = "// file " i "\nint f" i "(void) { return " i "; }\n"
      printf "M 100644 inline d%d/f%d.c\ndata %d\n%s\n", i % 100, i, length(body), body
    }
  }' | git -C "$1" fast-import --quiet
  git -C "$1" checkout -q -f main 2>/dev/null || true
}


# shellcheck source=bench/callers.sh
. "$(cd "$(dirname "$0")" && pwd)/callers.sh"

one_caller() {
  label=$1
  uid=$2
  shift 2
  home=$scratch/home-$uid
  mkdir -p "$home"
  # LINK_BASE_INDEX=1: sessions link their base's index (the operator's .link_base_index).
  if [ "${LINK_BASE_INDEX:-0}" = 1 ]; then
    mkdir -p "$home/config/chock"
    echo '.{ .link_base_index = true }' >"$home/config/chock/config.zon"
  fi
  make_project "$home/project" "$files"
  chown -R "$uid:$uid" "$home"
  # shellcheck disable=SC2016,SC2046
  "$@" env $(caller_env "$home") sh -c '
      set -eu
      chock=$1 home=$2 runs=$3
      p=$home/project
      now_ns() { date +%s%N; }
      session() { "$chock" run --project "$p" --keep -- true 2>&1 >/dev/null | sed -n "s/^chock: session \([a-z0-9]*\) .*/\1/p"; }
      # Waits (at most 10 minutes) until the trash holds nothing but its lock.
      swept() {
        n=0
        while [ "$(ls -A "$XDG_DATA_HOME/chock/trash" 2>/dev/null | grep -vc "^.sweep.lock$")" != 0 ] && [ $n -lt 1200 ]; do
          sleep 0.5; n=$((n + 1))
        done
        # A mass deletion leaves the file system busy (journal, discards) for a while.
        sync
        sleep 2
      }
      ms() { echo $(( ($2 - $1) / 1000 )) | awk "{ printf \"%.1f\\n\", \$1 / 1000 }"; }
      : >"$home/wt" >"$home/first" >"$home/next" >"$home/rm" >"$home/step"
      # The checkouts timed here are deleted only after the loop: a mass
      # deletion leaves this disk slow for a while, and would fall on one of
      # the two. Each first session has a data directory of its own (no base
      # yet, none removed before it); the two take turns going first.
      worktree_add() {
        swept
        a=$(now_ns); git -C "$p" worktree add -q --detach "$home/wt$i" HEAD; b=$(now_ns)
        ms "$a" "$b" >>"$home/wt"
      }
      i=0
      while [ $i -lt "$runs" ]; do
        [ $((i % 2)) = 0 ] && worktree_add
        export XDG_DATA_HOME="$home/data$i"
        swept
        a=$(now_ns); id=$(session); b=$(now_ns)
        ms "$a" "$b" >>"$home/first"
        sleep 1.1
        id3=$(session)
        a=$(now_ns); id2=$(session); b=$(now_ns)
        ms "$a" "$b" >>"$home/next"
        a=$(now_ns); "$chock" workspace remove "$id" >/dev/null 2>&1; b=$(now_ns)
        ms "$a" "$b" >>"$home/rm"
        export XDG_DATA_HOME="$home/data"
        [ $((i % 2)) = 1 ] && worktree_add
        i=$((i + 1))
      done
      i=0
      while [ $i -lt "$runs" ]; do
        git -C "$p" worktree remove --force "$home/wt$i"
        rm -rf "$home/data$i"
        i=$((i + 1))
      done
      git -C "$p" worktree prune
      "$chock" run --project "$p" -- true >/dev/null 2>&1
      # One file changed, committed: the first session at that commit.
      i=0
      while [ $i -lt "$runs" ]; do
        echo "// $i" >>"$p/d1/f1.c"
        git -C "$p" -c user.name=b -c user.email=b@example.com commit -qam "step $i"
        swept
        a=$(now_ns); id=$(session); b=$(now_ns)
        ms "$a" "$b" >>"$home/step"
        "$chock" workspace remove "$id" >/dev/null 2>&1
        i=$((i + 1))
      done
      "$chock" workspace gc >/dev/null 2>&1
      # The base made and settled (a second after its checkout, by the next
      # session), then ten sessions: the data directory holds the base and them.
      made=$(session)
      sleep 1.1
      "$chock" workspace remove "$(session)" >/dev/null 2>&1
      "$chock" workspace remove "$made" >/dev/null 2>&1
      swept
      ids=""
      i=0
      while [ $i -lt 10 ]; do ids="$ids $(session)"; i=$((i + 1)); done
      sleep 1
      du -sk "$home/data/chock/bases" 2>/dev/null | cut -f1 >"$home/du_base"
      du -sk "$home/data/chock" 2>/dev/null | cut -f1 >"$home/du_all"
      for id in $ids; do "$chock" workspace remove "$id" >/dev/null 2>&1; done
    ' sh "$scratch/chock" "$home" "$runs"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s KiB (base %s KiB) |\n' "$label" "$files" \
    "$(median <"$home/wt")" "$(median <"$home/first")" "$(median <"$home/next")" "$(median <"$home/step")" \
    "$(median <"$home/rm")" "$(cat "$home/du_all")" "$(cat "$home/du_base")"
}

echo "| caller | files | worktree add, ms | first session, ms | next session, ms | next commit, ms | remove, ms | data dir after 10 sessions |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
each_caller one_caller
