/** Settings tables: parsing, every problem at once, and what --help prints. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { formatDuration } from "../../api/duration.ts";
import { ConfigError, describeSettings, loadConfig, parse, type Settings } from "../config.ts";

const settings = {
  port: { env: "T_PORT", description: "Port", parse: parse.port, default: 8080 },
  url: { env: "T_URL", description: "Where", parse: parse.httpUrl },
  grace: {
    env: "T_GRACE",
    description: "Grace",
    parse: parse.positiveDuration,
    default: 25_000,
    show: formatDuration,
  },
  file: { env: "T_FILE", description: "File", parse: parse.string, default: undefined },
} satisfies Settings;

test("every problem is reported at once, naming the variable and what it expects", () => {
  assert.throws(
    () => loadConfig("t", settings, { T_PORT: "http", T_GRACE: "0s" }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'T_PORT="http" is invalid: expected a whole number from 0 to 65535',
        "set T_URL: Where",
        'T_GRACE="0s" is invalid: expected a duration above zero',
      ]);
      return true;
    },
  );
});

test("values are parsed, unset ones take their defaults", () => {
  const config = loadConfig("t", settings, { T_URL: "https://example.org/a", T_GRACE: "1m30s" });
  assert.equal(config.port, 8080);
  assert.equal(config.url.href, "https://example.org/a");
  assert.equal(config.grace, 90_000);
  assert.equal(config.file, undefined);
});

test("durations: the CRD's syntax, or plain milliseconds", () => {
  assert.equal(parse.duration("500"), 500);
  assert.equal(parse.duration(" 30s "), 30_000);
  assert.equal(parse.duration("2h"), 7_200_000);
  assert.equal(parse.duration("1h30m"), 5_400_000);
  assert.throws(() => parse.duration("soon"), /expected a duration such as/);
  assert.throws(() => parse.duration("-1s"), /expected a duration such as/);
});

test("httpUrl takes http and https URLs only", () => {
  assert.equal(parse.httpUrl("http://a.example/").protocol, "http:");
  assert.throws(() => parse.httpUrl("ftp://a.example/"), /expected an http:\/\/ or https:\/\/ URL/);
  assert.throws(() => parse.httpUrl("not a url"), /expected an absolute URL/);
});

test("--help lines say what is required and show defaults readably", () => {
  const text = describeSettings(settings);
  assert.match(text, /^ {2}T_PORT {2,}Port \(default: 8080\)$/m);
  assert.match(text, /^ {2}T_URL {2,}Where \(required\)$/m);
  assert.match(text, /^ {2}T_GRACE {2,}Grace \(default: 25s\)$/m);
  assert.match(text, /^ {2}T_FILE {2,}File \(optional\)$/m);
});
