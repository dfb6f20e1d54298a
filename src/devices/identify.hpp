// Device passthrough's names: a device action (device.usb.1d50.6018,
// device.tty.serial.A6008isP, device.tty.1d50.6018, device.path.dev.kvm)
// read into what it names, and found on this machine as a node under /dev.
// USB devices are found by their identity in sysfs, never by a path that
// changes with the port or the order they were plugged in.
#pragma once

#include <string>
#include <string_view>

#include "chock/error.hpp"

namespace chock::devices {

struct DeviceName {
  enum class Kind { usb, tty_serial, tty_usb, path };
  Kind kind = Kind::path;
  unsigned vendor = 0, product = 0;  // usb, tty_usb
  std::string serial;                // tty_serial
  std::string path;                  // path: "/dev/kvm"
};

// Reads an action of one of the four shapes; an Error (Errc::bad_config)
// names the action and the shape it should have.
[[nodiscard]] Expected<DeviceName> parse_action(std::string_view action);

// Where to look: the real /sys and /dev, or a tree a test made.
struct Roots {
  std::string sys = "/sys";
  std::string dev = "/dev";
};

// The node the name is on this machine now: a USB device's (or its tty's)
// DEVNAME below `roots.dev`, or the path itself. An Error says what is not
// there ("no USB device 1d50:6018 is plugged in"), or that two match.
[[nodiscard]] Expected<std::string> find_node(const DeviceName& name, const Roots& roots = {});

}  // namespace chock::devices
