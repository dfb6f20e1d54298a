#!/bin/sh
# The Debian packages scripts/package makes: built by CPack from this build,
# installed with dpkg into a scratch root the test makes (never the
# machine's own), their files listed, and chock run from the scratch root's
# /usr/bin: --version, doctor, and a sandboxed /bin/true.
#   deb_test.sh BUILD_DIR
set -eu
build=$1
if [ "$(id -u)" != 0 ]; then
  echo "skip: dpkg installs only as root; run the suite as root to try the package"
  exit 77
fi
fail() { echo "deb_test: $*" >&2; exit 1; }
cd "$build"
rm -f ./*.deb
cpack -G DEB >cpack.log 2>&1 || { cat cpack.log >&2; fail "cpack failed"; }
deb=$(ls chock_*.deb) && dev=$(ls libchock-dev_*.deb) || fail "cpack made no chock or libchock-dev package"
root=$(mktemp -d /tmp/chock-deb-root.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/tmp"
: >"$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
dpkg --root="$root" --force-depends -i "$deb" "$dev" >"$root/tmp/dpkg.log" 2>&1 || { cat "$root/tmp/dpkg.log" >&2; fail "dpkg -i failed"; }

# What each package holds, and nothing else.
listed=$(dpkg --root="$root" -L chock | grep -v '^/\.$' | sort)
expected=$(printf '%s\n' /usr /usr/bin /usr/bin/chock /usr/bin/chock-connect /usr/libexec /usr/libexec/chock \
  /usr/libexec/chock/chock-fetch-hop /usr/libexec/chock/chock-git /usr/libexec/chock/chock-helper /usr/share \
  /usr/share/bash-completion /usr/share/bash-completion/completions \
  /usr/share/bash-completion/completions/chock /usr/share/man /usr/share/man/man1 /usr/share/man/man1/chock.1 \
  /usr/share/man/man1/chock-connect.1 /usr/share/man/man5 /usr/share/man/man5/chock.zon.5 /usr/share/zsh \
  /usr/share/zsh/vendor-completions /usr/share/zsh/vendor-completions/_chock | sort)
printf '%s\n' "$listed" >"$root/tmp/listed"
printf '%s\n' "$expected" >"$root/tmp/expected"
diff "$root/tmp/expected" "$root/tmp/listed" >&2 || fail "dpkg -L chock lists other files than expected (above: < expected, > listed)"
for f in $(dpkg --root="$root" -L libchock-dev); do
  case $f in
    /. | /usr | /usr/include | /usr/include/chock | /usr/include/chock/*.hpp | /usr/lib | /usr/lib/* ) ;;
    *) fail "libchock-dev holds $f" ;;
  esac
done
dpkg --root="$root" -L libchock-dev | grep -q '^/usr/lib/.*libchock\.a$' || fail "libchock-dev has no libchock.a"
dpkg --root="$root" -L libchock-dev | grep -q '/pkgconfig/chock\.pc$' || fail "libchock-dev has no chock.pc"
dpkg --root="$root" -L libchock-dev | grep -q '/cmake/chock/chockConfig\.cmake$' || fail "no CMake package"
depends=$(dpkg-deb -f "$deb" Depends)
case $depends in *git*) ;; *) fail "chock does not depend on git: $depends" ;; esac
case $depends in *libcurl*) ;; *) fail "chock does not name the fetcher's libcurl: $depends" ;; esac

# The installed commands work from the scratch root's /usr/bin.
chock=$root/usr/bin/chock
"$chock" --version | grep -q '^chock 0\.1\.0 (commit ' || fail "--version: $("$chock" --version)"
work=$(mktemp -d /tmp/chock-deb-work.XXXXXX)
trap 'rm -rf "$root" "$work"' EXIT
export XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$work/cache" XDG_CONFIG_HOME="$work/config"
(cd "$work" && git init -q p && cd p && "$chock" doctor >"$work/doctor.out" 2>&1) || { cat "$work/doctor.out" >&2; fail "chock doctor failed"; }
grep -q "user namespace" "$work/doctor.out" || fail "chock doctor printed no rows"
"$chock" sandbox -- /bin/true || fail "chock sandbox -- /bin/true failed"
out=$("$chock" sandbox -- /bin/sh -c 'echo inside') && [ "$out" = inside ] || fail "chock sandbox printed '$out'"
# A background call's runner is the installed companion, /usr/libexec/chock/chock-helper.
task=$(cd "$work/p" && git -c user.name=t -c user.email=t@t.invalid commit -q --allow-empty -m init &&
  "$chock" run --background -- sh -c 'echo from-the-$((6 * 7))' 2>"$work/task.err") ||
  { cat "$work/task.err" >&2; fail "chock run --background failed"; }
out=$(cd "$work/p" && "$chock" tasks wait "$task" --timeout 60 2>/dev/null)
[ "$out" = from-the-42 ] || fail "the installed chock's task printed '$out' (its runner is chock-helper)"
# The stripped binary is still static: nothing to load at run time.
file -L "$chock" 2>/dev/null | grep -q 'static' || ldd "$chock" 2>&1 | grep -q 'not a dynamic' || fail "chock is not static"
echo "deb_test: $deb and $dev install, list what they should, and run"
