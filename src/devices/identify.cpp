#include "devices/identify.hpp"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "policy/policy.hpp"
#include "util/split.hpp"

namespace chock::devices {

namespace {

Error bad(std::string_view action, const std::string& why) {
  return Error{"the device action " + std::string(action) + " " + why, "", 0, Errc::bad_config};
}

std::optional<unsigned> hex4(std::string_view s) {
  if (s.size() != 4) return std::nullopt;
  unsigned v = 0;
  for (char c : s) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<unsigned>(d);
  }
  return v;
}

// A sysfs attribute's first line, or "" when it is not there.
std::string attribute(const std::string& dir, const char* name) {
  std::ifstream in(dir + "/" + name);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// KEY=VALUE of a device's uevent file.
std::string uevent(const std::string& dir, const std::string& key) {
  std::ifstream in(dir + "/uevent");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(key + "=")) return line.substr(key.size() + 1);
  return "";
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

std::string child(const std::string& dir, const std::string& name) {
  std::string path = dir;
  path += '/';
  path += name;
  return path;
}

std::string real(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

struct UsbIdentity {
  unsigned vendor = 0, product = 0;
  std::string serial;
};

std::optional<UsbIdentity> identity_of(const std::string& usb_device) {
  auto vendor = hex4(attribute(usb_device, "idVendor")), product = hex4(attribute(usb_device, "idProduct"));
  if (!vendor || !product) return std::nullopt;
  return UsbIdentity{*vendor, *product, attribute(usb_device, "serial")};
}

// The device itself when it is a usb_device, else its nearest usb_device
// parent (a tty's interface's device, never the hub above it).
std::optional<UsbIdentity> nearest_usb_device(std::string dir, const std::string& sys) {
  const std::string top = real(sys);
  while (!dir.empty() && dir.size() > top.size() && dir.starts_with(top + "/")) {
    if (uevent(dir, "DEVTYPE") == "usb_device") return identity_of(dir);
    dir = dir.substr(0, dir.rfind('/'));
  }
  return std::nullopt;
}

std::string id_text(unsigned vendor, unsigned product) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%04x", vendor, product);
  return buf;
}

Expected<std::string> one_of(const std::vector<std::string>& found, const std::string& what,
                             const std::string& where) {
  if (found.size() == 1) return found[0];
  if (found.empty()) return Error{"no " + what + " is plugged in (looked in " + where + ")", "", ENODEV};
  std::string list;
  for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
  return Error{"more than one " + what + " is plugged in (" + list + "): name it by its serial number", "",
               EEXIST};
}

}  // namespace

Expected<DeviceName> parse_action(std::string_view action) {
  const std::vector<std::string> labels = split_nonempty(action, '.');
  if (labels.size() < 3 || labels[0] != "device")
    return bad(action,
               "is not one of device.usb.VID.PID, device.tty.serial.SERIAL, device.tty.VID.PID, "
               "device.path.dev.NAME");
  DeviceName n;
  if ((labels[1] == "usb" || labels[1] == "tty") && labels.size() == 4 && labels[2] != "serial") {
    auto vendor = hex4(labels[2]), product = hex4(labels[3]);
    if (!vendor || !product)
      return bad(action, "needs a vendor and a product id of four lower-case hex digits");
    n.kind = labels[1] == "usb" ? DeviceName::Kind::usb : DeviceName::Kind::tty_usb;
    n.vendor = *vendor;
    n.product = *product;
    return n;
  }
  if (labels[1] == "tty" && labels[2] == "serial" && labels.size() == 4) {
    auto serial = policy::unescape_label(labels[3]);
    if (!serial || serial->empty()) return bad(action, "needs a serial number (escaped as a policy label)");
    n.kind = DeviceName::Kind::tty_serial;
    n.serial = *serial;
    return n;
  }
  if (labels[1] == "path") {
    for (std::size_t i = 2; i < labels.size(); ++i) {
      auto part = policy::unescape_label(labels[i]);
      if (!part || part->empty() || *part == "." || *part == ".." || part->find('/') != std::string::npos)
        return bad(action, "has a path label that is not one file name");
      n.path += "/" + *part;
    }
    if (!n.path.starts_with("/dev/")) return bad(action, "names a path outside /dev (device.path.dev.NAME)");
    return n;
  }
  return bad(action,
             "is not one of device.usb.VID.PID, device.tty.serial.SERIAL, device.tty.VID.PID, "
             "device.path.dev.NAME");
}

Expected<std::string> find_node(const DeviceName& name, const Roots& roots) {
  if (name.kind == DeviceName::Kind::path) return name.path;
  std::vector<std::string> found;
  if (name.kind == DeviceName::Kind::usb) {
    const std::string where = roots.sys + "/bus/usb/devices";
    for (const auto& e : entries(where)) {
      const std::string dir = real(child(where, e));
      if (dir.empty() || uevent(dir, "DEVTYPE") != "usb_device") continue;
      auto id = identity_of(dir);
      const std::string node = uevent(dir, "DEVNAME");
      if (id && id->vendor == name.vendor && id->product == name.product && !node.empty())
        found.push_back(roots.dev + "/" + node);
    }
    return one_of(found, "USB device " + id_text(name.vendor, name.product), where);
  }
  const std::string where = roots.sys + "/class/tty";
  for (const auto& e : entries(where)) {
    const std::string dir = real(child(where, e));
    const std::string node = dir.empty() ? std::string() : uevent(dir, "DEVNAME");
    if (node.empty()) continue;
    auto id = nearest_usb_device(dir, roots.sys);
    if (!id) continue;
    const bool match = name.kind == DeviceName::Kind::tty_serial
                           ? id->serial == name.serial
                           : id->vendor == name.vendor && id->product == name.product;
    if (match) found.push_back(roots.dev + "/" + node);
  }
  return one_of(found,
                name.kind == DeviceName::Kind::tty_serial
                    ? "USB serial adapter with the serial number " + name.serial
                    : "USB serial adapter " + id_text(name.vendor, name.product),
                where);
}

}  // namespace chock::devices
