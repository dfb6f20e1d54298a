// @playwright/test on Debian's chromium: CHOCK_CHROMIUM is its path,
// CHOCK_OUT a writable directory for the runner's results.
const { defineConfig } = require('@playwright/test');

module.exports = defineConfig({
  testDir: __dirname,
  testMatch: 'page.spec.cjs',
  outputDir: process.env.CHOCK_OUT,
  reporter: 'line',
  workers: 1,
  use: {
    headless: true,
    launchOptions: { executablePath: process.env.CHOCK_CHROMIUM },
  },
});
