#!/bin/sh
# chock-test-world COMMAND [ARGS...]: runs COMMAND as "the host" of a small
# test internet, and only there. A user + mount + network namespace plays
# the host (root inside it, whoever called); a second network namespace
# plays the internet, joined to it by a veth pair, with an HTTP, an HTTPS
# and a DNS server (chock-test-servers) on documentation and private
# addresses of its own. No packet leaves these namespaces: they have no
# route to anything else.
#
#   host      h0  198.51.100.1/24  2001:db8:100::1/64  10.0.0.2/8
#   internet  i0  198.51.100.10/24 2001:db8:100::10/64 10.0.0.1/8 10.20.0.5/8
#
# The host's /etc/resolv.conf names the test DNS server, its /etc/hosts
# knows hosts-file.chock.test, and its CA bundle is the test CA alone
# (an overlay on /etc, private to its mount namespace). COMMAND runs as its
# caller's own uid and gets CHOCK_WORLD (the
# directory with zone.json, dns.log, http.log); when the world cannot be
# made it runs anyway with CHOCK_WORLD_MISSING saying why, so that each
# test skips naming it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${CHOCK_WORLD_INSIDE:-}" ]; then
  for tool in unshare nsenter ip openssl python3; do
    command -v "$tool" >/dev/null 2>&1 || { reason="the test internet needs $tool"; CHOCK_WORLD_MISSING=$reason exec "$@"; }
  done
  if ! unshare --user --map-root-user --net --mount true 2>/dev/null; then
    CHOCK_WORLD_MISSING="user namespaces cannot be made here (unshare --user --net --mount failed)" exec "$@"
  fi
  # Root keeps its whole range of ids in the world, so that Chock's root path
  # (a call as uid 65534) works there; anyone else has their one id.
  # (unshare's --map-users needs newuidmap; root writes the maps itself.)
  if [ "$(id -u)" = 0 ]; then
    sync=$(mktemp -d "${TMPDIR:-/tmp}/chock-world-sync.XXXXXX")
    mkfifo "$sync/go"
    unshare --user --net --mount --propagation private \
      sh -c 'read -r _ <"$1/go"; shift; CHOCK_WORLD_INSIDE=0:0 exec sh "$@"' sh "$sync" "$0" "$@" &
    inner=$!
    i=0
    while [ "$(readlink /proc/$inner/ns/user)" = "$(readlink /proc/self/ns/user)" ]; do
      i=$((i + 1)); [ $i -gt 500 ] && { echo "chock-test-world: no user namespace appeared" >&2; exit 1; }
      sleep 0.01
    done
    echo "0 0 65536" >/proc/$inner/uid_map
    echo "0 0 65536" >/proc/$inner/gid_map
    echo go >"$sync/go"
    status=0
    wait "$inner" || status=$?
    rm -rf "$sync"
    exit "$status"
  fi
  CHOCK_WORLD_INSIDE="$(id -u):$(id -g)" exec unshare --user --map-root-user --net --mount --propagation private \
    sh "$0" "$@"
