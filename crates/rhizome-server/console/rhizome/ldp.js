// The LDP screen: browses a database's Linked Data Platform resources
// (/{db}/_ldp/...), shows a resource's triples and its container's
// children, creates RDF sources, containers and non-RDF sources (a file
// upload) under a container, and deletes a resource.
(function () {
  "use strict";
  var R = window.Rhizome;
  var LDP = "http://www.w3.org/ns/ldp#";
  var RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

  // N-Triples lines as [subject, predicate, object] with objects kept in
  // their N-Triples form, which is what the table shows.
  function triples(text) {
    var out = [];
    text.split("\n").forEach(function (line) {
      var m = /^(<[^>]*>|_:\S+)\s+<([^>]*)>\s+(.*?)\s*\.\s*$/.exec(line.trim());
      if (m) out.push([m[1], m[2], m[3]]);
    });
    return out;
  }

  function iriOf(term) { return term[0] === "<" ? term.slice(1, -1) : null; }

  R.page("ldp.html", function (db) {
    var root = R.dbPath(db) + "/_ldp/";
    var path = R.params.get("path") || "";
    var url = root + path.split("/").map(encodeURIComponent).join("/");
    var message = function (kind, text) {
      document.getElementById("rz-message").replaceChildren(R.el("div", { class: kind === "error" ? "rz-error" : "rz-ok", role: kind === "error" ? "alert" : "status", text: text }));
    };
    var go = function (p) {
      if (p) R.params.set("path", p); else R.params.delete("path");
      window.location.search = R.params.toString();
    };
    // The path under /_ldp/ of a resource's IRI, or null for another IRI.
    var pathOf = function (iri) {
      var at = iri.indexOf("/" + encodeURIComponent(db) + "/_ldp/");
      if (at < 0) return null;
      return iri.slice(at + encodeURIComponent(db).length + 7).split("/").map(decodeURIComponent).join("/");
    };

    var crumbs = document.getElementById("rz-crumbs");
    crumbs.appendChild(R.el("a", { href: "#", text: "/_ldp/", onclick: function (e) { e.preventDefault(); go(""); } }));
    var acc = [];
    path.split("/").filter(Boolean).forEach(function (seg) {
      acc.push(seg);
      var p = acc.join("/");
      crumbs.appendChild(R.el("a", { href: "#", text: seg + "/", onclick: function (e) { e.preventDefault(); go(p); } }));
    });

    R.request("GET", url, undefined, { Accept: "application/n-triples" }).then(function (r) {
      var panel = document.getElementById("rz-resource");
      if (r.status !== 200) {
        panel.replaceChildren(R.el("div", { class: "rz-error", role: "alert", text: "GET " + url + ": " + r.status + " " + (r.json ? r.json.reason || r.json.error : r.text) }));
        return;
      }
      var ts = triples(r.text);
      var link = r.headers.get("link") || "";
      var types = (link.match(/<([^>]*)>\s*;\s*rel="type"/g) || []).map(function (l) { return /<([^>]*)>/.exec(l)[1]; });
      var container = types.some(function (t) { return /Container$/.test(t); });
      var nonRdf = types.indexOf(LDP + "NonRDFSource") >= 0;
      var children = ts.filter(function (t) { return t[1] === LDP + "contains"; }).map(function (t) { return iriOf(t[2]); }).filter(Boolean).sort();

      var head = [R.el("h3", { text: (path || "/") + "  (" + types.map(function (t) { return t.replace(LDP, "ldp:"); }).join(", ") + ")" })];
      head.push(R.el("p", {}, ["ETag ", R.el("code", { text: r.headers.get("etag") || "" })]));
      if (nonRdf) {
        head.push(R.el("p", {}, [R.el("a", { id: "rz-download", href: url, download: path.split("/").pop(), text: "Download the file" })]));
      }
      if (path) {
        head.push(R.el("button", { type: "button", class: "btn btn-danger", id: "rz-delete", text: "Delete",
          onclick: function () {
            if (!window.confirm("Delete " + path + (container ? " and everything in it" : "") + "?")) return;
            R.request("DELETE", url).then(function (d) {
              if (d.status >= 300) { message("error", "DELETE: " + d.status + " " + d.text); return; }
              go(path.split("/").slice(0, -1).join("/"));
            });
          } }));
      }
      if (container) {
        var list = R.el("ul", { id: "rz-children" });
        children.forEach(function (c) {
          var p = pathOf(c);
          list.appendChild(R.el("li", {}, [p === null ? R.el("span", { text: c }) : R.el("a", { href: "#", text: p.split("/").pop(), "data-iri": c, onclick: function (e) { e.preventDefault(); go(p); } })]));
        });
        head.push(R.el("h3", { text: "Contains (" + children.length + ")" }), list);
        document.getElementById("rz-create").hidden = false;
      }
      var table = R.el("table", { class: "rz-table", id: "rz-triples" }, [R.el("tr", {}, [R.el("th", { text: "subject" }), R.el("th", { text: "predicate" }), R.el("th", { text: "object" })])]);
      ts.filter(function (t) { return t[1] !== LDP + "contains"; }).forEach(function (t) {
        table.appendChild(R.el("tr", {}, [R.el("td", { text: t[0] }), R.el("td", { text: t[1] === RDF_TYPE ? "rdf:type" : t[1] }), R.el("td", { text: t[2] })]));
      });
      head.push(R.el("h3", { text: nonRdf ? "Description" : "Triples" }), table);
      panel.replaceChildren.apply(panel, head);
    });

    var kind = document.getElementById("rz-kind");
    kind.addEventListener("change", function () {
      document.getElementById("rz-turtle").hidden = kind.value === "file";
      document.getElementById("rz-file").hidden = kind.value !== "file";
    });
    document.getElementById("rz-create-button").addEventListener("click", function () {
      var slug = document.getElementById("rz-slug").value.trim();
      var headers = {}, body;
      if (slug) headers.Slug = slug;
      if (kind.value === "file") {
        var file = document.getElementById("rz-file").files[0];
        if (!file) { message("error", "Choose a file to upload."); return; }
        headers["Content-Type"] = file.type || "application/octet-stream";
        headers.Link = "<" + LDP + "NonRDFSource>; rel=\"type\"";
        if (!slug) headers.Slug = file.name;
        body = file;
      } else {
        headers["Content-Type"] = "text/turtle";
        headers.Link = "<" + LDP + (kind.value === "container" ? "BasicContainer" : "RDFSource") + ">; rel=\"type\"";
        body = document.getElementById("rz-turtle").value;
      }
      var containerUrl = url.replace(/\/?$/, "/");
      R.request("POST", containerUrl, body, headers).then(function (r) {
        if (r.status !== 201) { message("error", "POST " + containerUrl + ": " + r.status + " " + (r.json ? r.json.reason || r.json.error : r.text)); return; }
        var created = pathOf(r.headers.get("location") || "");
        message("ok", "Created " + (r.headers.get("location") || ""));
        if (created !== null) go(created);
      });
    });
  });
})();
