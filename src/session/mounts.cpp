#include "session/mounts.hpp"

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

Expected<CallMounts> choose_mounts(const workspace::Session& s, Config& config, bool task) {
  CallMounts m;
  if (config.overlays.empty()) return m;
  if (task) return m;  // add_to_config gave a task's overlays work directories of their own
  std::vector<Overlay*> kept = kept_overlays(config);
  const bool keeps = !kept.empty() && kept.front()->hold_idle.count() > 0;
  if (keeps) {
    auto shared = workspace::hold_mounts_for_call(s, true, kMountsWaitBeside);
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
  auto alone = workspace::hold_mounts_for_call(s, false, kMountsWaitBeside);
  if (!alone) return std::move(alone).error();
  if (alone->how != workspace::MountsHold::alone) {
    // Another call holds the session's own mount, and no holder keeps it.
    if (auto r = mount_beside(config); !r) return std::move(r).error();
    return m;
  }
  m.hold = std::move(*alone);
  if (keeps) {
    // Made by another call while this one waited?
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

}  // namespace chock::session
