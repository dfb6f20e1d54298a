// chock-fetch-hop: one HTTP(S) GET for `chock fetch`, on a socket Chock
// dialled to the address it judged and checked (fd 5). Chock (a static
// binary) judges, resolves, dials and follows redirects; this small program
// holds libcurl, and confines itself first (sandbox/fetcher_confinement.hpp):
// it writes no file, reads only the CA store and its own libraries, and has
// no network but that socket, so the bytes of the web (TLS, compressed
// bodies, HTML) are parsed where they can reach nothing. It never resolves
// a name: libcurl is told the address literal whatever the URL says, and
// takes the socket as already connected.
//
//   chock-fetch-hop URL ADDRESS PORT MAX_BYTES CONNECT_MS TOTAL_MS TEXT CREDENTIAL
//
// The body (or its text, with TEXT=1) goes to fd 1 unless the answer is a
// redirect; one JSON line on fd 3 says what happened.
#include <curl/curl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "fetch/html_text.hpp"
#include "sandbox/fetcher_confinement.hpp"
#include "sandbox/seccomp.hpp"
#include "util/io.hpp"

namespace {

struct Body {
  std::string bytes;
  std::size_t max = 0;
  bool cut = false;
};

std::size_t keep(char* data, std::size_t size, std::size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  const std::size_t n = size * count;
  const std::size_t room = body->max - body->bytes.size();
  if (n > room) {
    body->bytes.append(data, room);
    body->cut = true;
    return 0;  // stops the transfer: nothing past the cap is even decoded
  }
  body->bytes.append(data, n);
  return n;
}

bool write_all(int fd, std::string_view data) {
  return chock::write_all(fd, data, fd == 3 ? "the report to chock" : "the body to chock").has_value();
}

int report(const nlohmann::json& meta) {
  const std::string line = meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return write_all(3, line) ? 0 : 1;
}

std::uint64_t number(const char* text) {
  if (*text < '0' || *text > '9') return 0;  // strtoull would take "-5" as a huge number
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  return end != nullptr && *end == '\0' ? v : 0;
}

bool is_text(const std::string& type) {
  return type.empty() || type.starts_with("text/") || type.find("json") != std::string::npos ||
         type.find("xml") != std::string::npos || type.find("javascript") != std::string::npos;
}

// libcurl's one socket is the one chock handed over; a second (a retry) is none.
curl_socket_t given_socket(void* given, curlsocktype /*purpose*/, curl_sockaddr* /*address*/) {
  auto* fd = static_cast<int*>(given);
  const int first = *fd;
  *fd = CURL_SOCKET_BAD;
  return first;
}

int already_connected(void* /*unused*/, curl_socket_t /*unused*/, curlsocktype /*unused*/) {
  return CURL_SOCKOPT_ALREADY_CONNECTED;
}

}  // namespace

