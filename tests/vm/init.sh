#!/bin/sh
# /init of the test VM. Moves to a tmpfs root, mounts a cgroup2 tree with
# memory and pids enabled, delegates a subtree to uid 61000, runs the test
# suites as root and as that uid, and reports each run on the serial console
# in lines the host parses:
#   CHOCK-VM-RESULT {"run":"root","suite":"limits_vm","status":0}
#   CHOCK-VM-DONE {"kernel":"6.1.0-...","landlock_abi":2,"seconds":12}
export PATH=/bin
# The initramfs root is rootfs, the one mount with no parent, and pivot_root
# refuses it: `chock sandbox` could not build its tree here. So this script
# first copies itself and everything else onto a tmpfs and runs again from
# there, with switch_root (which frees the initramfs copy).
if [ "$$" = 1 ] && [ ! -e /.chock-tmpfs-root ]; then
  mkdir /newroot
  mount -t tmpfs -o mode=0755 tmpfs /newroot
  for d in /*; do
    case $d in
      /newroot) ;;
      /proc | /sys | /dev | /tmp) mkdir -p "/newroot$d" ;;
      *) cp -a "$d" /newroot/ ;;
    esac
  done
  touch /newroot/.chock-tmpfs-root
  exec switch_root /newroot /init
fi
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
say() { echo "$*" > /dev/ttyS0; }
cg=/sys/fs/cgroup
echo "+memory +pids" > $cg/cgroup.subtree_control

suites=$(cat /proc/cmdline | sed -n 's/.*chock.suites=\([^ ]*\).*/\1/p' | tr ',' ' ')
stage=/chock/bin

# Root: this shell goes into a leaf; Chock finds the root cgroup delegated.
mkdir $cg/root-run $cg/u61000
echo $$ > $cg/root-run/cgroup.procs
# uid 61000 owns u61000 (memory and pids enabled in it) and sits in u61000/session.
chown 61000:61000 $cg/u61000 $cg/u61000/cgroup.procs $cg/u61000/cgroup.subtree_control $cg/u61000/cgroup.threads
echo "+memory +pids" > $cg/u61000/cgroup.subtree_control
mkdir $cg/u61000/session
chown -R 61000:61000 $cg/u61000/session
mkdir -m 0700 /tmp/u61000 && chown 61000:61000 /tmp/u61000

start=$(cut -d' ' -f1 /proc/uptime)
for suite in $suites; do
  say "CHOCK-VM-RUN root $suite"
  CHOCK_STAGE=$stage CHOCK_TEST_EXPECT_ROOT=1 CHOCK_VM_CGROUP_PARENT=$cg CHOCK_VM_REFUSING_CGROUP=$cg/u61000 \
    TMPDIR=/tmp $stage/$suite > /dev/ttyS0 2>&1
  say "CHOCK-VM-RESULT {\"run\":\"root\",\"suite\":\"$suite\",\"status\":$?}"
  say "CHOCK-VM-RUN user $suite"
  sh -c "echo \$\$ > $cg/u61000/session/cgroup.procs && exec $stage/setpriv --reuid=61000 --regid=61000 --clear-groups \
    env CHOCK_STAGE=$stage CHOCK_VM_CGROUP_PARENT=$cg/u61000 CHOCK_VM_REFUSING_CGROUP=$cg/root-run \
    HOME=/tmp/u61000 TMPDIR=/tmp/u61000 $stage/$suite" > /dev/ttyS0 2>&1
  say "CHOCK-VM-RESULT {\"run\":\"user\",\"suite\":\"$suite\",\"status\":$?}"
done
end=$(cut -d' ' -f1 /proc/uptime)
abi=$($stage/landlock-abi 2>/dev/null || echo 0)
say "CHOCK-VM-DONE {\"kernel\":\"$(uname -r)\",\"landlock_abi\":$abi,\"lsm\":\"$(cat /sys/kernel/security/lsm 2>/dev/null)\",\"boot_seconds\":$start,\"test_seconds\":$(echo "$end $start" | awk '{print $1-$2}')}"
poweroff -f
