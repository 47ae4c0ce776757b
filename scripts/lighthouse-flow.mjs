// lighthouse-flow.mjs: Lighthouse's mobile navigation audit of console pages
// reached the way an on-call engineer reaches them: one tab, each page
// opened from the one before (scripts/lighthouse.sh with FLOW=1 runs it).
//
// The console sends Cross-Origin-Opener-Policy: same-origin, so the first
// page a tab opens from another origin (Lighthouse's about:blank included)
// starts in a fresh renderer process, and Lighthouse counts that process's
// start-up as the page's blocking time. From then on the console's pages
// share the process. This script opens BASE/ first (not scored), then
// scores each page navigated to from the previous one.
//
//   node scripts/lighthouse-flow.mjs OUT RUN SLOWDOWN name=/path ...
//
// Reads BASE, TOKEN and CHROME_PATH from the environment; writes one
// Lighthouse result per page to OUT/NAME-RUN.json, as the single-page runs.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(process.env.LIGHTHOUSE_MODULES + "/");
const puppeteer = require("puppeteer-core");
const { startFlow } = await import(require.resolve("lighthouse"));

const [out, run, slowdown, ...pages] = process.argv.slice(2);
const { BASE, TOKEN, CHROME_PATH } = process.env;
const profile = fs.mkdtempSync(path.join(out, "profile-"));
const browser = await puppeteer.launch({
  executablePath: CHROME_PATH,
  headless: true,
  userDataDir: profile,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  await page.setExtraHTTPHeaders({ Authorization: `Bearer ${TOKEN}` });
  await page.goto(BASE + "/", { waitUntil: "load" });
  const flow = await startFlow(page, {
    flags: {
      formFactor: "mobile",
      onlyCategories: ["performance", "accessibility"],
      throttling: { cpuSlowdownMultiplier: Number(slowdown) },
      skipAboutBlank: true,
      disableStorageReset: true,
    },
  });
  for (const p of pages) {
    const [name, url] = p.split("=");
    await flow.navigate(BASE + url, { name });
  }
  const result = await flow.createFlowResult();
  result.steps.forEach((step, i) => {
    const name = pages[i].split("=")[0];
    fs.writeFileSync(path.join(out, `${name}-${run}.json`), JSON.stringify(step.lhr));
  });
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
