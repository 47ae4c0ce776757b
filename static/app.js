// console: keyboard shortcuts and their help dialog, the phone menu, ticking
// ages, copy buttons and the theme toggle. No inline script anywhere: this
// file and theme.js (which applies the saved theme before the page paints)
// are all the JavaScript besides htmx.
(function () {
  "use strict";

  // Times are shown one way: relative ("4m12s ago", "in 3m00s") with the
  // absolute UTC time on hover. The server renders them; this keeps them
  // ticking between refreshes from the RFC 3339 time in data-ts.
  function fmtAge(sec) {
    if (sec < 0) sec = 0;
    if (sec < 1) return Math.floor(sec * 1000) + "ms";
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
      if (isNaN(t)) return;
      var sec = (now - t) / 1000;
      el.textContent = sec < 0 ? "in " + fmtAge(-sec) : fmtAge(sec) + " ago";
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

  // The phone menu: the menu button opens the navigation over the page;
  // a link, the backdrop or Escape closes it.
  function setMenu(open) {
    document.body.classList.toggle("nav-open", open);
    document.querySelectorAll("[data-menu]").forEach(function (b) {
      b.setAttribute("aria-expanded", open ? "true" : "false");
    });
    if (open) {
      var first = document.querySelector("nav.side a");
      if (first) first.focus();
    }
  }
  document.addEventListener("click", function (ev) {
    if (ev.target.closest("[data-menu]")) { setMenu(!document.body.classList.contains("nav-open")); return; }
    if (ev.target.closest("[data-menu-close]") || ev.target.closest("nav.side a")) setMenu(false);
    if (ev.target.closest("[data-help]")) showHelp();
    if (ev.target.closest("[data-help-close]")) closeHelp();
    if (ev.target.closest("[data-theme-toggle]")) cycleTheme();
  });

  // The help dialog lists every shortcut; its "g" rows (data-go, data-href)
  // are the table the "g" sequences go by.
  function help() { return document.getElementById("help"); }
  function showHelp() {
    var d = help();
    if (d && !d.open) d.showModal();
  }
  function closeHelp() {
    var d = help();
    if (d && d.open) d.close();
  }
  function goTarget(key) {
    var rows = document.querySelectorAll("#help [data-go]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-go") === key) return rows[i].getAttribute("data-href");
    }
    return null;
  }

  // Theme: "system" follows the OS; "dark" and "light" override it. The
  // choice is kept in localStorage and applied by theme.js on every page.
  var themes = ["system", "dark", "light"];
  function currentTheme() {
    var t = document.documentElement.getAttribute("data-theme");
    return themes.indexOf(t) >= 0 ? t : "system";
  }
  function showTheme() {
    var t = currentTheme();
    document.querySelectorAll("[data-theme-toggle]").forEach(function (b) {
      b.title = "Theme: " + (t === "system" ? "follows the system" : t) + " (t switches)";
      b.setAttribute("aria-label", b.title);
    });
  }
  function cycleTheme() {
    var next = themes[(themes.indexOf(currentTheme()) + 1) % themes.length];
    if (next === "system") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.setAttribute("data-theme", next);
    try {
      if (next === "system") localStorage.removeItem("console-theme");
      else localStorage.setItem("console-theme", next);
    } catch (e) { /* storage refused: the choice lasts for this page */ }
    showTheme();
  }
  document.addEventListener("DOMContentLoaded", showTheme);

  // Keyboard: "/" the jump box, "f" the page's filter box, "?" the help
  // dialog, "m" the menu, "t" the theme, "g" then a letter a page (the
  // help dialog lists them). Ignored while typing, except Escape.
  var pendingG = 0;
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") {
      if (document.body.classList.contains("nav-open")) setMenu(false);
      var t = ev.target;
      if (t && t.matches && t.matches("[data-jump]")) t.blur();
      return;
    }
    var tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || ev.target.isContentEditable) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (Date.now() - pendingG < 1500) {
      pendingG = 0;
      var to = goTarget(ev.key);
      if (to) { ev.preventDefault(); closeHelp(); window.location.assign(to); }
      return;
    }
    var focus = function (sel) {
      var box = document.querySelector(sel);
      if (box) { ev.preventDefault(); closeHelp(); setMenu(false); box.focus(); box.select && box.select(); }
    };
    switch (ev.key) {
      case "/": focus("[data-jump]"); return;
      case "f": focus("main [data-search]"); return;
      case "?": ev.preventDefault(); showHelp(); return;
      case "m": setMenu(!document.body.classList.contains("nav-open")); return;
      case "t": cycleTheme(); return;
      case "g": pendingG = Date.now(); return;
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
