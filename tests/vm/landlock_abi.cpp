// Prints the Landlock ABI the running kernel answers (0: none), for the VM's report.
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

int main() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  std::printf("%ld\n", abi < 0 ? 0 : abi);
  return 0;
}
