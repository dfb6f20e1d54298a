#!/bin/sh
# Boots the test VM (software emulation: no KVM needed) and turns what its
# /init prints on the serial console into an exit status:
# 0 when every suite passed as root and as uid 61000, 1 otherwise, 77 when
# this machine cannot run the VM at all (no qemu-system-x86_64).
#   run-vm.sh WORKDIR SUITES PROGRAM...   (SUITES: comma-separated test binaries)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$1
suites=$2
shift 2
if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
  echo "skipped: qemu-system-x86_64 is not installed (scripts/install-deps installs qemu-system-x86)"
  exit 77
fi
for tool in busybox cpio; do
  command -v $tool >/dev/null 2>&1 || { echo "skipped: $tool is not installed"; exit 77; }
done
mkdir -p "$work"
t0=$(date +%s.%N)
"$here/fetch-kernel.sh" "$work/kernel"
"$here/build-initramfs.sh" "$work/initramfs.cpio.gz" "$here/init.sh" "$@"
t1=$(date +%s.%N)
# Software emulation unless asked: a writable /dev/kvm proves nothing inside
# a VM (this project's machines are Firecracker guests, where qemu's KVM
# aborts on an MSR or hangs at boot), and TCG boots this kernel in seconds.
accel=${CHOCK_VM_ACCEL:-tcg}
log="$work/console.log"
status=0
timeout 900 qemu-system-x86_64 -machine q35 -accel $accel -cpu max -smp 2 -m 1024 \
  -nographic -no-reboot -nic none -serial file:"$log" -monitor none \
  -kernel "$work/kernel/vmlinuz" -initrd "$work/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 quiet chock.suites=$suites" >/dev/null 2>&1 || status=$?
t2=$(date +%s.%N)
tr -d '\r' < "$log" | grep -v '^\[ *[0-9]*\.[0-9]*\] ' | grep -E '^(CHOCK-VM|\[ *(FAILED|SKIPPED|PASSED|==========) *\]|.*Failure$|Expected|  Which|.*skipped)' || true
if [ $status -ne 0 ]; then
  echo "run-vm: qemu exited with $status (see $log)"
  exit 1
fi
results=$(tr -d '\r' < "$log" | grep -c '^CHOCK-VM-RESULT ' || true)
failed=$(tr -d '\r' < "$log" | grep '^CHOCK-VM-RESULT ' | grep -vc '"status":0}' || true)
expected=$(( $(echo "$suites" | tr ',' '\n' | grep -c .) * 2 ))
echo "run-vm: prepare $(echo "$t1 $t0" | awk '{printf "%.1f", $1-$2}') s, boot and tests $(echo "$t2 $t1" | awk '{printf "%.1f", $1-$2}') s ($accel)"
if ! tr -d '\r' < "$log" | grep -q '^CHOCK-VM-DONE '; then
  echo "run-vm: the VM never finished (see $log)"
  exit 1
fi
if [ "$results" -ne "$expected" ] || [ "$failed" -ne 0 ]; then
  echo "run-vm: $failed of $results runs failed ($expected expected)"
  exit 1
fi
echo "run-vm: all $results runs passed"
