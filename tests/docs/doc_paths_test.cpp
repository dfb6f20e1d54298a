// Every repository path the newcomer's pages cite exists in the checkout:
// README.md, each docs/*.md (by glob, so a page added later is covered) and
// bench/README.md. A path that moves or goes away without its page changing
// fails here, named with its page and line.
#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "support.hpp"

namespace chock::test::ws {
namespace {

// The top-level folders whose paths the pages cite.
constexpr std::string_view kRoots[] = {"src/",   "include/",  "tests/", "docs/", "scripts/",
                                       "bench/", "examples/", "tools/", "cmake/"};

bool path_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_./-*{},+").find(c) != std::string_view::npos;
}

// A character that may stand right before a cited path: not one that would
// make it part of a longer word or path (`../shared/docs/x`, `sub-tests/`).
bool boundary(char c) {
  return !(path_char(c) || c == '$' || c == '~' || c == ':' || c == '@');
}

struct Cited {
  std::string path;
  std::string where;  // "README.md:12"
};

// `src/workspace/index_file.{hpp,cpp}` is two paths.
std::vector<std::string> expand_braces(const std::string& path) {
  const auto open = path.find('{');
  const auto close = path.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {path};
  std::vector<std::string> out;
  const std::string inner = path.substr(open + 1, close - open - 1);
  std::size_t start = 0;
  for (;;) {
    const auto comma = inner.find(',', start);
    const std::string alt =
        inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    for (auto& p : expand_braces(path.substr(0, open) + alt + path.substr(close + 1))) out.push_back(p);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The paths a page cites, found by their top-level folder. A placeholder
// (`tests/unit/<folder>/<file>_test.cpp`) is not a path and is left out.
std::vector<Cited> cited_paths(const std::string& text, const std::string& page) {
  std::vector<Cited> out;
  int line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    if (i > 0 && !boundary(text[i - 1])) continue;
    for (std::string_view root : kRoots) {
      if (text.compare(i, root.size(), root) != 0) continue;
      std::size_t end = i;
      while (end < text.size() && path_char(text[end])) ++end;
      if (end < text.size() && text[end] == '<') break;
      std::string path = text.substr(i, end - i);
      // MCP's methods (`tools/list`, `tools/call`) read like tools/ paths:
      // there, only a file name (with its extension) counts.
      if (root == "tools/" && path.find('.', root.size()) == std::string::npos) break;
      // Sentence punctuation after a path is not part of it.
      while (!path.empty() && std::string_view(".,").find(path.back()) != std::string_view::npos)
        path.pop_back();
      for (auto& p : expand_braces(path)) out.push_back({p, page + ":" + std::to_string(line)});
      break;
    }
  }
  return out;
}

// The targets of the page's Markdown links that are files of the checkout,
// resolved from the page's own folder (`[mounts.md](mounts.md)` in docs/ is
// docs/mounts.md); a URL or an anchor of the same page is not one.
std::vector<Cited> linked_paths(const std::string& text, const std::string& page) {
  std::vector<Cited> out;
  const auto slash = page.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : page.substr(0, slash + 1);
  int line = 1;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    if (text[i] != ']' || text[i + 1] != '(') continue;
    const auto close = text.find(')', i + 2);
    if (close == std::string::npos) break;
    std::string target = text.substr(i + 2, close - i - 2);
    if (const auto hash = target.find('#'); hash != std::string::npos) target.resize(hash);
    if (target.empty() || target.find("://") != std::string::npos ||
        target.find_first_of(" \n") != std::string::npos || target.starts_with("mailto:"))
      continue;
    // The page's folder, then each part of the target: ".." takes one off.
    std::vector<std::string> parts;
    std::string rest = folder + target;
    for (std::size_t start = 0; start <= rest.size();) {
      const auto end = std::min(rest.find('/', start), rest.size());
      const std::string part = rest.substr(start, end - start);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      start = end + 1;
    }
    std::string path;
    for (const auto& part : parts) path += (path.empty() ? "" : "/") + part;
    out.push_back({path, page + ":" + std::to_string(line)});
  }
  return out;
}

bool exists_in(const std::string& checkout, const std::string& path) {
  if (path.find('*') != std::string::npos) {
    glob_t g{};
    const int rc = ::glob((checkout + "/" + path).c_str(), 0, nullptr, &g);
    const bool found = rc == 0 && g.gl_pathc > 0;
    ::globfree(&g);
    return found;
  }
  struct stat st {};
  return ::stat((checkout + "/" + path).c_str(), &st) == 0;
}

std::vector<std::string> pages_of(const std::string& checkout) {
  std::vector<std::string> pages = {"README.md", "bench/README.md"};
  std::vector<std::string> docs;
  if (DIR* dir = ::opendir((checkout + "/docs").c_str())) {
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name.size() > 3 && name.ends_with(".md")) docs.push_back("docs/" + name);
    }
    ::closedir(dir);
  }
  std::sort(docs.begin(), docs.end());
  pages.insert(pages.end(), docs.begin(), docs.end());
  return pages;
}

TEST(DocPaths, EveryPathTheReadmeDocsAndBenchPagesCiteExists) {
  const std::string examples = CHOCK_EXAMPLES_DIR;
  const std::string checkout = examples.substr(0, examples.rfind('/'));
  if (::access((checkout + "/README.md").c_str(), R_OK) != 0)
    GTEST_SKIP() << checkout << "/README.md is not readable by this uid (the source tree is private)";
  std::size_t checked = 0;
  std::string missing;
  for (const auto& page : pages_of(checkout)) {
    std::string where = checkout;
    where += "/";
    where += page;
    const std::string text = read_file(where);
    auto cited = cited_paths(text, page);
    for (auto& link : linked_paths(text, page)) cited.push_back(std::move(link));
    for (const auto& c : cited) {
      ++checked;
      if (!exists_in(checkout, c.path)) missing += "  " + c.where + ": " + c.path + "\n";
    }
  }
  EXPECT_TRUE(missing.empty()) << "paths cited that are not in " << checkout << ":\n" << missing;
  // The scan itself works: the README cites paths (its test command's scripts/install-deps).
  EXPECT_GT(checked, 50U);
}

TEST(DocPaths, TheScanFindsPathsAsPagesWriteThem) {
  const auto found = cited_paths(
      "see `src/net/relay.cpp`, [docs/network.md](docs/network.md#published-ports).\n"
      "`src/workspace/index_file.{hpp,cpp}` and tests/unit/<folder>/<file>_test.cpp;\n"
      "../shared/docs/x.md, $HOME/src/y, sub-tests/z, tools/list and bench/journal.md.",
      "page.md");
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (const auto& c : found) paths.push_back(c.path + "@" + c.where);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "src/net/relay.cpp@page.md:1", "docs/network.md@page.md:1",
                       "docs/network.md@page.md:1", "src/workspace/index_file.hpp@page.md:2",
                       "src/workspace/index_file.cpp@page.md:2", "bench/journal.md@page.md:3"}));
}

TEST(DocPaths, ALinkIsResolvedFromItsPagesFolder) {
  const auto found = linked_paths(
      "[mounts.md](mounts.md#the-two-toolchains) and [figures](../bench/README.md),\n"
      "[the site](https://example.org/x) [above](#top)",
      "docs/page.md");
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (const auto& c : found) paths.push_back(c.path + "@" + c.where);
  EXPECT_EQ(paths,
            (std::vector<std::string>{"docs/mounts.md@docs/page.md:1", "bench/README.md@docs/page.md:1"}));
}

}  // namespace
}  // namespace chock::test::ws
