// The end of a call, off the caller's clock.
//
// When the keeper exits, its mount namespace goes, and with it the call's
// overlays; taking an overlay down syncs its upper layer's file system, a few
// milliseconds and more under load. A caller about to exit need not wait for
// that, but the next call of the same session must not mount that upper layer
// while the old overlay still holds it. So a small process, sharing the
// caller's memory on a stack that is never freed, keeps a descriptor holding a
// flock (the session's mounts lock) until the keeper is gone, and the next call
// takes that lock before it makes its sandbox.
#pragma once

namespace chock::sandbox {

// Starts the waiter over `keeper_pidfd` and `held_fd`; true once it runs.
// It waits as long as the keeper lives (the call's own deadline ends that):
// whoever waits on the lock bounds its own wait.
// False (errno set) where it could not start, and once it has been started in
// this process (EBUSY: its stack serves one waiter): the caller waits itself.
bool hand_teardown(int keeper_pidfd, int held_fd) noexcept;

// Returns once the waiter holds none of the caller's descriptors but the two
// it was given (at once where none was started). Called before the caller
// lets go of anything another process waits on (a lock, the end of its
// output), which the waiter's copies would hold; not in hand_teardown
// itself, where it would wait while the program starts.
void settle_teardown() noexcept;

}  // namespace chock::sandbox
