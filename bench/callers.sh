# shellcheck shell=sh
# What the workspace benchmarks share (sourced, not run): the two callers a
# bench is run as, their directories, and the medians they print.

# The median of the numbers on stdin, one a line.
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The environment of a caller whose home is $1: Chock's data, state, cache
# and config there, and no global git config. As `env` arguments (the
# scratch directories these live in have no blank in their names).
caller_env() {
  echo "HOME=$1 XDG_DATA_HOME=$1/data XDG_STATE_HOME=$1/state XDG_CACHE_HOME=$1/cache XDG_CONFIG_HOME=$1/config GIT_CONFIG_GLOBAL=/dev/null"
}

# Calls `$1 LABEL UID DROP...` once for each caller: as root and as uid
# 61000 (DROP is the setpriv that becomes it) when run as root, else as
# whoever runs it. DROP is the prefix of the caller's commands.
each_caller() {
  if [ "$(id -u)" = 0 ]; then
    "$1" root 0 env
    "$1" "uid 61000" 61000 setpriv --reuid=61000 --regid=61000 --clear-groups
  else
    "$1" "uid $(id -u)" "$(id -u)" env
  fi
}
