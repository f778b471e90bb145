// Replays queries against a built site's search index with Material's own search worker.
//
// usage: node search_harness.js SITE_DIR < queries.json > results.json
// queries.json: ["query", ...]; results.json: [["page/location/", ...], ...], one list per
// query, pages in the order Material's search shows them (sections grouped by page).
//
// The worker bundle (assets/javascripts/workers/search.*.min.js) is loaded unchanged in a vm
// context that stands in for a web worker: it receives the same SETUP message the page sends
// (search_index.json plus options), then one QUERY message per query.
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");

const SETUP = 0, QUERY = 2;

async function main() {
  const site = process.argv[2];
  const workers = path.join(site, "assets", "javascripts", "workers");
  const bundle = fs.readdirSync(workers).find(f => /^search\..*\.min\.js$/.test(f));
  if (!bundle) throw new Error(`no search worker in ${workers}`);
  const index = JSON.parse(fs.readFileSync(path.join(site, "search", "search_index.json"), "utf8"));
  const queries = JSON.parse(fs.readFileSync(0, "utf8"));

  let handler = null;
  let reply = null;
  const context = {
    console: { log() {}, warn() {}, error: console.error },
    addEventListener: (type, fn) => { if (type === "message") handler = fn; },
    postMessage: message => reply(message),
    setTimeout, clearTimeout,
  };
  context.self = context;
  vm.createContext(context);
  vm.runInContext(fs.readFileSync(path.join(workers, bundle), "utf8"), context);

  const send = data => new Promise(resolve => { reply = resolve; handler({ data }); });
  await send({ type: SETUP, data: { ...index, options: { suggest: false } } });
  const results = [];
  for (const query of queries) {
    const { data } = await send({ type: QUERY, data: query });
    // Each item group is one page; its article entry has no "#" in its location.
    results.push(data.items.map(group => group[0].location.split("#")[0]));
  }
  process.stdout.write(JSON.stringify(results));
}

main().catch(err => { console.error(err.stack || String(err)); process.exit(1); });