fi
caller_ids=$CHOCK_WORLD_INSIDE
unset CHOCK_WORLD_INSIDE
world=$(mktemp -d "${TMPDIR:-/tmp}/chock-world.XXXXXX")
chmod 0755 "$world"
sleeper=
servers=
cleanup() {
  [ -n "$servers" ] && kill "$servers" 2>/dev/null
  [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$world"
}
trap cleanup EXIT INT TERM

# The test CA, and a certificate for *.chock.test it signed.
(
  cd "$world"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=chock-test-ca -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj /CN=www.chock.test -keyout server.key -out server.csr 2>/dev/null
  printf 'subjectAltName=DNS:*.chock.test,DNS:chock.test\nbasicConstraints=CA:FALSE\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt 2>/dev/null
)

# A repository git clones over dumb HTTP (served by chock-test-servers).
if command -v git >/dev/null 2>&1; then
  (
    export GIT_CONFIG_NOSYSTEM=1 HOME="$world"
    git init -q -b main "$world/src"
    echo "cloned through the relay" >"$world/src/README"
    git -C "$world/src" add README
    git -C "$world/src" -c user.name=World -c user.email=world@chock.test commit -q -m first
    git clone -q --bare "$world/src" "$world/repo.git"
    git -C "$world/repo.git" update-server-info
  )
fi

cat >"$world/zone.json" <<'ZONE'
{
  "www.chock.test": {"A": ["198.51.100.10"], "AAAA": ["2001:db8:100::10"]},
  "v6.chock.test": {"AAAA": ["2001:db8:100::10"]},
  "other.chock.test": {"A": ["198.51.100.10"]},
  "asked.chock.test": {"A": ["198.51.100.10"]},
  "denied.chock.test": {"A": ["198.51.100.10"]},
  "loopback.chock.test": {"A": ["127.0.0.1"]},
  "private.chock.test": {"A": ["10.0.0.1"]},
  "corp.chock.test": {"A": ["10.20.0.5"]},
  "metadata.chock.test": {"A": ["169.254.169.254"]},
  "loopback6.chock.test": {"AAAA": ["::1"]},
  "mapped.chock.test": {"AAAA": ["::ffff:127.0.0.1"]},
  "nat64.chock.test": {"AAAA": ["64:ff9b::a9fe:a9fe"]},
  "self.chock.test": {"A": ["198.51.100.1"]},
  "rebind.chock.test": {"rebind": ["198.51.100.10", "10.0.0.1"]},
  "slow.chock.test": {"drop": true}
}
ZONE

# The internet: a network namespace held open by a sleeping process.
unshare --net sleep 3600 &
sleeper=$!
i=0
while [ "$(readlink /proc/$sleeper/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do
  i=$((i + 1)); [ $i -gt 200 ] && { echo "chock-test-world: the internet namespace never appeared" >&2; exit 1; }
  sleep 0.01
done
ip link set lo up
ip link add h0 type veth peer name i0 netns "$sleeper"
ip link set h0 up
ip addr add 198.51.100.1/24 dev h0
ip addr add 10.0.0.2/8 dev h0
ip addr add 2001:db8:100::1/64 dev h0 nodad
nsenter -t "$sleeper" -n sh -c '
  ip link set lo up && ip link set i0 up &&
  ip addr add 198.51.100.10/24 dev i0 && ip addr add 10.0.0.1/8 dev i0 && ip addr add 10.20.0.5/8 dev i0 &&
  ip addr add 2001:db8:100::10/64 dev i0 nodad'
nsenter -t "$sleeper" -n python3 "$here/chock-test-servers" "$world" >"$world/servers.out" 2>&1 &
servers=$!
i=0
while [ ! -e "$world/ready" ]; do
  i=$((i + 1))
  if [ $i -gt 1000 ] || ! kill -0 "$servers" 2>/dev/null; then
    echo "chock-test-world: the servers did not start:" >&2
    cat "$world/servers.out" >&2
    exit 1
  fi
  sleep 0.01
done

printf 'nameserver 198.51.100.10\noptions timeout:1 attempts:1\n' >"$world/resolv.conf"
printf '127.0.0.1 localhost\n::1 localhost\n198.51.100.10 hosts-file.chock.test\n' >"$world/hosts"
# One overlay over the whole of /etc rather than binds on its files: a
# filtered call's own /etc is an overlay on this one, and an overlay sees
# the directories below it, never the mounts on its files.
mkdir -p "$world/etc/ssl/certs"
cp "$world/resolv.conf" "$world/hosts" "$world/etc/"
if [ -e /etc/ssl/certs/ca-certificates.crt ]; then
  cp "$world/ca.crt" "$world/etc/ssl/certs/ca-certificates.crt"
else
  export CHOCK_WORLD_NO_TLS="there is no /etc/ssl/certs/ca-certificates.crt to put the test CA in (ca-certificates)"
fi
chmod -R a+rX "$world/etc"
mount -t overlay overlay -o "lowerdir=$world/etc:/etc" /etc

# COMMAND runs as its caller's own id: root as root, anyone else as
# themselves again, in a user namespace of the world's where the world's
# root is their id (so what the world made is theirs).
status=0
if [ "$caller_ids" = 0:0 ]; then
  CHOCK_WORLD=$world "$@" || status=$?
else
  CHOCK_WORLD=$world unshare --user --map-user="${caller_ids%%:*}" --map-group="${caller_ids##*:}" -- "$@" ||
    status=$?
fi
exit "$status"
