// Markdown → sanitized HTML. Everything that comes from papers or models goes through here:
// markdown-it parses (tables, code, links), KaTeX typesets math as MathML, DOMPurify removes
// anything that could run or fetch.
import MarkdownIt from "markdown-it";
import markdownItKatexModule from "@vscode/markdown-it-katex";
import createDOMPurify from "dompurify";

// The plugin is CommonJS with `exports.default`; node and esbuild interpret that differently.
const markdownItKatex = markdownItKatexModule.default ?? markdownItKatexModule;

// Raw HTML is allowed through the parser on purpose (papers and models emit <sup>, <table>, …)
// and then everything is sanitized by DOMPurify: no scripts, handlers, frames, styles or forms.
const markdown = new MarkdownIt({ html: true, linkify: true, typographer: false });
// Math becomes MathML (rendered natively by Chromium, Firefox and Safari): no KaTeX fonts or CSS
// to ship. `trust: false` keeps \href, \htmlClass and friends inert.
markdown.use(markdownItKatex, { output: "mathml", throwOnError: false, trust: false, strict: "ignore" });

// Paper and model text never makes the panel fetch anything: a remote image (or a tracking
// pixel) would tell a third party what the researcher is reading. Markdown images show their
// alt text; raw media tags are dropped.
markdown.renderer.rules.image = (tokens, idx) => markdown.utils.escapeHtml(tokens[idx].content);

const SANITIZE_CONFIG = {
  USE_PROFILES: { html: true, mathMl: true },
  ADD_TAGS: ["semantics", "annotation"],
  ADD_ATTR: ["encoding"],
  FORBID_TAGS: [
    "style", "form", "input", "button", "textarea", "select", "option", "dialog", "template",
    "img", "picture", "video", "audio", "source", "track", "image",
  ],
  FORBID_ATTR: ["style", "id", "name", "srcset", "action", "formaction"],
  ALLOW_DATA_ATTR: false,
  // DOMPurify's default URL rule plus exactly one scheme: `zotero:` (links that open an item or
  // its PDF in the Zotero app). Everything else it refuses (javascript:, data:, vbscript:…)
  // stays refused.
  ALLOWED_URI_REGEXP:
    /^(?:(?:(?:f|ht)tps?|mailto|tel|callto|sms|cid|xmpp|matrix|zotero):|[^a-z]|[a-z+.\-]+(?:[^a-z+.\-:]|$))/i,
};

const purifiers = new WeakMap();

/** One DOMPurify instance per window, with the hook that makes every link open safely outside. */
function purifierFor(win) {
  let purify = purifiers.get(win);
  if (!purify) {
    purify = createDOMPurify(win);
    purify.addHook("afterSanitizeAttributes", (node) => {
      if (node.nodeName === "A") {
        if (/^\s*zotero:/i.test(node.getAttribute("href") ?? "")) {
          node.removeAttribute("target"); // handed to the Zotero app: no new tab
          node.setAttribute("rel", "noopener noreferrer");
        } else if (node.hasAttribute("href")) {
          node.setAttribute("target", "_blank");
          node.setAttribute("rel", "noopener noreferrer");
        } else {
          node.removeAttribute("target");
        }
      }
    });
    purifiers.set(win, purify);
  }
  return purify;
}

/** Markdown source → sanitized HTML string for `win`'s document. */
export function markdownToSafeHtml(win, source) {
  return purifierFor(win).sanitize(markdown.render(String(source ?? "")), SANITIZE_CONFIG);
}

/** Render markdown into `target`, replacing its content. */
export function renderMarkdownInto(target, source) {
  target.innerHTML = markdownToSafeHtml(target.ownerDocument.defaultView, source);
  return target;
}
