#!/bin/sh
# A call's start-up with a Nix dev shell as its toolchain, against the host's
# toolchain, in the same run: `chock run --session ID -- /bin/true` in a
# project whose shell.nix is the tests' own (bash-static and busybox in the
# store, a tool built from them by builtins.derivation; nothing fetched):
#   first:  the kept answer forgotten (`chock cache clear`) before each call,
#           so Nix evaluates the shell and queries its closure (its store
#           paths are already built: this is the evaluation, not a build)
#   cached: the answer read from the data directory
#   wide:   the same, cached, with 200 more store paths in the closure
#   host:   --host-toolchain, the host's /usr, /bin, /lib, /sbin
#   bench/nix_toolchain.sh [CHOCK_BINARY] [RUNS]
# Prints a Markdown table of medians (10th to 90th percentile) in ms.
set -eu
chock=$(realpath "${1:-build/bin/chock}")
runs=${2:-40}
here=$(cd "$(dirname "$0")" && pwd)
for tool in nix nix-store; do
  command -v "$tool" >/dev/null || { echo "nix_toolchain.sh: needs $tool (apt-get install nix-bin)" >&2; exit 2; }
done
[ -x /bin/bash-static ] && [ -x /bin/busybox ] ||
  { echo "nix_toolchain.sh: needs bash-static and busybox-static" >&2; exit 2; }
export NIX_CONFIG="substituters ="

scratch=$(mktemp -d /tmp/chock-nix-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
chmod 0755 "$scratch"
cp "$chock" "$scratch/chock"
cc -O2 -o "$scratch/interleave" "$here/interleave.c"
mkdir -p "$scratch/bash/bin" "$scratch/busybox/bin"
cp /bin/bash-static "$scratch/bash/bin/bash"
cp /bin/busybox "$scratch/busybox/bin/busybox"
bash=$(nix-store --add "$scratch/bash")
busybox=$(nix-store --add "$scratch/busybox")
bb=$busybox/bin/busybox
chmod -R a+rX "$scratch"

# shell.nix with MORE extra store paths (empty directories with a bin) on PATH.
shell_nix() {
  cat <<NIX
let
  bash = builtins.storePath "$bash";
  busybox = builtins.storePath "$busybox";
  tool = builtins.derivation {
    name = "chock-bench-tool";
    system = builtins.currentSystem;
    builder = "\${bash}/bin/bash";
    args = [ "-c" "$bb mkdir -p \$out/bin && $bb cp $bb \$out/bin/ && $bb ln -s busybox \$out/bin/sh && $bb ln -s busybox \$out/bin/true" ];
  };
  more = builtins.genList (i: builtins.derivation {
    name = "chock-bench-path-\${toString i}";
    system = builtins.currentSystem;
    builder = "\${bash}/bin/bash";
    args = [ "-c" "$bb mkdir -p \$out/bin" ];
  }) $1;
in builtins.derivation {
  name = "chock-bench-shell";
  system = builtins.currentSystem;
  builder = "\${bash}/bin/bash";
  args = [ "-c" "echo > \$out" ];
  outputs = [ "out" ];
  PATH = builtins.concatStringsSep ":" ([ "\${tool}/bin" ] ++ map (d: "\${d}/bin") more);
}
NIX
}

one_caller() { # label, prefix...: everything below runs as the caller measured
  label=$1
  shift
  home=$(mktemp -d "$scratch/home.XXXXXX")
  mkdir "$home/project"
  shell_nix 0 >"$home/project/shell.nix"
  # The same shell with 200 more store paths on its PATH (a closure the size of
  # a real project's dev shell): one bind mount each.
  mkdir "$home/wide"
  shell_nix 200 >"$home/wide/shell.nix"
  printf 'ok\n' >"$home/project/a.txt"
  printf 'ok\n' >"$home/wide/a.txt"
  cat >"$home/first" <<SH
#!/bin/sh
"$scratch/chock" cache clear --project "$home/project" >/dev/null && exec "$scratch/chock" run --project "$home/project" --session "\$1" -- true
SH
  chmod 0755 "$home/first"
  chmod -R a+rwX "$home"
  # shellcheck disable=SC2016
  "$@" env HOME="$home" XDG_DATA_HOME="$home/data" XDG_STATE_HOME="$home/state" XDG_CACHE_HOME="$home/cache" \
    XDG_CONFIG_HOME="$home/config" sh -c '
      set -eu
      session() { "$1/chock" run --project "$2" --keep -- true 2>&1 >/dev/null | sed -n "s/^chock: session \([a-z0-9]*\) .*/\1/p"; }
      id=$(session "$1" "$2/project")
      wide=$(session "$1" "$2/wide")
      "$1/interleave" "$3" 3 "$2/first" "$id" :: "$1/chock" run --project "$2/project" --session "$id" -- true :: \
        "$1/chock" run --project "$2/wide" --session "$wide" -- true :: \
        "$1/chock" run --project "$2/project" --session "$id" --host-toolchain -- true
      "$1/chock" workspace remove "$id" >/dev/null 2>&1
      "$1/chock" workspace remove "$wide" >/dev/null 2>&1' sh "$scratch" "$home" "$runs" >"$home/out"
  awk -v label="$label" '
    { m[NR] = $1; r[NR] = sprintf("%.2f-%.2f", $2, $3) }
    END { printf "| %s | %.2f (%s) | %.2f (%s) | %.2f (%s) | %.2f (%s) |\n", label, m[1], r[1], m[2], r[2], m[3], r[3], m[4], r[4] }
  ' "$home/out"
}

echo "| caller | first call (Nix evaluates), ms | cached answer (3 store paths), ms | cached answer (203 store paths), ms | host toolchain, ms |"
echo "| --- | --- | --- | --- | --- |"
if [ "$(id -u)" = 0 ]; then
  one_caller root env
  groups=--clear-groups
  gid=$(getent group nix-users | cut -d: -f3) && [ -n "$gid" ] && groups=--groups=$gid
  one_caller "uid 61000" setpriv --reuid=61000 --regid=61000 "$groups"
else
  one_caller "uid $(id -u)" env
fi
