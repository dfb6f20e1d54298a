// A filtered call's /etc: an overlay whose lower layers are a small tmpfs of
// Chock's (resolv.conf naming the call's stub, hosts, nsswitch.conf) over
// the host's /etc, read-only. Everything the host has stays readable at the
// same path with the same bytes (the CA certificates included); nothing
// reaches the host, and there is no upper layer to write.
#pragma once

#include "sandbox/mount_tree.hpp"

namespace chock::sandbox {

// The operation, for the end of the plan (over the toolchain's /etc bind).
MountOp plan_etc_overlay();

// In the program process, before the new root hides the host's /etc: the
// detached overlay, or -1 with errno. System calls only.
int make_etc_overlay(const MountOp& op) noexcept;

}  // namespace chock::sandbox
