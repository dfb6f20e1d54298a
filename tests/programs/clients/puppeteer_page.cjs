// A Puppeteer script: Debian's chromium or firefox-esr (argv: browser, path,
// url) opens a page, clicks its button and prints what the page's script
// wrote. Firefox is driven over WebDriver BiDi, which ESR speaks.
const puppeteer = require('puppeteer-core');

(async () => {
  const [browserName, executablePath, url] = process.argv.slice(2);
  const options = { browser: browserName, executablePath, headless: true };
  if (browserName === 'chrome') options.args = ['--no-sandbox'];
  const browser = await puppeteer.launch(options);
  const page = await browser.newPage();
  await page.goto(url);
  await page.click('#go');
  const text = await page.$eval('#out', (e) => e.textContent);
  console.log('text: ' + text);
  await browser.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
