// A bar chart for YASR (YASGUI's results): the first variable whose values
// are all numbers gives the bars' lengths, the first other variable their
// labels. @zazuko/yasgui's bundle has table and raw views but no chart.
(function () {
  "use strict";
  var MAX_BARS = 50;

  function Chart(yasr) {
    this.yasr = yasr;
    this.priority = 5;
    this.label = "Chart";
  }

  Chart.prototype.columns = function () {
    var res = this.yasr.results;
    if (!res || !res.getVariables || res.getType() !== "json") return null;
    var vars = res.getVariables(), rows = res.getBindings() || [];
    if (!rows.length) return null;
    var numeric = vars.filter(function (v) {
      return rows.every(function (r) { return r[v] && r[v].type !== "uri" && r[v].value !== "" && !isNaN(Number(r[v].value)); });
    });
    if (!numeric.length) return null;
    var value = numeric[0];
    var label = vars.filter(function (v) { return v !== value; })[0] || value;
    return { value: value, label: label, rows: rows.slice(0, MAX_BARS) };
  };

  Chart.prototype.canHandleResults = function () { return !!this.columns(); };

  Chart.prototype.draw = function () {
    var c = this.columns();
    var ns = "http://www.w3.org/2000/svg";
    var rowH = 22, labelW = 260, barW = 420;
    var max = Math.max.apply(null, c.rows.map(function (r) { return Math.abs(Number(r[c.value].value)); })) || 1;
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "rz-chart");
    svg.setAttribute("width", labelW + barW + 80);
    svg.setAttribute("height", c.rows.length * rowH + 10);
    c.rows.forEach(function (r, i) {
      var v = Number(r[c.value].value);
      var name = r[c.label] ? r[c.label].value : "";
      var t = document.createElementNS(ns, "text");
      t.setAttribute("x", 4); t.setAttribute("y", i * rowH + 15);
      t.textContent = name.length > 40 ? "…" + name.slice(-39) : name;
      var bar = document.createElementNS(ns, "rect");
      bar.setAttribute("x", labelW); bar.setAttribute("y", i * rowH + 3);
      bar.setAttribute("width", Math.max(1, Math.abs(v) / max * barW)); bar.setAttribute("height", rowH - 6);
      var n = document.createElementNS(ns, "text");
      n.setAttribute("x", labelW + Math.abs(v) / max * barW + 6); n.setAttribute("y", i * rowH + 15);
      n.textContent = String(v);
      svg.appendChild(t); svg.appendChild(bar); svg.appendChild(n);
    });
    var caption = document.createElement("div");
    caption.textContent = c.value + " by " + c.label + (this.yasr.results.getBindings().length > MAX_BARS ? " (first " + MAX_BARS + " rows)" : "");
    this.yasr.resultsEl.appendChild(caption);
    this.yasr.resultsEl.appendChild(svg);
  };

  Chart.prototype.getIcon = function () {
    var i = document.createElement("i");
    i.className = "icon-bar-chart";
    i.textContent = "▮";
    return i;
  };

  window.RhizomeChart = Chart;
})();
