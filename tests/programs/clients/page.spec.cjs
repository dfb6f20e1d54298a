// The page served on the call's own loopback (CHOCK_URL): its button runs
// its script.
const { test, expect } = require('@playwright/test');

test('the page runs its script when its button is clicked', async ({ page }) => {
  await page.goto(process.env.CHOCK_URL);
  await expect(page.locator('#out')).toHaveText('before');
  await page.click('#go');
  await expect(page.locator('#out')).toHaveText('clicked inside chock');
});
