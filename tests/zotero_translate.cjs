// Runs Zotero's own import translators (zotero/translators RIS.js, BibTeX.js) the way Zotero's
// translation-server does, with Zotero's own translation engine (zotero/translate), utilities
// (zotero/utilities) and schema (zotero/zotero-schema), none of them part of this repository:
//
//   node zotero_translate.cjs SOURCES TRANSLATOR.js < file  →  JSON: the items, as the
//   translator completed them (Zotero's translator item format)
//
// SOURCES holds checkouts translators/, translate/, utilities/ and zotero-schema/. Only the
// wiring lives here (what translation-server's src/zotero.js does): a sandbox that evaluates
// the translator, and an item saver that keeps the items instead of writing a database.
"use strict";
const fs = require("fs");
const path = require("path");

const [root, translatorFile] = process.argv.slice(2);
const T = (p) => path.join(root, "translate", "src", p);
const U = (p) => path.join(root, "utilities", p);

const Zotero = (global.Zotero = {
  isNode: true, isServer: true, locale: "en-US", version: "7.0.0", setTimeout,
  debug() {}, logError(e) { process.stderr.write(`${e}\n`); },
});
Zotero.Prefs = { get() {}, set() {}, clear() {} };
Zotero.Promise = require(T("promise"));
Zotero.Debug = require(T("debug"));
Zotero.Debug.log = () => {};
Zotero.Utilities = require(U("utilities"));
Zotero.Utilities = { ...Zotero.Utilities, XRegExp: require(U("xregexp-all")), Item: require(U("utilities_item")) };
Zotero.OpenURL = require(U("openurl"));
Zotero.Date = require(U("date"));
Zotero.Date.init(JSON.parse(fs.readFileSync(U("resource/dateFormats.json"), "utf8")));
Zotero.Utilities.Translate = require(T("utilities_translate"));
require(U("xregexp-unicode-zotero"))(Zotero.Utilities.XRegExp);
Zotero.Schema = require(U("schema.js"));
Zotero.Schema.init(JSON.parse(fs.readFileSync(path.join(root, "zotero-schema", "schema.json"), "utf8")));
Object.assign(Zotero, require(U("cachedTypes")));
Zotero.setTypeSchema(require(U("resource/zoteroTypeSchemaData")));
Zotero.Translator = require(T("translator"));
Zotero.Translate = require(T("translation/translate"));

// The sandbox: the translator's code evaluated with `Zotero` (the translate API) in scope.
function SandboxManager() {
  this.sandbox = { Zotero: {}, Promise };
}
SandboxManager.prototype = {
  eval(code, functions) {
    for (const f of functions || []) delete this.sandbox[f];
    for (const name in this.sandbox) code = `var ${name} = this.sandbox.${name};` + code;
    for (const f of functions || []) if (f !== "detectExport") code += `this.sandbox.${f} = ${f};`;
    (function () {
      eval(code);
    }).call(this);
  },
  importObject(object, first, into) {
    into = into || this.sandbox.Zotero;
    for (const key in object.__exposedProps__ || object) {
      if (Function.prototype[key]) continue;
      const value = object[key];
      if (typeof value === "function" || typeof value === "object") {
        into[key] = (...args) => value.apply(object, first ? [first, ...args] : args);
        this.importObject(value, first || null, into[key]);
      } else {
        into[key] = value;
      }
    }
  },
};
function ItemSaver() {}
ItemSaver.prototype.saveItems = async function (items) {
  this.items = (this.items || []).concat(items);
  return items;
};
ItemSaver.prototype.saveCollection = () => {};
Zotero.Translate = { ...Zotero.Translate, SandboxManager, ItemSaver };

const source = fs.readFileSync(path.join(root, "translators", translatorFile), "utf8");
const header = source.slice(0, source.indexOf("\n}") + 2);
const translator = new Zotero.Translator({ ...JSON.parse(header), code: source });
Zotero.Translators = {
  get: () => translator,
  getCodeForTranslator: Zotero.Promise.method(async () => source),
  getAllForType: async () => [translator],
};

(async () => {
  const translate = new Zotero.Translate.Import();
  translate.setString(fs.readFileSync(0, "utf8"));
  translate.setTranslator(translator);
  const items = await translate.translate({ libraryID: 1 });
  process.stdout.write(JSON.stringify(items));
})().catch((e) => {
  process.stderr.write(`${(e && e.stack) || e}\n`);
  process.exit(1);
});
