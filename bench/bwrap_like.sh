# Sourced by the benchmarks: bwrap_like prints a bubblewrap command line that
# does the job of a Chock call (every namespace, a new session, the toolchain
# read-only, a fresh /proc and /dev), ready for a command to follow.
bwrap_like() {
  cmd="$(command -v bwrap) --unshare-all --die-with-parent --new-session --ro-bind /usr /usr"
  for d in bin lib lib64 sbin; do
    if [ -L "/$d" ]; then cmd="$cmd --symlink $(readlink "/$d") /$d"
    elif [ -d "/$d" ]; then cmd="$cmd --ro-bind /$d /$d"; fi
  done
  echo "$cmd --ro-bind /etc /etc --proc /proc --dev /dev"
}
