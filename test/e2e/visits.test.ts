/**
 * A teacher's visit in a real browser (Debian chromium driven by playwright-core) on the local
 * platform (dev/platform.ts: real OpenID sign-in, the chart's RBAC, the console teacher bound to
 * the chart's environment-visitor ClusterRole): a student signs in and keeps their home page open;
 * the teacher opens the class in the console and clicks Open on the student's row; the student's
 * environment opens in the teacher's tab with the student's X-User and the teacher as visitor, and
 * the student's home shows the visit while it lasts and after, without the student reloading.
 * A Template that asks first makes the teacher wait until the student clicks Allow.
 * Screenshots: home-visit-live.png, home-visit-after.png, console-visit-open.png,
 * visit-waiting.png, home-visit-request.png.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import type { Userland } from "../../api/v1alpha1/index.ts";
import { templatesPath, userlandsPath, UserlandAnnotations } from "../../api/v1alpha1/index.ts";
import { parseVisits, VISIT_CONSENT_ANNOTATION } from "../../api/visits.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { CONSOLE_TEACHER, DEMO_TEMPLATE, startPlatform, type Platform } from "../../dev/platform.ts";
import { gotoSignIn, launchBrowser } from "../../cluster/harness/browser.ts";
import { eventually } from "../support/cluster.ts";
import { screenshotsDir } from "../support/screenshots.ts";

let platform: Platform;
let browser: Browser;

before(async () => {
  platform = await startPlatform({
    dir: join(repoRoot, ".userland", `visits-e2e-${randomBytes(3).toString("hex")}`),
    // A visit ends after 3 s without a request or an open WebSocket (5 minutes by default).
    visitQuiet: "3s",
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

const STUDENT = "zoe";

async function signIn(
  page: Page,
  url: string,
  user: string,
  landing: string | RegExp | ((u: URL) => boolean),
): Promise<void> {
  await gotoSignIn(page, url);
  await page.waitForSelector("input[name=name]");
  await page.fill("input[name=name]", user);
  await Promise.all([page.waitForURL(landing), page.click("button[type=submit]")]);
}

const studentUserland = async () =>
  (await platform.rest.list<Userland>(userlandsPath(platform.namespace))).items.find(
    (u) => u.spec.user === STUDENT && u.spec.templateName === DEMO_TEMPLATE,
  );

test("a teacher opens a student's environment from the console; the student's home shows it live and after", async () => {
  const home = `${platform.url}_userland/home`;
  const studentContext = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  const student = await studentContext.newPage();
  const teacherContext = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const teacher = await teacherContext.newPage();
  try {
    // The student: signed in, environment provisioned and ready, home page left open.
    await signIn(student, home, STUDENT, home);
    await student.locator("#home .state-ready").first().waitFor({ timeout: 60_000 });
    assert.equal(await student.locator("#visits").count(), 0, "no visits yet");
    const name = (await studentUserland())?.metadata.name ?? "";
    assert.ok(name, "the student's Userland exists");

    // The teacher: the class table, Open on the student's row (a new tab).
    await signIn(teacher, platform.consoleUrl, CONSOLE_TEACHER, (u) =>
      u.toString().startsWith(platform.consoleUrl),
    );
    await teacher.goto(`${platform.consoleUrl}class?template=${DEMO_TEMPLATE}`);
    const open = teacher.locator(`#row-${name} a[aria-label="Open ${STUDENT}'s environment"]`);
    await open.waitFor();
    await teacher.screenshot({ path: join(screenshotsDir(), "console-visit-open.png"), fullPage: true });
    const [visit] = await Promise.all([teacherContext.waitForEvent("page"), open.click()]);
    await visit.waitForSelector("#owner");
    assert.equal(await visit.textContent("#owner"), STUDENT, "the student's environment");
    assert.equal(await visit.textContent("#x-user"), STUDENT, "X-User stays the student's");
    assert.equal(
      await visit.textContent("#visitor"),
      CONSOLE_TEACHER,
      "X-Userland-Visitor names the teacher",
    );
    assert.equal(
      new URL(visit.url()).host,
      `${name}--${DEMO_TEMPLATE}.localhost:${new URL(platform.url).port}`,
      "at the visit's own address, apart from the teacher's own pages",
    );

    // Issue 41 item 1: a script the student serves runs on this origin (here: evaluated in the
    // visit's page, with its origin's rights). It reaches nothing that answers as the teacher.
    const attacks = await visit.evaluate(async (platformUrl) => {
      const outcome = async (f: () => Promise<Response>) => {
        try {
          const r = await f();
          return { status: r.status, body: (await r.text()).slice(0, 300) };
        } catch (error) {
          return { status: 0, body: String(error) };
        }
      };
      const json = { accept: "application/json" };
      return {
        // The teacher's home and its JSON: not on this origin, and unreadable from it.
        homeHere: await outcome(() => fetch("/_userland/home", { headers: json })),
        homeThere: await outcome(() =>
          fetch(`${platformUrl}_userland/home`, { credentials: "include", headers: json }),
        ),
        // Leave as a plain GET changes nothing; the teacher's own environment is not on this origin.
        leaveGet: await outcome(() => fetch("/_userland/leave")),
        afterLeave: await outcome(() => fetch("/")),
        // A visit cookie set by script (the host names the environment; a cookie only a session).
        planted: await (async () => {
          (globalThis as unknown as { document: { cookie: string } }).document.cookie =
            "userland_visit=forged; path=/other";
          return outcome(() => fetch("/other/x"));
        })(),
      };
    }, platform.url);
    assert.equal(attacks.homeHere.status, 404, JSON.stringify(attacks.homeHere));
    assert.equal(attacks.homeThere.status, 0, `the teacher's home was readable: ${attacks.homeThere.body}`);
    assert.equal(attacks.leaveGet.status, 404, JSON.stringify(attacks.leaveGet));
    assert.match(
      attacks.afterLeave.body,
      new RegExp(`<title>${STUDENT}&#39;s environment</title>`),
      "still the student's",
    );
    // The environment is named by the host, not the cookie: a planted one names nothing else.
    assert.match(attacks.planted.body, new RegExp(`<title>${STUDENT}&#39;s environment</title>`));
    await visit.context().clearCookies({ name: "userland_visit", path: "/other" });

    // The student's home follows by itself (its script polls the home's JSON).
    const live = student.locator("li.visit-live");
    await live.waitFor({ timeout: 30_000 });
    assert.match(
      (await live.textContent()) ?? "",
      new RegExp(`Teacher ${CONSOLE_TEACHER} is in your Demo now`),
    );
    await student.screenshot({ path: join(screenshotsDir(), "home-visit-live.png"), fullPage: true });

    // The teacher leaves: a quiet period later the visit is over, and the home says for how long.
    await visit.close();
    await student.locator("li.visit-live").waitFor({ state: "detached", timeout: 30_000 });
    const line = (await student.locator("li.visit").first().textContent()) ?? "";
    assert.match(
      line.replace(/\s+/g, " "),
      new RegExp(
        `Teacher ${CONSOLE_TEACHER} opened your Demo on \\d+ \\w+, \\d\\d:\\d\\d UTC, for 1 minute\\.`,
      ),
    );
    await student.screenshot({ path: join(screenshotsDir(), "home-visit-after.png"), fullPage: true });

    // The durable record and the Event, as kubectl shows them.
    const [record] = parseVisits(
      (await studentUserland())?.metadata.annotations?.[UserlandAnnotations.visits],
    );
    assert.equal(record?.visitor, CONSOLE_TEACHER);
    assert.equal(record?.ended, true);
    await eventually("the VisitStarted and VisitEnded Events", async () => {
      const events = await platform.rest.list<{ reason: string; involvedObject: { name: string } }>(
        `/api/v1/namespaces/${platform.namespace}/events`,
      );
      const reasons = events.items.filter((e) => e.involvedObject.name === name).map((e) => e.reason);
      return reasons.includes("VisitStarted") && reasons.includes("VisitEnded");
    });
  } finally {
    await studentContext.close();
    await teacherContext.close();
  }
});

test("a Template that asks first: the teacher waits on a page that says so until the student clicks Allow", async () => {
  const student = "yuki";
  await platform.rest.patch(templatesPath(platform.namespace, DEMO_TEMPLATE), {
    metadata: { annotations: { [VISIT_CONSENT_ANNOTATION]: "required" } },
  });
  const home = `${platform.url}_userland/home`;
  const studentContext = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  const studentPage = await studentContext.newPage();
  const teacherContext = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const teacher = await teacherContext.newPage();
  try {
    await signIn(studentPage, home, student, home);
    await studentPage.locator("#home .state-ready").first().waitFor({ timeout: 60_000 });
    const name =
      (await platform.rest.list<Userland>(userlandsPath(platform.namespace))).items.find(
        (u) => u.spec.user === student && u.spec.templateName === DEMO_TEMPLATE,
      )?.metadata.name ?? "";
    await signIn(teacher, platform.consoleUrl, CONSOLE_TEACHER, (u) =>
      u.toString().startsWith(platform.consoleUrl),
    );
    await teacher.goto(`${platform.consoleUrl}class?template=${DEMO_TEMPLATE}`);
    const [visit] = await Promise.all([
      teacherContext.waitForEvent("page"),
      teacher.locator(`#row-${name} a[aria-label="Open ${student}'s environment"]`).click(),
    ]);
    await visit.waitForSelector(`text=Waiting for ${student} to allow your visit`);
    await visit.screenshot({ path: join(screenshotsDir(), "visit-waiting.png"), fullPage: true });

    // The student's home shows the request by itself; Allow is a plain form.
    const allow = studentPage.locator(`button[aria-label="Allow ${CONSOLE_TEACHER} to open your Demo"]`);
    await allow.waitFor({ timeout: 30_000 });
    await studentPage.screenshot({ path: join(screenshotsDir(), "home-visit-request.png"), fullPage: true });
    await Promise.all([studentPage.waitForURL(home), allow.click()]);

    // The waiting page asks again by itself and opens the environment.
    await visit.waitForSelector("#owner", { timeout: 30_000 });
    assert.equal(await visit.textContent("#owner"), student);
    assert.equal(await visit.textContent("#visitor"), CONSOLE_TEACHER);
    await studentPage.locator("li.visit-live").waitFor({ timeout: 30_000 });
  } finally {
    await studentContext.close();
    await teacherContext.close();
    await platform.rest.patch(templatesPath(platform.namespace, DEMO_TEMPLATE), {
      metadata: { annotations: { [VISIT_CONSENT_ANNOTATION]: null } },
    });
  }
});