namespace {

int fetch_one(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "chock-fetch-hop: run by chock fetch, not by hand\n");
    return 2;
  }
  const std::string url = argv[1], address = argv[2];
  const auto port = static_cast<std::uint16_t>(number(argv[3]));
  const std::uint64_t max_bytes = number(argv[4]);
  const long connect_ms = static_cast<long>(number(argv[5])), total_ms = static_cast<long>(number(argv[6]));
  const bool text = std::string_view(argv[7]) == "1";
  // A credential comes through fd 4, never the command line (readable by
  // every process of the machine): the whole header, "Name: value".
  std::string credential;
  if (std::string_view(argv[8]) == "1") {
    char buf[8193];
    ssize_t n = 0;
    std::size_t got = 0;
    while (got < sizeof buf - 1 && (n = ::read(4, buf + got, sizeof buf - 1 - got)) > 0)
      got += static_cast<std::size_t>(n);
    ::close(4);
    credential.assign(buf, got);
    for (char c : credential)
      if (c < 0x20 || c > 0x7e) credential.clear();  // never a header of its own
    if (credential.find(": ") == std::string::npos) credential.clear();
  }
  if (port == 0 || max_bytes == 0 || connect_ms <= 0 || total_ms <= 0) {
    std::fprintf(stderr, "chock-fetch-hop: a port, a byte cap and both deadlines are needed\n");
    return 2;
  }
  nlohmann::json meta = {{"status", 0}, {"content_type", ""}, {"location", ""}, {"bytes", 0}, {"cut", false}};

  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    meta["error"] = "libcurl did not start";
    return report(meta);
  }
  CURL* curl = curl_easy_init();
  // libcurl and OpenSSL load what they need at init but the CA store, read
  // during the handshake: granted by name, then nothing else.
  char* ca_file = nullptr;
  char* ca_path = nullptr;
  curl_easy_getinfo(curl, CURLINFO_CAINFO, &ca_file);
  curl_easy_getinfo(curl, CURLINFO_CAPATH, &ca_path);
  auto confined =
      chock::sandbox::confine_fetcher(ca_file != nullptr ? ca_file : "", ca_path != nullptr ? ca_path : "");
  if (!confined) {
    meta["error"] = confined.error().message();
    curl_easy_cleanup(curl);
    return report(meta);
  }
  meta["landlock_abi"] = *confined;
  Body body;
  body.max = max_bytes;
  const std::string target = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  const std::string connect_to = "::" + target + ":" + std::to_string(port);
  curl_slist* connect_list = curl_slist_append(nullptr, connect_to.c_str());
  curl_slist* request_headers = nullptr;
  if (!credential.empty()) request_headers = curl_slist_append(nullptr, credential.c_str());
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect_list);
  int given = chock::sandbox::kFetcherSocketFd;
  curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, given_socket);
  curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, &given);
  curl_easy_setopt(curl, CURLOPT_SOCKOPTFUNCTION, already_connected);
  if (request_headers != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, request_headers);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");  // no proxy, whatever the environment says
  curl_easy_setopt(curl, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
  curl_easy_setopt(curl, CURLOPT_USERAGENT,
                   "Chock-fetch/0.1 (a sandboxed fetch for an AI agent's tool call)");
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING,
                   "");  // every encoding libcurl decodes; the cap counts decoded bytes
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, total_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  const CURLcode done = curl_easy_perform(curl);

  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  char* type = nullptr;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
  char* location = nullptr;
  curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location);
  curl_off_t received = 0;
  curl_easy_getinfo(curl, CURLINFO_SIZE_DOWNLOAD_T, &received);
  curl_off_t headers = 0;
  curl_easy_getinfo(curl, CURLINFO_HEADER_SIZE, &headers);
  curl_off_t request = 0;
  curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &request);
  meta["status"] = status;
  meta["content_type"] = chock::fetch::strip_controls(type != nullptr ? type : "");
  meta["wire_in"] = static_cast<std::uint64_t>(received + headers);
  meta["wire_out"] = static_cast<std::uint64_t>(request);
  meta["cut"] = body.cut;
  if (done != CURLE_OK && !(done == CURLE_WRITE_ERROR && body.cut)) {
    meta["error"] =
        std::string(curl_easy_strerror(done)) + (error[0] != '\0' ? std::string(": ") + error : "");
  } else if (status >= 300 && status < 400 && location != nullptr) {
    meta["location"] = location;  // Chock judges it before anything follows it
  } else {
    std::string out = body.bytes;
    if (text) {
      const std::string content_type = meta["content_type"];
      if (content_type.find("html") != std::string::npos) {
        out = chock::fetch::html_to_text(body.bytes);
      } else if (is_text(content_type)) {
        out = chock::fetch::strip_controls(body.bytes);
      } else {
        meta["error"] = "--text: the page is " + content_type + ", not text";
        out.clear();
      }
    }
    meta["bytes"] = body.bytes.size();
    if (!write_all(1, out)) meta["error"] = "the body could not be passed on";
  }
  curl_easy_cleanup(curl);
  curl_slist_free_all(connect_list);
  curl_slist_free_all(request_headers);
  return report(meta);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return fetch_one(argc, argv);
  } catch (const std::exception& e) {
    // Out of memory, most likely: said as a hop that failed, never a silent end.
    const std::string line = std::string("{\"error\":\"the fetcher failed: ") + e.what() + "\"}\n";
    return write_all(3, line) ? 1 : 2;
  }
}
