// The SPARQL screen: YASGUI on the database's /_sparql (queries and, for
// those the database lets write, updates), with the prefixes of the
// namespaces the database uses, results as a table, raw or a chart, and
// the query kept in the page's URL (?db=...&query=...), so a link or a
// reload gives it back.
(function () {
  "use strict";
  var R = window.Rhizome;
  var WELL_KNOWN = {
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#": "rdf",
    "http://www.w3.org/2000/01/rdf-schema#": "rdfs",
    "http://www.w3.org/2001/XMLSchema#": "xsd",
    "http://www.w3.org/2002/07/owl#": "owl",
    "http://xmlns.com/foaf/0.1/": "foaf",
    "http://schema.org/": "schema",
    "https://schema.org/": "schema",
    "http://purl.org/dc/terms/": "dcterms",
    "http://purl.org/dc/elements/1.1/": "dc",
    "http://www.w3.org/2004/02/skos/core#": "skos",
    "http://www.w3.org/ns/ldp#": "ldp",
    "http://www.w3.org/ns/prov#": "prov",
  };

  function namespace(iri) {
    var cut = Math.max(iri.lastIndexOf("#"), iri.lastIndexOf("/"));
    return cut > 0 ? iri.slice(0, cut + 1) : null;
  }

  // The namespaces of the predicates and classes the database uses, named
  // by their usual prefix or by their last path segment.
  function databasePrefixes(endpoint) {
    var q = "SELECT DISTINCT ?i WHERE { { ?s ?i ?o } UNION { GRAPH ?g { ?s ?i ?o } } UNION { GRAPH ?g { ?s a ?i } } } LIMIT 500";
    return R.request("POST", endpoint, new URLSearchParams({ query: q }), { Accept: "application/sparql-results+json" }).then(function (r) {
      var prefixes = { rdf: "http://www.w3.org/1999/02/22-rdf-syntax-ns#", rdfs: "http://www.w3.org/2000/01/rdf-schema#", xsd: "http://www.w3.org/2001/XMLSchema#" };
      var used = {};
      Object.keys(prefixes).forEach(function (p) { used[prefixes[p]] = p; });
      var bindings = (r.json && r.json.results && r.json.results.bindings) || [];
      bindings.forEach(function (b) {
        var ns = b.i && b.i.type === "uri" ? namespace(b.i.value) : null;
        if (!ns || used[ns]) return;
        var name = WELL_KNOWN[ns];
        if (!name) {
          var m = /([A-Za-z][A-Za-z0-9]*)[^A-Za-z0-9]*$/.exec(ns.replace(/\.[a-z]+[#/]$/, "").replace(/[#/]$/, ""));
          name = m ? m[1].toLowerCase().slice(0, 12) : "ns";
        }
        var base = name, n = 1;
        while (prefixes[name]) name = base + ++n;
        prefixes[name] = ns;
        used[ns] = name;
      });
      return prefixes;
    });
  }

  function defaultQuery(prefixes) {
    var lines = Object.keys(prefixes).map(function (p) { return "PREFIX " + p + ": <" + prefixes[p] + ">"; });
    lines.push("", "SELECT ?g ?s ?p ?o WHERE {", "  GRAPH ?g { ?s ?p ?o }", "} LIMIT 20");
    return lines.join("\n");
  }

  R.page("sparql.html", function (db) {
    var endpoint = window.location.origin + R.dbPath(db) + "/_sparql";
    databasePrefixes(endpoint).then(function (prefixes) {
      var fromUrl = R.params.get("query");
      Yasgui.Yasr.registerPlugin("chart", window.RhizomeChart);
      var yasgui = new Yasgui(document.getElementById("yasgui"), {
        requestConfig: { endpoint: endpoint, method: "POST" },
        copyEndpointOnNewTab: true,
        populateFromUrl: false,
        persistenceId: null,
        endpointCatalogueOptions: { getData: function () { return [{ endpoint: endpoint }]; } },
        yasr: { pluginOrder: ["table", "response", "chart"], defaultPlugin: "table" },
      });
      var tab = yasgui.getTab();
      tab.setEndpoint(endpoint);
      tab.setQuery(fromUrl || defaultQuery(prefixes));
      var yasqe = tab.getYasqe();
      // The database's prefixes for YASQE's autocompletion too.
      if (yasqe && yasqe.config) yasqe.config.prefixes = prefixes;
      yasgui.on("query", function (y, t) {
        R.params.set("query", t.getQuery());
        window.history.replaceState(null, "", "?" + R.params.toString());
      });
      yasgui.on("queryResponse", function (y, t) {
        var msg = document.getElementById("rz-message");
        msg.replaceChildren();
        var yasr = t.getYasr();
        var res = yasr && yasr.results;
        if (res && res.getError && res.getError()) {
          var e = res.getError();
          msg.appendChild(R.el("div", { class: "rz-error", role: "alert", text: (e.status ? e.status + " " : "") + (e.text || e.statusText || "the query failed") }));
        } else if (t.getYasqe().getQueryMode && t.getYasqe().getQueryMode() === "update") {
          msg.appendChild(R.el("div", { class: "rz-ok", role: "status", text: "Update done." }));
        }
      });
      window.rhizomeYasgui = yasgui;
    });
  });
})();
