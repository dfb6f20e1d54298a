// Inside a call: opens a device node read-write and, for KVM, asks the
// driver its API version. Prints "open ok", "api N" or "open ERRNO_NAME".
//   device-probe PATH [kvm]
#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int fd = open(argv[1], O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::printf("open %s\n", strerrorname_np(errno));
    return 1;
  }
  std::printf("open ok\n");
  if (argc > 2 && std::strcmp(argv[2], "kvm") == 0) {
    const int api = ioctl(fd, KVM_GET_API_VERSION, 0);
    if (api < 0)
      std::printf("ioctl %s\n", strerrorname_np(errno));
    else
      std::printf("api %d\n", api);
  }
  close(fd);
  return 0;
}
