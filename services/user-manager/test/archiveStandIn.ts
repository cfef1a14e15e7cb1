/**
 * Stands in for the operator and an archive pod in tests without them: each new Archive's folder (or
 * file) is served once by `copy.ts serve-archive` (`serve-file`) as a process on 127.0.0.1, and the
 * Archive reported Serving there (or Failed, when `folderOf` says so).
 */
import { spawn } from "node:child_process";
import type { TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { archivesPath, type Archive } from "../../../api/v1alpha1/index.ts";
import { adminRest } from "../../../test/support/resources.ts";

const program = fileURLToPath(new URL("../../../coursework/copy.ts", import.meta.url));

/**
 * Stands in for the operator and the archive pod: serves each new Archive's folder (or file) once on
 * loopback, or receives an upload (an Archive with a target) into it, with `receiveArgs` (e.g.
 * --student).
 */
export function standIn(
  t: TestContext,
  ns: string,
  folderOf: (a: Archive) => string | { fail: string } | { file: string },
  receiveArgs: (a: Archive) => string[] = () => [],
) {
  const seen: Archive[] = [];
  let stopped = false;
  const loop = (async () => {
    const rest = await adminRest();
    while (!stopped) {
      const { items } = await rest.list<Archive>(archivesPath(ns));
      for (const a of items) {
        if (seen.some((s) => s.metadata.uid === a.metadata.uid)) continue;
        seen.push(a);
        const folder = folderOf(a);
        if (typeof folder !== "string" && "fail" in folder) {
          await rest.patch(archivesPath(ns, a.metadata.name, "status"), {
            status: { phase: "Failed", message: folder.fail },
          });
          continue;
        }
        const child = spawn(
          process.execPath,
          [
            program,
            ...(typeof folder !== "string"
              ? ["serve-file", folder.file]
              : a.spec.target
                ? ["receive-upload", folder, ...receiveArgs(a)]
                : ["serve-archive", folder]),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--token-sha256",
            a.spec.tokenSha256,
          ],
          { stdio: ["ignore", "ignore", "pipe"] },
        );
        t.after(() => {
          if (child.exitCode === null) child.kill("SIGKILL");
        });
        let stderr = "";
        const port = await new Promise<number>((resolve) =>
          child.stderr.on("data", (chunk: Buffer) => {
            stderr += chunk.toString();
            const m = /listening on (\d+)/.exec(stderr);
            if (m) resolve(Number(m[1]));
          }),
        );
        await rest.patch(archivesPath(ns, a.metadata.name, "status"), {
          status: { phase: "Serving", pod: "stand-in", podIP: "127.0.0.1", port },
        });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  t.after(async () => {
    stopped = true;
    await loop;
  });
  return seen;
}
