// Puts Rhizome's screens (SPARQL, graph, LDP) in Fauxton's navigation bar,
// after Fauxton's own links, and keeps them there when Fauxton re-renders
// the bar (it is React's: a MutationObserver adds them back). Each link
// opens the screen on the database Fauxton shows, if any.
(function () {
  "use strict";
  var SCREENS = [
    { name: "SPARQL", page: "sparql.html", icon: "icon-search" },
    { name: "Graph", page: "graph.html", icon: "icon-sitemap" },
    { name: "LDP", page: "ldp.html", icon: "icon-folder-open" },
  ];

  function currentDb() {
    var m = /^#\/?database\/([^/]+)/.exec(window.location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }

  function href(screen) {
    var db = currentDb();
    return "/_utils/rhizome/" + screen.page + (db ? "?db=" + encodeURIComponent(db) : "");
  }

  function addLinks() {
    var links = document.querySelector(".faux-navbar__links");
    if (!links) return;
    var narrow = /faux-navbar--narrow/.test(links.parentNode.parentNode.className || "") ||
      !!document.querySelector(".faux-navbar.faux-navbar--narrow");
    SCREENS.forEach(function (s) {
      var a = links.querySelector('a[data-rhizome="' + s.page + '"]');
      if (!a) {
        a = document.createElement("a");
        a.setAttribute("data-rhizome", s.page);
        // Fauxton routes the clicks on its links itself, except these.
        a.setAttribute("data-bypass", "true");
        a.setAttribute("aria-label", s.name);
        a.innerHTML = '<div class="faux-navbar__itemarea" data-nav-name="' + s.name + '">' +
          '<i aria-hidden="true" class="' + s.icon + ' fonticon faux-navbar__icon"></i>' +
          '<span class="faux-navbar__text">' + s.name + "</span></div>";
        links.appendChild(a);
      }
      a.className = "faux-navbar__link faux-navbar__link--inactive" + (narrow ? " faux-navbar--narrow" : "");
      var text = a.querySelector(".faux-navbar__text");
      if (text) text.style.display = narrow ? "none" : "";
      var want = href(s);
      if (a.getAttribute("href") !== want) a.setAttribute("href", want);
    });
  }

  // Fauxton 1.2.6's database jump box fetches /_all_dbs whenever its
  // header is drawn, also right after signing out, and calls .map on the
  // answer: the 401 a signed-out user gets (CouchDB 3's and Rhizome's
  // answer: only server admins list databases) breaks the page with a
  // TypeError. Signed out, the list is empty without asking the server;
  // a 401 or 403 otherwise reads as an empty list too.
  var signedIn = null;
  var fetch = window.fetch;
  window.fetch = function (input, init) {
    var url = new URL(typeof input === "string" ? input : input.url, window.location.href);
    var method = ((init && init.method) || (typeof input === "string" ? "GET" : input.method) || "GET").toUpperCase();
    var emptyList = function () {
      return new Response("[]", { status: 200, headers: { "Content-Type": "application/json" } });
    };
    if (url.pathname === "/_all_dbs" && signedIn === false) return Promise.resolve(emptyList());
    return fetch.apply(this, arguments).then(function (r) {
      if (url.pathname === "/_session") {
        if (method === "DELETE" && r.ok) signedIn = false;
        else if (method === "POST" && r.ok) signedIn = true;
        else if (r.ok) r.clone().json().then(function (j) { signedIn = !!(j.userCtx && j.userCtx.name); }, function () {});
      }
      if (url.pathname === "/_all_dbs" && (r.status === 401 || r.status === 403)) return emptyList();
      return r;
    });
  };

  // Fauxton's footer says "Fauxton on Apache CouchDB v. {version}", the
  // `version` of the server's welcome (/). Rhizome's welcome keeps there
  // the CouchDB API version it follows, which clients read; its own name
  // and version are in `vendor`, CouchDB's field for them, and the footer
  // shows those instead (the API version in its tooltip).
  var vendor = null;
  window.fetch("/", { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then(function (r) { return r.json(); })
    .then(function (welcome) {
      if (welcome.vendor && welcome.vendor.version) {
        vendor = { name: welcome.vendor.name || "Rhizome", version: welcome.vendor.version, api: welcome.version };
        showVendor();
      }
    }, function () {});

  function showVendor() {
    var footer = document.querySelector(".faux-navbar__version-footer");
    if (!vendor || !footer) return;
    var want = "v. " + vendor.version;
    var link = footer.querySelector("a");
    if (link && link.textContent !== vendor.name) {
      // Not a link to CouchDB's site any more: plain text.
      link.textContent = vendor.name;
      link.removeAttribute("href");
    }
    var line = footer.querySelector("div");
    if (line && line.textContent !== want) {
      line.textContent = want;
      footer.setAttribute("title", "CouchDB API " + vendor.api);
      footer.setAttribute("data-rhizome-version", vendor.version);
    }
  }

  var scheduled = false;
  new MutationObserver(function () {
    if (scheduled) return;
    scheduled = true;
    window.requestAnimationFrame(function () { scheduled = false; addLinks(); showVendor(); });
  }).observe(document.documentElement, { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
  window.addEventListener("hashchange", addLinks);
  addLinks();
})();
