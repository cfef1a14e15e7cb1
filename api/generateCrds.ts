/** Writes the CRDs (api/crds.ts) to charts/userland/crds/. Run with `npm run generate`. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { crdFiles, CRD_DIR } from "./crds.ts";

mkdirSync(CRD_DIR, { recursive: true });
for (const [name, text] of crdFiles()) {
  writeFileSync(join(CRD_DIR, name), text);
  console.log(`wrote ${join(CRD_DIR, name)}`);
}
