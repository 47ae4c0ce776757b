// console: keyboard shortcuts, local ages, copy buttons, theme toggle.
// No inline script anywhere: this file is all the JavaScript besides htmx.
(function () {
  "use strict";

  // Ages ("4m12s ago") are rendered by the server; this keeps them ticking
  // between refreshes from the absolute UTC time in data-ts.
  function fmtAge(sec) {
    if (sec < 0) sec = 0;
    if (sec < 60) return Math.floor(sec) + "s";
    if (sec < 3600) return Math.floor(sec / 60) + "m" + String(Math.floor(sec % 60)).padStart(2, "0") + "s";
    if (sec < 86400) return Math.floor(sec / 3600) + "h" + String(Math.floor((sec % 3600) / 60)).padStart(2, "0") + "m";
    return Math.floor(sec / 86400) + "d" + Math.floor((sec % 86400) / 3600) + "h";
  }
  var skew = 0; // server clock minus browser clock, from <body data-now>
  function tick() {
    var now = Date.now() + skew;
    document.querySelectorAll("[data-ts]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("data-ts"));
      if (!isNaN(t)) el.textContent = fmtAge((now - t) / 1000) + (el.hasAttribute("data-suffix") ? el.getAttribute("data-suffix") : " ago");
    });
    var clock = document.getElementById("refreshed");
    if (clock && clock.dataset.at) {
      clock.textContent = "refreshed " + fmtAge((Date.now() - Number(clock.dataset.at)) / 1000) + " ago";
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    var n = Date.parse(document.body.getAttribute("data-now") || "");
    if (!isNaN(n)) skew = n - Date.now();
    var clock = document.getElementById("refreshed");
    if (clock) clock.dataset.at = String(Date.now());
    setInterval(tick, 1000);
  });
  document.addEventListener("htmx:afterSwap", function () {
    var clock = document.getElementById("refreshed");
    if (clock) clock.dataset.at = String(Date.now());
    tick();
  });

  // Copy buttons next to SQL and ids.
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("[data-copy]");
    if (!btn) return;
    var src = document.getElementById(btn.getAttribute("data-copy"));
    if (!src || !navigator.clipboard) return;
    navigator.clipboard.writeText(src.textContent).then(function () {
      var old = btn.textContent;
      btn.textContent = "copied";
      setTimeout(function () { btn.textContent = old; }, 1200);
    });
  });

  // Keyboard: "/" focuses the search or filter box, "g o" overview,
  // "g r" runbook, "g q" queues, "g a" audit. Ignored while typing.
  var pendingG = 0;
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || ev.target.isContentEditable) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "/") {
      var box = document.querySelector("[data-search]");
      if (box) { ev.preventDefault(); box.focus(); }
      return;
    }
    if (ev.key === "g") { pendingG = Date.now(); return; }
    if (Date.now() - pendingG < 1000) {
      var to = { o: "/", r: "/runbook", q: "/queues", a: "/audit", d: "/deadletters" }[ev.key];
      pendingG = 0;
      if (to) { ev.preventDefault(); window.location.assign(to); }
    }
  });

  // Typed confirmation: a submit button stays disabled until the field
  // matches the expected text (for example the pid to terminate).
  document.addEventListener("input", function (ev) {
    var want = ev.target.getAttribute && ev.target.getAttribute("data-confirm-match");
    if (want === null || want === undefined) return;
    var form = ev.target.form;
    if (!form) return;
    form.querySelectorAll("[data-confirm-submit]").forEach(function (b) {
      b.disabled = ev.target.value.trim() !== want;
    });
  });
})();
