#!/bin/sh
# Runs a test binary as an unprivileged user, because both root and ordinary
# users are real callers of Chock.
#   as-user.sh STAGE_DIR TEST_BINARY [ARGS...]
# As root: copies the staged binaries to a world-readable scratch directory
# (the build tree may sit under a private home) and drops to $CHOCK_TEST_UID
# (default 61000) with setpriv. As anyone else: runs the test as it is.
# With CHOCK_TEST_SMALL_TMPFS=OPTIONS set (e.g. size=256m,nr_inodes=4000), a
# tmpfs with those options is mounted for the user and named in
# CHOCK_TEST_SMALL_FS, for tests of what happens when a disk fills up.
set -eu
stage=$1
test=$2
shift 2
if [ "$(id -u)" != 0 ]; then
  CHOCK_STAGE=$stage exec "$test" "$@"
fi
uid=${CHOCK_TEST_UID:-61000}
scratch=$(mktemp -d /tmp/chock-as-user.XXXXXX)
trap 'umount -l "$scratch/small" 2>/dev/null || :; rm -rf "$scratch"' EXIT INT TERM
chmod 0755 "$scratch"
mkdir "$scratch/bin" "$scratch/home" "$scratch/tmp"
small_fs=
if [ -n "${CHOCK_TEST_SMALL_TMPFS:-}" ]; then
  mkdir "$scratch/small"
  mount -t tmpfs -o "nosuid,nodev,$CHOCK_TEST_SMALL_TMPFS" tmpfs "$scratch/small"
  chown "$uid:$uid" "$scratch/small"
  small_fs=$scratch/small
fi
# Only executables and what they load are staged; object files are not needed.
find "$stage" -maxdepth 1 -type f -perm -u+x -exec cp -p {} "$scratch/bin/" \;
chmod -R a+rX "$scratch/bin"
chown "$uid:$uid" "$scratch/home" "$scratch/tmp"
cd "$scratch"
status=0
# The one group kept: Debian's nix-users, which lets a user reach nix-daemon,
# as a Nix user's own account would (the Nix toolchain tests).
groups=--clear-groups
if nix_gid=$(getent group nix-users | cut -d: -f3) && [ -n "$nix_gid" ]; then
  groups=--groups=$nix_gid
fi
setpriv --reuid="$uid" --regid="$uid" "$groups" \
  env HOME="$scratch/home" TMPDIR="$scratch/tmp" CHOCK_STAGE="$scratch/bin" \
  XDG_DATA_HOME="$scratch/home/.local/share" XDG_STATE_HOME="$scratch/home/.local/state" \
  XDG_CONFIG_HOME="$scratch/home/.config" USER=chock-test LOGNAME=chock-test \
  CHOCK_TEST_SMALL_FS="$small_fs" \
  "$scratch/bin/$(basename "$test")" "$@" || status=$?
exit "$status"
