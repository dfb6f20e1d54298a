// A filtered call's /etc: an overlay whose lower layers are a small tmpfs of
// Chock's (resolv.conf naming the call's stub, hosts, nsswitch.conf) over
// the host's /etc, read-only. Everything the host has stays readable at the
// same path with the same bytes (the CA certificates included); nothing
// reaches the host, and there is no upper layer to write.
//
// A host that mounts files in its /etc (Docker and Podman bind the
// container's resolv.conf, hosts and hostname there) cannot give /etc as a
// layer: in the call's user namespace those mounts are locked, and the
// kernel refuses a layer with locked mounts below it (EINVAL). There the
// call's /etc is a tmpfs of Chock's instead: the same three files, and
// every other entry of the host's /etc bound in (a directory with what is
// mounted below it, a file as the host mounted it) or, a link, made again.
#pragma once

#include <string>
#include <vector>

#include "sandbox/mount_tree.hpp"

namespace chock::sandbox {

// The mount points below /etc (not /etc itself) in this process's mount
// namespace, from /proc/self/mountinfo: none on most machines.
std::vector<std::string> mounts_below_etc();

// The operation, for the end of the plan (over the toolchain's /etc bind):
// Kind::etc_overlay, or Kind::etc_tree where the host mounts below /etc.
MountOp plan_etc_overlay();

// In the program process, before the new root hides the host's /etc: the
// detached overlay, or -1 with errno. System calls only.
int make_etc_overlay(const MountOp& op) noexcept;

// The host's /etc, for make_etc_tree: opened before the new root hides it.
int open_host_etc() noexcept;

// In the program process, in the new root, with the host's /etc open at
// `host_etc` (O_DIRECTORY, opened before the new root hid it): Chock's
// tmpfs at op.target with the three files and the host's other entries,
// then read-only. False with errno. System calls only.
bool make_etc_tree(const MountOp& op, int host_etc) noexcept;

}  // namespace chock::sandbox
