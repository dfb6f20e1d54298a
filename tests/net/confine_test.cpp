// chock-fetch-hop confines itself before it reads a byte of the web
// (landlock::confine_to_port): connections to its one port only, no bind,
// and no file written anywhere. The attack: a confined process tries the
// other port, a bind and a write, and an allowed connect still works.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "chock/net.hpp"
#include "sandbox/landlock.hpp"
#include "world.hpp"

namespace chock::test {
namespace {

int try_connect(const char* address, std::uint16_t port) {
  auto host = net::parse_host(address);
  auto fd = net::dial(host->address, port, std::chrono::milliseconds(3000));
  if (!fd) return fd.error().code;
  ::close(*fd);
  return 0;
}

TEST(Fetcher, AConfinedFetcherConnectsToItsPortOnlyAndWritesNothing) {
  CHOCK_NEED_WORLD();
  if (landlock::probe_abi() < 4) GTEST_SKIP() << "Landlock ABI 4 (TCP ports) is not in this kernel";
  TempDir scratch("chock-confine");
  const std::string target = scratch / "written";
  // Both ports answer before the confinement.
  ASSERT_EQ(try_connect("198.51.100.10", 443), 0);
  ASSERT_EQ(try_connect("198.51.100.10", 80), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto confined = landlock::confine_to_port(80);
    if (!confined || !*confined) ::_exit(10);
    if (try_connect("198.51.100.10", 80) != 0) ::_exit(11);        // its port: allowed
    if (try_connect("198.51.100.10", 443) != EACCES) ::_exit(12);  // any other: EACCES
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(8080);
    if (::bind(s, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0 || errno != EACCES) ::_exit(13);
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd >= 0 || errno != EACCES) ::_exit(14);
    if (::access("/etc/hostname", R_OK) != 0 && errno == EACCES) ::_exit(15);  // reading still works
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10 not confined, 11 its port refused, 12 another port not refused with "
         "EACCES, 13 bind not refused, 14 a file was created, 15 reading refused";
  EXPECT_FALSE(exists(target));
}

}  // namespace
}  // namespace chock::test
