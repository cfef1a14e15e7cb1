/**
 * A class's archive (copy.ts archive-class, verify-archive, serve-file), run as the pods run it: the
 * zip holds each folder under its name with the hashes coreutils gives, special files leave a folder
 * complete but an unreadable file does not, and the read-back catches a changed byte, a changed
 * manifest and a zip that is not the one written.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, open, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { extract, scratch, sha256sumOfFolder } from "../files/test/scratch.ts";

const program = fileURLToPath(new URL("../copy.ts", import.meta.url));

function run(args: string[], prefix: string[] = []) {
  const [command, ...rest] = [...prefix, process.execPath, program, ...args];
  const result = spawnSync(command!, rest, { encoding: "utf8" });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface Written {
  folders: number;
  incomplete: { name: string; problem: string }[];
  files: number;
  manifestSha256: string;
}
interface Verified {
  folders: number;
  verified: number;
  unverified: { name: string; reason: string }[];
  sha256: string;
  bytes: number;
}

async function classOfThree(dir: string) {
  const ada = join(dir, "ada");
  const bob = join(dir, "bob");
  const handins = join(dir, "handins-a1");
  await mkdir(join(ada, "src"), { recursive: true });
  await writeFile(join(ada, "src", "main.py"), "print('ada')\n");
  await writeFile(join(ada, "notes.txt"), "ada's notes\n");
  // Hostile: a link out of the folder and a FIFO are skipped and lose no data.
  await symlink("/etc/passwd", join(ada, "passwd"));
  spawnSync("mkfifo", [join(ada, "pipe")]);
  await mkdir(bob);
  await writeFile(join(bob, "b.txt"), "bob\n");
  await mkdir(join(handins, "ada"), { recursive: true });
  await writeFile(join(handins, "ada", "main.py"), "print('handed in')\n");
  return { ada, bob, handins };
}

const folderArgs = (f: { ada: string; bob: string; handins: string }) => [
  "--folder",
  `students/ada/home=${f.ada}`,
  "--folder",
  `students/bob/home=${f.bob}`,
  "--folder",
  `handins/a1=${f.handins}`,
];

test("archive-class writes one stored zip with every folder and a manifest; verify-archive reads it back equal", async (t) => {
  const dir = await scratch(t);
  const folders = await classOfThree(dir);
  const zip = join(dir, "out", "c1.zip");
  await mkdir(join(dir, "out"));
  const written = run(["archive-class", zip, ...folderArgs(folders)]);
  assert.equal(written.code, 0, written.stderr);
  const result = JSON.parse(written.stdout) as Written;
  assert.deepEqual(result.incomplete, []);
  assert.equal(result.folders, 3);
  assert.equal(result.files, 4);
  const manifestBytes = await readFile(join(dir, "out", "c1.json"));
  assert.equal(createHash("sha256").update(manifestBytes).digest("hex"), result.manifestSha256);
  // The manifest's hashes are what coreutils gives over each folder (links and FIFOs left out).
  const manifest = JSON.parse(manifestBytes.toString()) as { folders: { name: string; sha256: string }[] };
  const out = join(dir, "x");
  extract(zip, out);
  for (const f of manifest.folders) assert.equal(f.sha256, sha256sumOfFolder(join(out, f.name)), f.name);
  assert.equal(existsSync(join(out, "students/ada/home/passwd")), false);

  const verified = run(["verify-archive", zip, "--manifest-sha256", result.manifestSha256]);
  assert.equal(verified.code, 0, verified.stderr);
  const v = JSON.parse(verified.stdout) as Verified;
  assert.deepEqual(v.unverified, []);
  assert.equal(v.verified, 3);
  assert.equal(
    v.sha256,
    createHash("sha256")
      .update(await readFile(zip))
      .digest("hex"),
  );

  // A manifest that is not the one written is refused outright.
  const other = run(["verify-archive", zip, "--manifest-sha256", "0".repeat(64)]);
  assert.equal(other.code, 1);
  assert.match(other.stdout, /the manifest is not the one written/);

  // One byte of bob's file changed in the zip (the same length, so the zip still parses): his
  // folder is not verified, ada's still is.
  const bytes = await readFile(zip);
  const at = bytes.indexOf("bob\n");
  assert.ok(at > 0);
  const handle = await open(zip, "r+");
  await handle.write(Buffer.from("B"), 0, 1, at);
  await handle.close();
  const tampered = JSON.parse(
    run(["verify-archive", zip, "--manifest-sha256", result.manifestSha256]).stdout,
  ) as Verified;
  assert.deepEqual(tampered.unverified, [
    { name: "students/bob/home", reason: "b.txt: its CRC-32 does not match" },
  ]);
  assert.equal(tampered.verified, 2);
});

test("a folder with a file the copier cannot read, or that cannot be walked, is archived as incomplete and never verified", async (t) => {
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/setpriv")) {
    t.skip("needs root and setpriv to run the copier as another user");
    return;
  }
  const dir = await scratch(t);
  await chmod(dir, 0o777);
  const folders = await classOfThree(dir);
  await writeFile(join(folders.bob, "secret.txt"), "unreadable\n");
  await chmod(join(folders.bob, "secret.txt"), 0o600);
  await mkdir(join(dir, "out"), { mode: 0o777 });
  await chmod(join(dir, "out"), 0o777);
  const nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
  const zip = join(dir, "out", "c1.zip");
  const written = run(
    ["archive-class", zip, ...folderArgs(folders), "--folder", `students/eve/home=${join(dir, "missing")}`],
    nobody,
  );
  assert.equal(written.code, 0, written.stderr);
  const result = JSON.parse(written.stdout) as Written;
  assert.deepEqual(
    result.incomplete.map((i) => i.name),
    ["students/bob/home", "students/eve/home"],
  );
  assert.match(
    result.incomplete[0]!.problem,
    /1 entry could not be archived \(secret\.txt: could not be read/,
  );
  const v = JSON.parse(
    run(["verify-archive", zip, "--manifest-sha256", result.manifestSha256], nobody).stdout,
  ) as Verified;
  assert.equal(v.verified, 2);
  assert.deepEqual(
    v.unverified.map((u) => u.name),
    ["students/bob/home", "students/eve/home"],
  );
});

test("invalid archive-class and verify-archive arguments exit 2", () => {
  for (const [args, message] of [
    [["archive-class", "c.zip"], /at least one --folder/],
    [["archive-class", "c.zip", "--folder", "x"], /--folder takes NAME=PATH/],
    [["archive-class", "c.tar", "--folder", "a=b"], /must end in \.zip/],
    [["verify-archive", "c.zip"], /needs --manifest-sha256/],
    [["handin", "a", "b", "--folder", "a=b"], /--folder applies to archive-class only/],
  ] as const) {
    const { code, stderr } = run([...args]);
    assert.equal(code, 2, args.join(" "));
    assert.match(stderr, message, args.join(" "));
  }
});
