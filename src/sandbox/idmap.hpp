// Idmapped mounts (mount_setattr with MOUNT_ATTR_IDMAP): a root caller's
// project shown with its owner's files as the uid the call runs as, so the
// overlay over it needs no copy. overlayfs takes an idmapped lower layer
// since Linux 5.19, a layer given by descriptor since 6.13, and a detached
// mount as that layer since 6.15; where any of it is missing, the workspace
// copies the project as before (overlay.cpp), and chock doctor says so.
#pragma once

#include <cstdint>
#include <string>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "util/fd.hpp"

namespace chock::sandbox {

// uid_map (or gid_map) text that swaps `from` and `to` and maps every other
// id to itself: a bijection of the whole id space in at most five lines.
std::string swap_map(std::uint32_t from, std::uint32_t to);

// A user namespace whose maps are swap_map of the shift's uids and of its
// gids. It exists only to be an idmapped mount's mapping: no process is left
// in it. Root only (it writes maps that name other uids).
Expected<UniqueFd> shift_namespace(const OwnerShift& shift);

// A detached, non-recursive clone of the mount at `dir` (a descriptor, as
// mount_plan.cpp opens a source), idmapped by `shift`: a file of
// shift.uid_from shows as shift.uid_to's through it, and the other way.
Expected<UniqueFd> shifted_clone(int dir, const std::string& path, const OwnerShift& shift);

}  // namespace chock::sandbox
