#include "chock/sandbox.hpp"

namespace chock {

Expresses expresses() noexcept {
  Expresses e;
#ifdef __linux__
  e.device_passthrough = true;
#endif
  return e;
}

}  // namespace chock
