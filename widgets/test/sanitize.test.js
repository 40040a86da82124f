// Text from papers and models is sanitized markdown: nothing in it can run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mount, sampleCheckpoint, sampleFinal } from "./helpers.js";

const HOSTILE = [
  "Intro <script>window.pwned = 1</script> text.",
  '<img src="x" onerror="window.pwned = 2">',
  "[click](javascript:window.pwned=3) and <a href=\"javascript:window.pwned=4\">here</a> and <a href=\" jAvAsCrIpT:alert(1)\">x</a>",
  '<iframe src="https://example.org" onload="window.pwned=5"></iframe>',
  "<style>.zc-chat { display: none }</style><b style=\"position:fixed;inset:0\">styled</b>",
  '<svg><script>window.pwned=6</script><circle onload="window.pwned=7"/></svg>',
  '<math><mi xlink:href="javascript:alert(1)">x</mi></math> $\\href{javascript:alert(1)}{x}$',
  '<form action="javascript:alert(1)"><button formaction="javascript:alert(1)">Go</button></form>',
  '<details open ontoggle="window.pwned=8">d</details> <div id="jp-main-dock-panel" onclick="x()">clobber</div>',
  "A normal [link](https://example.org/paper) and <https://arxiv.org/abs/1706.03762> [1].",
].join("\n\n");

// The widget's own elements that carry a computed inline style (never content).
const OWN_STYLED = ".zc-meter-fill, .zc-popover, .zc-input";

/** Assert that nothing executable survives under `root`. */
function assertInert(root) {
  assert.equal(root.querySelectorAll("script, iframe, style, form, object, embed").length, 0);
  for (const node of root.querySelectorAll("*")) {
    for (const attr of node.attributes) {
      assert.doesNotMatch(attr.name, /^on/i, `${node.nodeName} keeps ${attr.name}`);
      if (!node.matches(OWN_STYLED)) assert.notEqual(attr.name, "style", `${node.nodeName} keeps a style attribute`);
      assert.doesNotMatch(attr.value, /^\s*javascript:/i, `${node.nodeName}[${attr.name}] keeps a javascript: URL`);
    }
  }
}

test("a hostile answer renders as inert markup, links open safely elsewhere", async (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.event({ type: "text_delta", turn_id: "t1", text: HOSTILE });
  await w.frame();
  await w.frame();
  const answer = w.byId("answer");
  assertInert(answer);
  w.model.py.event(sampleFinal({ answer: HOSTILE }));
  assertInert(answer);
  assert.equal(w.win.pwned, undefined);
  assert.equal(answer.querySelector("#jp-main-dock-panel"), null, "no ids from content");
  assert.match(answer.textContent, /styled/);
  const links = [...answer.querySelectorAll("a[href]")];
  assert.deepEqual(links.map((a) => a.getAttribute("href")), ["https://example.org/paper", "https://arxiv.org/abs/1706.03762"]);
  for (const a of links) {
    assert.equal(a.getAttribute("target"), "_blank");
    assert.equal(a.getAttribute("rel"), "noopener noreferrer");
  }
  assert.equal(w.allById("citation").length, 1, "citations still work next to hostile content");
});

test("a hostile cited passage, title and checkpoint summary run nothing either", (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.event(sampleCheckpoint({ covered_summary: HOSTILE, missing_aspects: ["<img src=x onerror=alert(1)>"] }));
  const card = w.byId("checkpoint-card");
  assertInert(w.byId("checkpoint-summary", card));
  assert.equal(w.byId("missing-aspects", card).querySelector("img"), null, "aspects are plain text");
  w.click(w.byId("synthesize-button"));
  const final = sampleFinal();
  final.citations[0] = { ...final.citations[0], text: HOSTILE, title: '<img src=x onerror="window.pwned=9">Title' };
  final.cited_sources[0] = { ...final.cited_sources[0], title: "<script>window.pwned=10</script>" };
  w.model.py.event(final);
  w.click(w.allById("citation")[0]);
  const pop = w.byId("citation-popover");
  assertInert(pop);
  assert.equal(w.byId("citation-title", pop).textContent, '<img src=x onerror="window.pwned=9">Title');
  assert.equal(w.byId("sources-cited").querySelector(".zc-source-title").textContent, "<script>window.pwned=10</script>");
  assertInert(w.el);
  assert.equal(w.win.pwned, undefined);
});

test("error messages and user prompts are shown as text", (t) => {
  const w = mount(t);
  w.ask("<img src=x onerror=alert(1)>");
  w.model.py.event({ type: "error", turn_id: "t1", message: "<script>window.pwned=11</script>" });
  assert.equal(w.byId("message-error").textContent, "<script>window.pwned=11</script>");
  assert.equal(w.byId("user-message").querySelector(".zc-bubble-user").textContent, "<img src=x onerror=alert(1)>");
  assertInert(w.el.querySelector(".zc-conversation"));
});

test("paper text never makes the panel fetch: images show their alt text, media tags are dropped", async (t) => {
  const w = mount(t);
  w.ask("q");
  w.model.py.event({
    type: "text_delta",
    turn_id: "t1",
    text: "See ![the tracking pixel](https://tracker.example/p.gif) and <img src=\"https://tracker.example/q.gif\" alt=\"q\"> " +
      "<video src=\"https://tracker.example/v.mp4\"></video><svg><image href=\"https://tracker.example/s.png\"/></svg>.",
  });
  await w.frame();
  const answer = w.byId("answer");
  assert.equal(answer.querySelectorAll("img, video, audio, source, picture, image").length, 0);
  assert.doesNotMatch(answer.innerHTML, /tracker\.example/);
  assert.match(answer.textContent, /See the tracking pixel and/);
});
