// Device names: the four action shapes, and USB identity read from a sysfs
// tree the test makes (a hub, a usb_device, its interface, its tty).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "devices/identify.hpp"
#include "policy/policy.hpp"
#include "process.hpp"

namespace chock::devices {
namespace {

using test::TempDir;
using test::write_file;

TEST(DeviceNames, TheFourShapesAreReadAndAnythingElseIsNamed) {
  auto usb = parse_action("device.usb.1d50.6018");
  ASSERT_TRUE(usb);
  EXPECT_EQ(usb->kind, DeviceName::Kind::usb);
  EXPECT_EQ(usb->vendor, 0x1d50U);
  EXPECT_EQ(usb->product, 0x6018U);
  auto serial = parse_action(policy::device_tty_serial("A6008isP"));
  ASSERT_TRUE(serial);
  EXPECT_EQ(serial->serial, "A6008isP");
  auto tty = parse_action("device.tty.0403.6001");
  ASSERT_TRUE(tty);
  EXPECT_EQ(tty->kind, DeviceName::Kind::tty_usb);
  auto path = parse_action(policy::device_path("/dev/dri/renderD128"));
  ASSERT_TRUE(path);
  EXPECT_EQ(path->path, "/dev/dri/renderD128");
  for (const char* bad :
       {"device.usb.1d5.6018", "device.usb.1d50", "device.path.etc.passwd", "device.path.dev",
        "device.path.dev._2e_2e.sda", "device.disk.sda", "net.connect.x.1", "device.tty.serial._"}) {
    auto r = parse_action(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().what.find(bad), std::string::npos) << r.error().what;
  }
}

// sys/devices/pci0/usb1 (a hub), .../usb1/1-1 (the device), 1-1:1.0 (its
// interface), .../tty/ttyACM0, with the class and bus links sysfs has.
class Sysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string hub = dir_ / "sys/devices/pci0/usb1", dev = hub + "/1-1", intf = dev + "/1-1:1.0",
                      tty = intf + "/tty/ttyACM0";
    std::filesystem::create_directories(tty);
    device(hub, "usb_device", "1d6b", "0002", "hubserial", "bus/usb/001/001");
    device(dev, "usb_device", "1d50", "6018", "A6008isP", "bus/usb/001/004");
    write_file(intf + "/uevent", "DEVTYPE=usb_interface\n");
    write_file(tty + "/uevent", "MAJOR=166\nMINOR=0\nDEVNAME=ttyACM0\n");
    std::filesystem::create_directories(dir_ / "sys/bus/usb/devices");
    std::filesystem::create_directories(dir_ / "sys/class/tty");
    std::filesystem::create_directory_symlink("../../../devices/pci0/usb1",
                                              dir_ / "sys/bus/usb/devices/usb1");
    std::filesystem::create_directory_symlink("../../../devices/pci0/usb1/1-1",
                                              dir_ / "sys/bus/usb/devices/1-1");
    std::filesystem::create_directory_symlink("../../../devices/pci0/usb1/1-1/1-1:1.0",
                                              dir_ / "sys/bus/usb/devices/1-1:1.0");
    std::filesystem::create_directory_symlink("../../devices/pci0/usb1/1-1/1-1:1.0/tty/ttyACM0",
                                              dir_ / "sys/class/tty/ttyACM0");
    // A tty of no USB device (the console) is not a USB serial adapter.
    std::filesystem::create_directories(dir_ / "sys/devices/virtual/tty/tty0");
    write_file(dir_ / "sys/devices/virtual/tty/tty0/uevent", "DEVNAME=tty0\n");
    std::filesystem::create_directory_symlink("../../devices/virtual/tty/tty0", dir_ / "sys/class/tty/tty0");
    roots_ = Roots{dir_ / "sys", "/dev"};
  }
  static void device(const std::string& d, const char* type, const char* vid, const char* pid,
                     const char* serial, const char* devname) {
    write_file(d + "/uevent", std::string("DEVTYPE=") + type + "\nDEVNAME=" + devname + "\n");
    write_file(d + "/idVendor", std::string(vid) + "\n");
    write_file(d + "/idProduct", std::string(pid) + "\n");
    write_file(d + "/serial", std::string(serial) + "\n");
  }
  TempDir dir_{"chock-sysfs"};
  Roots roots_;
};

TEST_F(Sysfs, TheUsbDeviceItselfNotItsHubOrInterfaceGivesTheIdentity) {
  auto node = find_node(*parse_action("device.usb.1d50.6018"), roots_);
  ASSERT_TRUE(node) << node.error().message();
  EXPECT_EQ(*node, "/dev/bus/usb/001/004");
  auto by_serial = find_node(*parse_action(policy::device_tty_serial("A6008isP")), roots_);
  ASSERT_TRUE(by_serial) << by_serial.error().message();
  EXPECT_EQ(*by_serial, "/dev/ttyACM0");
  auto by_id = find_node(*parse_action("device.tty.1d50.6018"), roots_);
  ASSERT_TRUE(by_id);
  EXPECT_EQ(*by_id, "/dev/ttyACM0");
  // The hub's serial and ids are not the tty's.
  EXPECT_FALSE(find_node(*parse_action(policy::device_tty_serial("hubserial")), roots_));
  EXPECT_FALSE(find_node(*parse_action("device.tty.1d6b.0002"), roots_));
}

TEST_F(Sysfs, AMissingDeviceIsAClearLine) {
  auto missing = find_node(*parse_action("device.usb.1234.5678"), roots_);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("no USB device 1234:5678 is plugged in"), std::string::npos);
  auto no_sysfs = find_node(*parse_action("device.tty.serial.x"), Roots{dir_ / "nothing", "/dev"});
  ASSERT_FALSE(no_sysfs);
  EXPECT_NE(no_sysfs.error().message().find("serial number x"), std::string::npos);
}

}  // namespace
}  // namespace chock::devices
