// Browsers inside a call: Debian's chromium and firefox-esr, and Playwright
// and Puppeteer from the npm registry driving them (never a browser of their
// own download), open a page served on the call's own loopback. Chromium's
// sandbox is off (`--no-sandbox`: Chock is the sandbox) and the JIT allowed.
#include <nlohmann/json.hpp>

#include "programs_support.hpp"

namespace chock::test::programs {
namespace {

using ws::describe;

class Browsers : public ::testing::Test {
 protected:
  void SetUp() override { project_with_page(f, true); }
  ws::Fixture f;
};

TEST_F(Browsers, ChromiumDumpsThePageTheCallServesOnItsOwnLoopback) {
  std::string why;
  const std::string chromium = program("chromium", &why);
  if (chromium.empty()) GTEST_SKIP() << why;
  const std::string result = f.file("../chromium-result.json");
  Output o =
      run_long(f, {"--result", result}, served(chromium + " --headless --no-sandbox --dump-dom " + kUrl));
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("<p id=\"loaded\">script ran on 127.0.0.1:8347</p>"), std::string::npos)
      << describe(o);
  EXPECT_EQ(o.err.find("was refused"), std::string::npos) << describe(o);
  // Its peak memory, as Chock measured it, under the call's default limit.
  const auto r = nlohmann::json::parse(read_file(result));
  EXPECT_EQ(r["limits"]["killed_by"], nullptr) << r.dump();
  if (r["limits"].contains("memory_measured")) {
    const auto peak = r["limits"]["memory_measured"]["peak"].get<std::uint64_t>();
    const auto limit = r["limits"]["memory_measured"]["limit"].get<std::uint64_t>();
    RecordProperty("chromium_peak_memory_bytes", std::to_string(peak));
    std::cerr << "chromium --dump-dom: peak memory " << (peak >> 20) << " MiB of the call's " << (limit >> 20)
              << " MiB\n";
    EXPECT_GT(peak, 0U) << r.dump();
    EXPECT_LT(peak, limit) << r.dump();
  } else {
    ASSERT_TRUE(r["limits"].contains("memory_max"))
        << "neither a cgroup nor Chock bounded memory: " << r.dump();
  }
}

TEST_F(Browsers, APlaywrightScriptDrivesChromium) {
  std::string why;
  const std::string chromium = program("chromium", &why);
  const std::string dir = chromium.empty() ? std::string() : add_drivers(f, &why);
  if (dir.empty()) GTEST_SKIP() << why;
  Output o = run_long(f, {}, served("node " + dir + "/playwright_page.cjs " + chromium + " " + kUrl));
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("text: clicked inside chock"), std::string::npos) << describe(o);
}

TEST_F(Browsers, APlaywrightTestRunPasses) {
  std::string why;
  const std::string chromium = program("chromium", &why);
  const std::string dir = chromium.empty() ? std::string() : add_drivers(f, &why);
  if (dir.empty()) GTEST_SKIP() << why;
  Output o = run_long(
      f, {},
      served("CHOCK_CHROMIUM=" + chromium + " CHOCK_URL=" + kUrl + " CHOCK_OUT=\"$PWD/test-results\" node " +
             dir + "/node_modules/@playwright/test/cli.js test -c " + dir + "/playwright.config.cjs"));
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("1 passed"), std::string::npos) << describe(o);
}

TEST_F(Browsers, PuppeteerDrivesChromium) {
  std::string why;
  const std::string chromium = program("chromium", &why);
  const std::string dir = chromium.empty() ? std::string() : add_drivers(f, &why);
  if (dir.empty()) GTEST_SKIP() << why;
  Output o = run_long(f, {}, served("node " + dir + "/puppeteer_page.cjs chrome " + chromium + " " + kUrl));
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("text: clicked inside chock"), std::string::npos) << describe(o);
}

// Firefox ESR headless, driven over WebDriver BiDi; and its own screenshot.
TEST_F(Browsers, FirefoxEsrHeadlessRendersAndRunsThePage) {
  std::string why;
  const std::string firefox = program("firefox-esr", &why);
  const std::string dir = firefox.empty() ? std::string() : add_drivers(f, &why);
  if (dir.empty()) GTEST_SKIP() << why;
  Output o = run_long(
      f, {},
      served("node " + dir + "/puppeteer_page.cjs firefox " + firefox + " " + kUrl + " && " + firefox +
             " --headless --screenshot \"$PWD/shot.png\" " + kUrl + " && od -An -c -N4 shot.png"));
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_NE(o.out.find("text: clicked inside chock"), std::string::npos) << describe(o);
  EXPECT_NE(o.out.find("P   N   G"), std::string::npos) << describe(o);
}

}  // namespace
}  // namespace chock::test::programs
