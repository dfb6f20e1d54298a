// A session's overlay kept mounted between its calls.
//
// Made for each call and taken down after it, an overlay costs a call about
// a third of a sandbox more (measured: bench/README.md, a call in an open
// session): overlayfs checks its work directory at every mount, and syncs
// the upper layer's whole file system when it goes. So after a call that made one, a small process of
// its own (the holder) keeps a detached clone of it, and hands a clone of
// that to the session's next call, which attaches it where it would have
// mounted its own. The overlay then goes once, when the holder lets it go:
// when it has been idle for a while and no call holds the session's mounts
// lock, when a call asks with another key (the session's layers changed),
// or when asked to (release_held_overlay). A git session has two (its tree,
// its admin dir over the base's index): one holder keeps both under one key
// and hands a clone of each over in one answer (a second round trip cost a
// call 0.1 ms).
//
// overlayfs does not promise to see changes made beneath it while mounted:
// an overlay is held only where its lower layers do not change (a shared
// base), or where the holder watches the lower layer (a session's project,
// tree_watch.hpp) and lets go at its first change, or at one made since the
// call began to make the overlay.
// The holder listens on a Unix socket in the session's directory (0700, the
// caller's; never mounted into a call), answers only its own uid, and then
// only a peer that sends the secret it was given at its start (through a
// pipe, never on its command line), which the session's later calls read
// from the session's directory; it holds nothing of its caller's but the
// mounts, the socket and the lock file.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "sandbox/mount_tree.hpp"
#include "util/fd.hpp"

namespace chock::sandbox {

// The socket's name in the session's directory.
inline constexpr const char* kHolderSocket = "overlay.sock";
// Left in the session's directory by a holder whose lower layer has more
// directories than it watches (tree_watch.hpp): its calls hold no overlay.
inline constexpr const char* kUnwatchedMarker = "overlay.unwatched";

// A clone of each of the `count` overlays held for `key` in `dir` (a
// session's tree, its admin dir), to attach: none where no holder answers,
// or where it held another key (it has let those go by the time this
// returns, so new overlays of the same upper layers may be made). Called
// with the session's mounts lock held.
[[nodiscard]] std::vector<UniqueFd> take_held_overlays(const std::string& dir, std::string_view key,
                                                       std::size_t count) noexcept;

// Asks a holder in `dir` to let its overlays go, and returns once it has (or
// after a few seconds, or at once where none listens).
void release_held_overlay(const std::string& dir) noexcept;

// Starts a holder in `dir` for `mounts` (detached overlays, clones of the
// ones this call attached; at most kMaxPassedFds) under `key`; it lets go
// after `idle` without a request once it can take `lock_path` (the
// session's mounts lock). Called
// with that lock held. False where this kernel will not clone a detached
// mount (the holder could hand out nothing) or the holder could not start.
// `watch` (a directory descriptor, or -1): the lower layer to watch for a
// change since `since_ns` (unix time, ns: before the overlay was made).
[[nodiscard]] Expected<bool> hold_overlay(const std::string& dir, const std::string& lock_path,
                                          std::string_view key, std::vector<UniqueFd> mounts,
                                          std::chrono::milliseconds idle, int watch = -1,
                                          std::int64_t since_ns = 0);

// The holder's own program: `chock-helper hold-overlay IDLE_MS OWN_NAMESPACES
// MOUNTS KEY [SINCE_NS]` (the key in hex; SINCE_NS: the lower layer to watch
// is at one more descriptor), run by hold_overlay and by nothing else; it
// never returns but with 2 for arguments it was not given so.
inline constexpr const char* kHoldOverlayArg = "hold-overlay";
[[nodiscard]] int overlay_holder_main(int argc, char** argv);

// What a holder in `dir` compares: the layers and work directory of each of
// `overlays` held there, in order.
[[nodiscard]] std::string hold_key(const std::vector<Overlay>& overlays, const std::string& dir);

// The overlays of one call that are to be held once made: a root caller's
// clones are taken from the plan, an unprivileged caller's arrive from inside
// (Record::held_overlay); those of one directory go to one holder once all
// have come.
class PendingHolds {
 public:
  // `since_ns`: the call's time before it made any overlay (unix time, ns).
  void plan(const Config& config, MountPlan& plan, std::int64_t since_ns);
  void offer(int overlay_index, UniqueFd clone) noexcept;
  // Best effort: an overlay not held is made again by the next call.
  void start_ready() noexcept;

 private:
  struct Request {
    std::vector<int> indexes;  // in Config::overlays
    std::string dir, lock, key;
    std::chrono::milliseconds idle{0};
    std::string watch;  // the lower layer to watch; empty none
    std::int64_t since_ns = 0;
    std::vector<UniqueFd> clones;  // by `indexes`
    bool done = false;
    bool held = false;  // its holder took them
  };
  std::vector<Request> requests_;
  std::function<void()> held_;  // Config::overlays_held
};

}  // namespace chock::sandbox
