// Shared by Rhizome's screens: Fauxton's navigation bar (same markup and
// styles as Fauxton's, so the screens look like the rest of the console),
// the signed-in user (Fauxton's session cookie: sign in once), the
// database picker, and JSON requests to the server.
(function () {
  "use strict";
  var NAV = [
    { name: "Databases", href: "../#/_all_dbs", icon: "fonticon-database fonticon" },
    { name: "Active Tasks", href: "../#/activetasks", icon: "fonticon-activetasks fonticon" },
    { name: "Configuration", href: "../#/_config", icon: "fonticon-cog fonticon" },
    { name: "Replication", href: "../#/replication", icon: "fonticon-replicate fonticon" },
    { name: "SPARQL", href: "sparql.html", icon: "icon-search fonticon" },
    { name: "Graph", href: "graph.html", icon: "icon-sitemap fonticon" },
    { name: "LDP", href: "ldp.html", icon: "icon-folder-open fonticon" },
    { name: "Your Account", href: "../#/changePassword", icon: "fonticon-user fonticon" },
  ];

  var params = new URLSearchParams(window.location.search);

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }

  function dbPath(db) {
    return "/" + encodeURIComponent(db);
  }

  // A request to the server; resolves to {status, headers, text, json}.
  function request(method, path, body, headers) {
    var opts = { method: method, credentials: "same-origin", headers: headers || {} };
    if (body !== undefined) opts.body = body;
    return fetch(path, opts).then(function (r) {
      return r.text().then(function (text) {
        var json = null;
        try { json = JSON.parse(text); } catch (e) { /* not JSON */ }
        return { status: r.status, headers: r.headers, text: text, json: json };
      });
    });
  }

  function drawNav(screen) {
    var links = el("div", { class: "faux-navbar__links" });
    NAV.forEach(function (n) {
      var href = n.href;
      if (/\.html$/.test(href) && params.get("db")) href += "?db=" + encodeURIComponent(params.get("db"));
      var active = n.href === screen;
      links.appendChild(el("a", {
        class: "faux-navbar__link faux-navbar--narrow " + (active ? "faux-navbar__link--active" : "faux-navbar__link--inactive"),
        href: href, "aria-label": n.name, title: n.name,
      }, [el("div", { class: "faux-navbar__itemarea", "data-nav-name": n.name }, [
        el("i", { class: n.icon + " faux-navbar__icon", "aria-hidden": "true" }),
      ])]));
    });
    var logout = el("button", { type: "button", class: "faux-navbar__logout", id: "rz-logout", text: "Log Out",
      onclick: function () {
        request("DELETE", "/_session").then(function () { window.location.href = "../#/login"; });
      } });
    var footer = el("div", { class: "faux-navbar__footer" }, [
      el("div", { class: "faux-navbar__brand" }, [el("div", { class: "faux-navbar__brand-logo faux-navbar__brand-logo--narrow" })]),
      el("div", { class: "rz-version", text: "Rhizome" }),
      logout,
    ]);
    var nav = el("div", { id: "primary-navbar" }, [
      el("div", { class: "faux-navbar faux-navbar--narrow" }, [
        el("nav", {}, [el("div", { class: "faux-navbar__linkcontainer" }, [links, footer])]),
      ]),
    ]);
    document.getElementById("rz-nav").appendChild(nav);
  }

  function setDb(db) {
    params.set("db", db);
    window.location.search = params.toString();
  }

  function drawDbPicker() {
    var holder = document.getElementById("rz-db");
    var current = params.get("db") || "";
    return request("GET", "/_all_dbs").then(function (r) {
      if (r.status === 200 && Array.isArray(r.json)) {
        var select = el("select", { id: "rz-db-select", "aria-label": "Database",
          onchange: function (e) { setDb(e.target.value); } });
        if (!current) select.appendChild(el("option", { value: "", text: "choose a database" }));
        r.json.forEach(function (name) {
          var o = el("option", { value: name, text: name });
          if (name === current) o.selected = true;
          select.appendChild(o);
        });
        holder.appendChild(select);
      } else {
        // Not a server admin: the database is typed, as in Fauxton's jump box.
        var input = el("input", { id: "rz-db-select", type: "text", value: current, placeholder: "database name",
          onchange: function (e) { setDb(e.target.value); } });
        holder.appendChild(input);
      }
      return current || null;
    });
  }

  // Draws the frame, then calls start(db, session) once the user is known
  // (db is null until one is chosen).
  function page(screen, start) {
    drawNav(screen);
    request("GET", "/_session").then(function (r) {
      var ctx = r.json && r.json.userCtx;
      var user = document.getElementById("rz-user");
      if (!ctx || !ctx.name) {
        user.appendChild(el("a", { href: "../#/login", id: "rz-signin", text: "Sign in" }));
        document.getElementById("rz-content").replaceChildren(el("p", { class: "rz-notice" }, [
          "Sign in to use this screen: ", el("a", { href: "../#/login", text: "sign in with Fauxton" }),
          ", then come back.",
        ]));
        return;
      }
      user.textContent = ctx.name;
      drawDbPicker().then(function (db) {
        if (!db) {
          document.getElementById("rz-content").replaceChildren(el("p", { class: "rz-notice", text: "Choose a database above." }));
          return;
        }
        start(db, ctx);
      });
    });
  }

  function showError(where, message) {
    var box = document.getElementById(where);
    box.replaceChildren(el("div", { class: "rz-error", role: "alert", text: message }));
  }

  window.Rhizome = { el: el, request: request, page: page, params: params, dbPath: dbPath, showError: showError };
})();
