/**
 * Identity and allow-list rules, as pure functions (the end-to-end tests cover them through real
 * logins too).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  checkDomains,
  checkGroups,
  checkOrgs,
  decideGitHub,
  decideOidc,
  groupsOf,
  type AllowLists,
} from "../allowlist.ts";
import { toIdentity } from "../identity.ts";
import { escapeHtml, html } from "../../../lib/html.ts";
import { messagePage } from "../pages.ts";

const open: AllowLists = { domains: [], groups: [], orgs: [] };
const rules = { usernameClaim: "preferred_username", userPrefix: "", groupsClaim: "groups" };

describe("identities", () => {
  test("are taken exactly, or refused with a reason; never rewritten", () => {
    assert.deepEqual(toIdentity("Koba1t", "github:", "login"), { ok: true, value: "github:Koba1t" });
    assert.deepEqual(toIdentity("a.b@uni.ac.jp", "", "e-mail"), { ok: true, value: "a.b@uni.ac.jp" });
    for (const bad of ["", " alice", "alice ", "jörg", "tab\there", 42, undefined, null, ["alice"]]) {
      const outcome = toIdentity(bad, "", "user name");
      assert.equal(outcome.ok, false, JSON.stringify(bad));
    }
    assert.match(JSON.stringify(toIdentity("x".repeat(250), "github:", "login")), /longer than 256/);
  });
});

describe("allow-lists", () => {
  test("e-mail domains match exactly and case-insensitively, verified addresses only", () => {
    const allowed = ["uni.example.org"];
    assert.equal(checkDomains([{ email: "a@UNI.example.org", verified: true }], allowed).ok, true);
    assert.equal(
      checkDomains([{ email: "a@cs.uni.example.org", verified: true }], allowed).ok,
      false,
      "subdomain is another domain",
    );
    assert.equal(checkDomains([{ email: "a@uni.example.org.evil.com", verified: true }], allowed).ok, false);
    assert.equal(
      checkDomains([{ email: "a@evil.com@uni.example.org", verified: true }], allowed).ok,
      true,
      "domain is after the last @",
    );
    assert.equal(checkDomains([{ email: "a@uni.example.org", verified: false }], allowed).ok, false);
    assert.equal(checkDomains([], allowed).ok, false);
    assert.equal(checkDomains([], []).ok, true, "no list, no restriction");
  });

  test("groups: any allowed group, exact match; the claim may be a list or a string", () => {
    assert.deepEqual(groupsOf(["a", 1, "b"]), ["a", "b"]);
    assert.deepEqual(groupsOf("a"), ["a"]);
    assert.deepEqual(groupsOf({ a: 1 }), []);
    assert.equal(checkGroups(["students"], ["staff", "students"]).ok, true);
    assert.equal(checkGroups(["Students"], ["students"]).ok, false);
    assert.equal(checkGroups([], ["students"]).ok, false);
  });

  test("GitHub organizations compare case-insensitively", () => {
    assert.equal(checkOrgs(["Uni-CS"], ["uni-cs"]).ok, true);
    assert.equal(checkOrgs(["uni-cs-fans"], ["uni-cs"]).ok, false);
    assert.equal(checkOrgs([], ["uni-cs"]).ok, false);
  });

  test("OIDC: username claim, and an unverified e-mail is never an identity", () => {
    const claims = {
      sub: "123",
      preferred_username: "alice",
      email: "alice@uni.example.org",
      email_verified: true,
      groups: ["students"],
    };
    assert.deepEqual(decideOidc(claims, rules, open), { ok: true, value: "alice" });
    assert.deepEqual(decideOidc(claims, { ...rules, usernameClaim: "sub", userPrefix: "uni:" }, open), {
      ok: true,
      value: "uni:123",
    });
    assert.deepEqual(decideOidc(claims, { ...rules, usernameClaim: "email" }, open), {
      ok: true,
      value: "alice@uni.example.org",
    });
    assert.equal(
      decideOidc({ ...claims, email_verified: false }, { ...rules, usernameClaim: "email" }, open).ok,
      false,
    );
    assert.equal(
      decideOidc({ ...claims, email_verified: "true" }, { ...rules, usernameClaim: "email" }, open).ok,
      true,
    );
    assert.equal(decideOidc({ sub: "1" }, rules, open).ok, false, "missing claim");
    const lists = { domains: ["uni.example.org"], groups: ["students"], orgs: ["ignored-for-oidc"] };
    assert.equal(decideOidc(claims, rules, lists).ok, true);
    assert.equal(decideOidc({ ...claims, groups: ["staff"] }, rules, lists).ok, false);
    assert.equal(
      decideOidc(claims, { ...rules, groupsClaim: "roles" }, lists).ok,
      false,
      "groups read from the configured claim",
    );
  });

  test("GitHub: login or id, orgs and verified e-mail domains", () => {
    const account = {
      login: "Koba1t",
      id: 42,
      orgs: ["uni-cs"],
      emails: [{ email: "k@uni.example.org", verified: true }],
    };
    assert.deepEqual(decideGitHub(account, { userPrefix: "github:", identity: "login" }, open), {
      ok: true,
      value: "github:Koba1t",
    });
    assert.deepEqual(decideGitHub(account, { userPrefix: "github:", identity: "id" }, open), {
      ok: true,
      value: "github:42",
    });
    const lists = { domains: ["uni.example.org"], groups: ["ignored-for-github"], orgs: ["UNI-CS"] };
    assert.equal(decideGitHub(account, { userPrefix: "", identity: "login" }, lists).ok, true);
    assert.equal(
      decideGitHub({ ...account, orgs: [] }, { userPrefix: "", identity: "login" }, lists).ok,
      false,
    );
    assert.equal(
      decideGitHub({ ...account, emails: [] }, { userPrefix: "", identity: "login" }, lists).ok,
      false,
    );
  });
});

describe("pages", () => {
  test("escape everything interpolated", () => {
    assert.equal(
      escapeHtml(`<a href="x" onclick='y'>&\``),
      "&#60;a href=&#34;x&#34; onclick=&#39;y&#39;&#62;&#38;&#96;",
    );
    assert.equal(
      // Prettier may re-indent embedded HTML; compare without whitespace between tags.
      html`<p>${"<script>"}</p>
        ${html`<b>${"&"}</b>`}`.text.replace(/>\s+</g, "><"),
      "<p>&#60;script&#62;</p><b>&#38;</b>",
    );
    const page = messagePage("<title>", "<img src=x onerror=alert(1)>", {
      href: 'javascript:"alert(1)"',
      label: "<go>",
    });
    assert.doesNotMatch(page, /<img|<title><title>|"alert|<go>/);
  });
});
