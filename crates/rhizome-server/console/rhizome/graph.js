// The graph explorer: draws a database's links with cytoscape, starting
// from a document (its links through /_traverse) or from a SPARQL
// CONSTRUCT; a node expands to its neighbours (/_traverse, both ways),
// two nodes get their shortest path drawn (/_path), and a node that is a
// document opens in Fauxton's editor.
(function () {
  "use strict";
  var R = window.Rhizome;
  var LIMIT = 200;

  function shortName(iri) {
    var m = /([^/#]+)[/#]?$/.exec(iri);
    return m ? decodeURIComponent(m[1]) : iri;
  }

  R.page("graph.html", function (db) {
    var base = R.dbPath(db);
    var cy = cytoscape({
      container: document.getElementById("rz-graph"),
      style: [
        { selector: "node", style: { label: "data(label)", "background-color": "#e33f3b", "font-size": 11, color: "#333", "text-valign": "bottom", "text-margin-y": 4, width: 18, height: 18 } },
        { selector: "node:selected", style: { "background-color": "#0072bb", "border-width": 3, "border-color": "#333" } },
        { selector: "edge", style: { width: 1.5, "line-color": "#999", "target-arrow-color": "#999", "target-arrow-shape": "triangle", "curve-style": "bezier", label: "data(label)", "font-size": 9, color: "#666" } },
        { selector: "node.path", style: { "background-color": "#2e8b57" } },
        { selector: "edge.path", style: { "line-color": "#2e8b57", "target-arrow-color": "#2e8b57", width: 4 } },
      ],
    });
    window.rhizomeGraph = cy;

    function message(kind, text) {
      document.getElementById("rz-message").replaceChildren(text ? R.el("div", { class: kind === "error" ? "rz-error" : "rz-ok", role: kind === "error" ? "alert" : "status", text: text }) : document.createTextNode(""));
    }

    function addNode(iri) {
      if (!cy.getElementById(iri).length) cy.add({ group: "nodes", data: { id: iri, label: shortName(iri) } });
      return cy.getElementById(iri);
    }

    function addEdge(from, to, label) {
      addNode(from); addNode(to);
      var id = from + " " + (label || "") + " " + to;
      if (!cy.getElementById(id).length) cy.add({ group: "edges", data: { id: id, source: from, target: to, label: label || "" } });
      return cy.getElementById(id);
    }

    function relayout() {
      cy.layout({ name: cy.nodes().length > 150 ? "grid" : "cose", animate: false, randomize: false }).run();
    }

    function walk(path, body) {
      return R.request("POST", base + path, JSON.stringify(body), { "Content-Type": "application/json" }).then(function (r) {
        if (r.status !== 200) throw new Error(path + ": " + r.status + " " + (r.json ? r.json.reason || r.json.error : r.text));
        return r.json;
      });
    }

    // A document id or IRI as the IRI the walks name it by (a path from a
    // node to itself is the node).
    function resolve(node) {
      return walk("/_path", { from: node, to: node }).then(function (a) { return a.path[0]; });
    }

    function expand(iri) {
      return Promise.all([
        walk("/_traverse", { start: iri, depth: 1, direction: "out", limit: LIMIT }),
        walk("/_traverse", { start: iri, depth: 1, direction: "in", limit: LIMIT }),
      ]).then(function (answers) {
        addNode(iri);
        answers[0].nodes.forEach(function (n) { addEdge(iri, n.id); });
        answers[1].nodes.forEach(function (n) { addEdge(n.id, iri); });
        relayout();
        var count = answers[0].nodes.length + answers[1].nodes.length;
        message("ok", shortName(iri) + ": " + count + " neighbour" + (count === 1 ? "" : "s") + (answers[0].truncated || answers[1].truncated ? " (truncated at " + LIMIT + ")" : ""));
      });
    }

    // The document a node is: its IRI as a document id, or the id after
    // /{db}/ in the database's own IRIs.
    function documentOf(iri) {
      var candidates = [iri];
      var marker = "/" + encodeURIComponent(db) + "/";
      var at = iri.indexOf(marker);
      if (at >= 0) {
        try { candidates.push(decodeURIComponent(iri.slice(at + marker.length))); } catch (e) { /* not an id */ }
      }
      return candidates.reduce(function (found, id) {
        return found.then(function (hit) {
          if (hit) return hit;
          return R.request("GET", base + "/" + encodeURIComponent(id)).then(function (r) { return r.status === 200 ? id : null; });
        });
      }, Promise.resolve(null));
    }

    function showNode(iri) {
      var panel = document.getElementById("rz-node");
      var expandButton = R.el("button", { type: "button", class: "btn btn-primary", id: "rz-expand", text: "Expand neighbours",
        onclick: function () { expand(iri).catch(function (e) { message("error", e.message); }); } });
      var docLine = R.el("p", { id: "rz-doc", text: "Looking for its document…" });
      panel.replaceChildren(R.el("h3", { text: shortName(iri) }), R.el("p", { text: iri }), expandButton,
        R.el("button", { type: "button", class: "btn", text: "Path from here", onclick: function () { document.getElementById("rz-from").value = iri; } }),
        R.el("button", { type: "button", class: "btn", text: "Path to here", onclick: function () { document.getElementById("rz-to").value = iri; } }),
        docLine);
      documentOf(iri).then(function (id) {
        docLine.replaceChildren(id
          ? R.el("a", { id: "rz-open-doc", href: "../#/database/" + encodeURIComponent(db) + "/" + encodeURIComponent(id), text: "Open document in the editor" })
          : document.createTextNode("No document of this database has this IRI."));
      });
    }

    cy.on("tap", "node", function (e) { showNode(e.target.id()); });
    cy.on("dbltap", "node", function (e) { expand(e.target.id()).catch(function (err) { message("error", err.message); }); });

    function draw() {
      var start = document.getElementById("rz-start").value.trim();
      if (!start) return;
      R.params.set("start", start);
      window.history.replaceState(null, "", "?" + R.params.toString());
      resolve(start).then(function (iri) {
        return expand(iri).then(function () { cy.getElementById(iri).select(); showNode(iri); });
      }).catch(function (e) { message("error", e.message); });
    }
    document.getElementById("rz-draw").addEventListener("click", draw);
    document.getElementById("rz-start").addEventListener("keydown", function (e) { if (e.key === "Enter") draw(); });

    document.getElementById("rz-path").addEventListener("click", function () {
      var from = document.getElementById("rz-from").value.trim(), to = document.getElementById("rz-to").value.trim();
      if (!from || !to) return;
      walk("/_path", { from: from, to: to, direction: "any" }).then(function (a) {
        cy.elements().removeClass("path");
        if (!a.path) { message("error", "No path between " + from + " and " + to + "."); return; }
        for (var i = 0; i < a.path.length; i++) {
          addNode(a.path[i]).addClass("path");
          if (i > 0) {
            var edge = cy.edges().filter(function (e) {
              return (e.source().id() === a.path[i - 1] && e.target().id() === a.path[i]) || (e.source().id() === a.path[i] && e.target().id() === a.path[i - 1]);
            });
            (edge.length ? edge : addEdge(a.path[i - 1], a.path[i])).addClass("path");
          }
        }
        relayout();
        message("ok", "Shortest path: " + a.path.map(shortName).join(" → ") + " (" + (a.path.length - 1) + " links)");
      }).catch(function (e) { message("error", e.message); });
    });

    document.getElementById("rz-run-construct").addEventListener("click", function () {
      var q = document.getElementById("rz-construct").value.trim() || document.getElementById("rz-construct").placeholder;
      R.request("POST", base + "/_sparql", new URLSearchParams({ query: q }), { Accept: "application/n-triples" }).then(function (r) {
        if (r.status !== 200) throw new Error("SPARQL: " + r.status + " " + (r.json ? r.json.reason || r.json.error : r.text));
        var links = 0;
        r.text.split("\n").forEach(function (line) {
          var m = /^(<[^>]*>|_:\S+)\s+<([^>]*)>\s+(<[^>]*>|_:\S+)\s*\.\s*$/.exec(line.trim());
          if (!m) return;
          var strip = function (t) { return t[0] === "<" ? t.slice(1, -1) : t; };
          addEdge(strip(m[1]), strip(m[3]), shortName(m[2]));
          links++;
        });
        relayout();
        message("ok", "CONSTRUCT: " + links + " link" + (links === 1 ? "" : "s") + " drawn (literals are left out).");
      }).catch(function (e) { message("error", e.message); });
    });

    document.getElementById("rz-clear").addEventListener("click", function () { cy.elements().remove(); message("ok", ""); });

    if (R.params.get("start")) {
      document.getElementById("rz-start").value = R.params.get("start");
      draw();
    }
  });
})();
