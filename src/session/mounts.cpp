#include "session/mounts.hpp"

#include <thread>

#include "sandbox/overlay_holder.hpp"

namespace chock::session {

namespace {

// The overlays a holder keeps for the session (Overlay::hold_dir).
std::vector<Overlay*> kept_overlays(Config& config) {
  std::vector<Overlay*> kept;
  for (auto& o : config.overlays)
    if (!o.hold_dir.empty()) kept.push_back(&o);
  return kept;
}

// Every overlay that is not attached from a clone, beside.
Expected<void> mount_beside(Config& config) {
  for (auto& o : config.overlays)
    if (o.held < 0)
      if (auto r = workspace::work_beside(o); !r) return r;
  return {};
}

// Clones of every kept overlay, attached; the rest beside (this call does
// not hold the session's work directories alone). False: none held.
Expected<bool> attach_held(const workspace::Session& s, Config& config, CallMounts& m) {
  std::vector<Overlay*> kept = kept_overlays(config);
  m.clones = sandbox::take_held_overlays(s.dir, sandbox::hold_key(config.overlays, s.dir), kept.size());
  if (m.clones.size() != kept.size()) {
    m.clones.clear();
    return false;
  }
  for (std::size_t i = 0; i < kept.size(); ++i) kept[i]->held = m.clones[i].get();
  if (auto r = mount_beside(config); !r) return std::move(r).error();
  return true;
}

}  // namespace

Expected<CallMounts> choose_mounts(const workspace::Session& s, Config& config, bool task,
                                   const std::function<void(const std::string&)>& say) {
  CallMounts m;
  if (config.overlays.empty()) return m;
  if (task) return m;  // add_to_config gave a task's overlays work directories of their own
  std::vector<Overlay*> kept = kept_overlays(config);
  const bool keeps = !kept.empty() && kept.front()->hold_idle.count() > 0;
  const auto said_at = std::chrono::steady_clock::now() + kMountsWaitSaid;
  bool said = false;
  for (auto step = std::chrono::microseconds(200);;
       step = std::min(step * 2, std::chrono::microseconds(10'000))) {
    // The mount the session's holder keeps, shared with the calls that run.
    if (keeps) {
      auto shared = workspace::hold_mounts_for_call(s, true, std::chrono::milliseconds(0));
      if (!shared) return std::move(shared).error();
      if (shared->how == workspace::MountsHold::shared) {
        auto attached = attach_held(s, config, m);
        if (!attached) return std::move(attached).error();
        if (*attached) {
          m.hold = std::move(*shared);
          return m;
        }
      }
    }
    // Else the session's own mount, made by this call alone: no other is there.
    auto alone = workspace::hold_mounts_for_call(s, false, std::chrono::milliseconds(0));
    if (!alone) return std::move(alone).error();
    if (alone->how == workspace::MountsHold::alone) {
      m.hold = std::move(*alone);
      if (keeps) {
        // Made by another call while this one looked?
        auto attached = attach_held(s, config, m);
        if (!attached) return std::move(attached).error();
        if (*attached) {
          m.hold.share();
          return m;
        }
      } else if (!kept.empty()) {
        sandbox::release_held_overlay(kept.front()->hold_dir);  // none beside this call's own
      }
      workspace::set_aside_work(s);
      return m;
    }
    // A call that runs holds a mount of the session's overlay that no holder
    // keeps: two mounts of one upper layer would not see each other's
    // changes, so this call waits for it (the last call's teardown, the
    // usual case, takes milliseconds).
    if (!said && std::chrono::steady_clock::now() >= said_at) {
      say("session " + s.id +
          ": waiting for its running call to end (its workspace is not kept mounted between calls, so calls "
          "take turns)");
      said = true;
    }
    std::this_thread::sleep_for(step);
  }
}

}  // namespace chock::session
