// dist/ is what the Python package loads: it must be the build of the current sources, self-contained,
// and behave like the sources.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { bundle } from "../build.mjs";
import { mount, sampleFinal } from "./helpers.js";

const dist = new URL("../dist/", import.meta.url);

test("dist/chat.js is up to date (run `npm run build` if not)", async () => {
  const committed = await readFile(new URL("chat.js", dist), "utf8");
  assert.ok(committed === (await bundle()), "dist/chat.js differs from a fresh build of src/");
});

test("the bundle imports nothing at run time", async () => {
  const text = await readFile(new URL("chat.js", dist), "utf8");
  assert.doesNotMatch(text, /(^|[;}\s])import\s*[({*"'\w]/, "a static or dynamic import survived bundling");
  assert.doesNotMatch(text, /\bfrom\s*"[^"]+"/);
  assert.match(text, /export\s*\{[^}]*\bas default\b/);
});

test("the bundled module streams, cites and sanitizes like the sources", async (t) => {
  const { default: bundled } = await import(new URL("chat.js", dist));
  const w = mount(t, { module: bundled });
  w.ask("q");
  w.model.py.event({ type: "step", turn_id: "t1", phase: "search", label: "Searching the library" });
  w.model.py.event({ type: "text_delta", turn_id: "t1", text: "Energy $E=mc^2$ <img src=x onerror=alert(1)>" });
  await w.frame();
  await w.frame();
  const answer = w.byId("answer");
  assert.ok(answer.querySelector("math"));
  assert.equal(answer.querySelector("img"), null, "no image (and no handler) survives");
  w.model.py.event(sampleFinal());
  assert.equal(w.allById("citation").length, 4);
  w.click(w.allById("citation")[0]);
  assert.equal(w.byId("citation-support").textContent, "Support 93%");
});
