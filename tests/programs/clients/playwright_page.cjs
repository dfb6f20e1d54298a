// A Playwright script: Debian's chromium (its path in argv) opens a page,
// clicks its button and prints what the page's script wrote. Playwright's own
// browser download is never used.
const { chromium } = require('@playwright/test');

(async () => {
  const [executablePath, url] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath, headless: true });
  const page = await browser.newPage();
  await page.goto(url);
  await page.click('#go');
  console.log('text: ' + (await page.textContent('#out')));
  await browser.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
