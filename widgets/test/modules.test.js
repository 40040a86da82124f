// The sources are ES modules by concept (PROTOCOL.md, "Loading"); imports go one way, from the
// entry src/chat.js down to the helpers, so no module can see another half-initialised.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { build } from "esbuild";
import { bundleOptions } from "../build.mjs";

test("every module of src/ is bundled from the entry, and no import cycle exists", async () => {
  const { metafile } = await build({ ...bundleOptions, write: false, metafile: true, outfile: "dist/chat.js" });
  const graph = new Map(
    Object.entries(metafile.inputs)
      .filter(([path]) => path.startsWith("src/"))
      .map(([path, input]) => [path, input.imports.map((i) => i.path).filter((p) => p.startsWith("src/"))]),
  );
  const modules = (await readdir(new URL("../src/", import.meta.url))).filter((f) => f.endsWith(".js"));
  assert.deepEqual([...graph.keys()].sort(), modules.map((f) => `src/${f}`).sort());
  const state = new Map(); // path → "visiting" | "done"
  const visit = (path, trail) => {
    if (state.get(path) === "done") return;
    assert.notEqual(state.get(path), "visiting", `import cycle: ${[...trail, path].join(" → ")}`);
    state.set(path, "visiting");
    for (const next of graph.get(path)) visit(next, [...trail, path]);
    state.set(path, "done");
  };
  visit("src/chat.js", []);
});
