// console.cjs: drives the operator console in headless Chromium for
// TestConsole_Browser, which starts the server and reads what this prints:
// one JSON object a line. Environment: CONSOLE_URL (the server), TOKEN,
// USER and RELATION_IDS (what to look up), LINKED (a user to open by the
// page's address), SCREENSHOT (the PNG to write),
// CHROMIUM (the browser, default /usr/bin/chromium); playwright-core is
// found through NODE_PATH.
"use strict";
const { chromium } = require("playwright-core");

const env = process.env;
const say = obj => process.stdout.write(JSON.stringify(obj) + "\n");

(async () => {
  const browser = await chromium.launch({
    executablePath: env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox"], // CI runs as root
  });
  const requests = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on("response", r => requests.push({ method: r.request().method(), url: r.url(), status: r.status() }));
    page.on("requestfailed", r => requests.push({ method: r.method(), url: r.url(), status: 0 }));
    const errors = [];
    page.on("pageerror", e => errors.push(String(e)));

    await page.goto(env.CONSOLE_URL + "/console/");
    // Without the token the metrics are refused, and the page says so.
    await page.waitForSelector("#access:not(:empty)");
    const refused = await page.textContent("#access");
    await page.fill("#token", env.TOKEN);
    await page.click("#token-form button[type=submit]");
    await page.waitForSelector("#backends li");
    // The first poll with the token drew the server's history: the
    // requests the test made before the page opened are on the chart.
    const opened = await page.$eval("#chart-requests", f => ({ samples: Number(f.dataset.samples || 0), max: Number(f.dataset.max || 0) }));
    await page.fill("#user-id", env.USER);
    await page.fill("#relation-ids", env.RELATION_IDS);
    await page.click("#user-form button[type=submit]");
    await page.waitForSelector("#counts");
    await page.waitForSelector("#list-following table");
    await page.waitForSelector("#relations table");
    const address = await page.evaluate(() => location.search);
    // A time is on one line: the line boxes of each.
    const timeLines = await page.$$eval("#user .time", spans => spans.filter(s => s.textContent).map(s => {
      const r = document.createRange();
      r.selectNodeContents(s);
      return new Set([...r.getClientRects()].map(rect => Math.round(rect.top))).size;
    }));
    // Two polls later, with no client writing, the requests chart shows
    // none: the page's own polling is not counted.
    await page.waitForTimeout(4500);
    const idleRequests = await page.$eval("#chart-requests b", b => b.textContent);
    // The test started a slow account-state job: the jobs table shows it.
    await page.waitForFunction(() => document.querySelector("#job-rows").textContent.includes("account states"), null, { timeout: 15000 })
      .catch(() => {});
    const shown = await page.evaluate(() => {
      const fields = {};
      for (const dd of document.querySelectorAll("#counts dd")) fields[dd.dataset.field] = dd.textContent;
      const ids = sel => [...document.querySelectorAll(sel + " tr")].slice(1).map(tr => tr.cells[0].textContent);
      const relations = [...document.querySelectorAll("#relations tr")].slice(1).map(tr => [tr.cells[0].textContent, tr.cells[1].textContent]);
      const jobs = [...document.querySelectorAll("#job-rows tr")].map(tr => [...tr.cells].map(td => td.textContent));
      return { fields, following: ids("#list-following"), followers: ids("#list-followers"), relations, jobs };
    });
    // A user is linked by the page's address, and a listed id links to
    // its user.
    await page.goto(env.CONSOLE_URL + "/console/?user=" + env.LINKED);
    await page.waitForSelector("#counts");
    const linked = await page.$eval('#counts dd[data-field="id"]', dd => dd.textContent);
    await page.waitForSelector("#list-following a");
    const target = await page.$eval("#list-following a", a => a.textContent);
    await page.click("#list-following a");
    await page.waitForFunction(id => (document.querySelector('#counts dd[data-field="id"]') || {}).textContent === id, target);
    const clicked = { id: target, address: await page.evaluate(() => location.search) };
    say({ event: "shown", refused, token: await page.evaluate(() => sessionStorage.getItem("followgraph.console.token")), ...shown,
      opened, address, timeLines, idleRequests, linked, clicked });

    // The test now writes; the backlog chart must rise from its samples.
    const backlog = [];
    const deadline = Date.now() + 90000;
    for (;;) {
      const fig = await page.$("#chart-backlog:not([hidden])");
      const max = fig ? Number(await fig.getAttribute("data-max")) : 0;
      const now = fig ? await fig.$eval("b", b => b.textContent) : "";
      if (fig && backlog[backlog.length - 1] !== now) backlog.push(now);
      if (max > 0 && backlog.length >= 3) break;
      if (Date.now() > deadline) break;
      await page.waitForTimeout(500);
    }
    const points = await page.$eval("#chart-backlog polyline", p => p.getAttribute("points")).catch(() => "");
    await page.screenshot({ path: env.SCREENSHOT, fullPage: true });
    say({ event: "done", backlog, points, errors, requests });
  } finally {
    await browser.close();
  }
})().catch(err => { say({ event: "failed", error: String(err && err.stack || err) }); process.exit(1); });
