// net-client HOST PORT PATH: what a C program that knows nothing of Chock
// does: getaddrinfo, connect to each address in turn, one HTTP/1.0 GET,
// the answer on stdout. Exit 2 when the name does not resolve, 3 when no
// address answers.
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc != 4) return 64;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int e = getaddrinfo(argv[1], argv[2], &hints, &found); e != 0) {
    std::fprintf(stderr, "net-client: %s: %s\n", argv[1], gai_strerror(e));
    return 2;
  }
  int s = -1;
  for (addrinfo* a = found; a != nullptr && s < 0; a = a->ai_next) {
    s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (s >= 0 && connect(s, a->ai_addr, a->ai_addrlen) != 0) {
      std::perror("net-client: connect");
      close(s);
      s = -1;
    }
  }
  freeaddrinfo(found);
  if (s < 0) return 3;
  const std::string request = std::string("GET ") + argv[3] + " HTTP/1.0\r\nHost: " + argv[1] + "\r\n\r\n";
  if (write(s, request.data(), request.size()) != static_cast<ssize_t>(request.size())) return 3;
  char buf[4096];
  for (ssize_t n; (n = read(s, buf, sizeof buf)) > 0;) fwrite(buf, 1, static_cast<size_t>(n), stdout);
  return 0;
}
