// File-system helpers of the host side (the workspace, the network's stored
// credentials, the toolchain's records, the memory store): small,
// errno-carrying, never following a symbolic link where the sandbox could
// have planted one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "chock/error.hpp"

namespace chock::fs {

Expected<std::string> read_file(const std::string& path);
// Reads a file that must be a small regular file, refusing a symbolic link.
Expected<std::string> read_file_nofollow(const std::string& path, std::size_t max_bytes);
// Whether a file's bytes are flushed to the disk before it is renamed into
// place. `no` only for what a stamp checks and a refresh makes again (the
// git view, the stamps, git-cache/): a power cut can cost a refresh, never
// the session's own state.
enum class Durable : bool { no, yes };
// Writes through a temporary file and rename, so a reader never sees half.
Expected<void> write_file_atomic(const std::string& path, const std::string& content, mode_t mode = 0644,
                                 Durable durable = Durable::yes);
// The same, unless `path` is already a regular file of exactly `content` and
// `mode`: then nothing is written (no new inode, no fsync).
Expected<void> write_file_if_changed(const std::string& path, const std::string& content, mode_t mode = 0644,
                                     Durable durable = Durable::yes);
// The same where nothing is at `path` yet: an Error with EEXIST when
// something is (another writer got there first), and what is there stays.
// A file bound into running calls is installed this way, never replaced
// under them.
Expected<void> write_file_new(const std::string& path, const std::string& content, mode_t mode = 0644);
Expected<void> write_file(const std::string& path, const std::string& content, mode_t mode = 0644);
Expected<void> make_dirs(const std::string& path, mode_t mode = 0755);
bool exists(const std::string& path);
bool is_dir(const std::string& path);

// Removes a tree without following links, making directories writable first.
Expected<void> remove_tree(const std::string& path);
// A root caller's: gives `path` (made by Chock), the link itself if it is
// one, to `owner` and its group (group_of). Nothing for anyone else, nor
// for owner 0, nor when it is theirs already (a chown the file system would
// journal on every call).
Expected<void> give_to(uid_t owner, const std::string& path);
// lchown of every entry below and including `path`.
Expected<void> chown_tree(const std::string& path, uid_t uid, gid_t gid);
// The disk blocks a tree uses, in bytes (links not followed).
std::uint64_t disk_usage(const std::string& path);
// The entries below `path` (links not followed), for progress reports.
std::uint64_t count_entries(const std::string& path);

// The bytes a copy below writes of the regular file open at `fd`: its data
// extents (SEEK_DATA, SEEK_HOLE), since every copy keeps a file's holes.
Expected<std::uint64_t> data_bytes(int fd, const std::string& path);

// Copies a tree (regular files, directories, symbolic links; modes and
// mtimes kept). `skip(rel)` returning a reason leaves that entry out;
// special files are left out too; `on_skip(rel, reason)` hears of each.
struct CopyHooks {
  std::function<std::string(const std::string& rel)> skip;
  std::function<void(const std::string& rel, const std::string& why)> on_skip;
};
Expected<void> copy_tree(const std::string& from, const std::string& to, const CopyHooks& hooks);
// Copies one file (regular: bytes and permission bits, never setuid, setgid
// or sticky; symlink: the link) to `to`, replacing what is there.
Expected<void> copy_entry(const std::string& from, const std::string& to);

// Who a file made on the host belongs to; unset: whoever makes it.
struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Opens the directory `rel_dir` below `root_fd` with no symbolic link and no
// escape allowed, creating missing components (mode 0755, given to `owner`
// when set) when `create`.
Expected<int> open_dir_beneath(int root_fd, const std::string& rel_dir, bool create,
                               const Owner* owner = nullptr);

// How copy_beneath writes what it copies.
struct CopyPolicy {
  // Work coming back to the host: 0755 when any execute bit is set, else
  // 0644. Otherwise the permission bits as they are. Never setuid, setgid
  // or sticky either way.
  bool normalize_modes = false;
  const Owner* owner = nullptr;  // set: every file and directory made is chowned to it
};

// Copies the entry `rel` (a regular file or a symbolic link, copied as a
// link) from below `from_root` to the same place below `to_root`, replacing
// what is there. A file is written aside and renamed into place: a failed
// copy (a full disk) leaves no part of it. Both sides are resolved beneath their root with no symbolic
// link on the way and no blocking open: a link in a parent, a FIFO, a socket
// or a device is refused by name.
Expected<void> copy_beneath(int from_root, int to_root, const std::string& rel, const CopyPolicy& policy);
// Unlinks the non-directory `rel` below `root_fd`, its parents resolved
// beneath with no symbolic link. A missing entry is not an error.
Expected<void> unlink_beneath(int root_fd, const std::string& rel);
// The permission bits a copy carries: no setuid, setgid or sticky ever.
mode_t copied_mode(mode_t mode, bool normalize);

// Joins and splits '/'-separated relative paths.
std::string join(const std::string& dir, const std::string& name);
std::string parent_of(const std::string& rel);
std::string base_of(const std::string& rel);

}  // namespace chock::fs
