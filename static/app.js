// console: keyboard shortcuts and their help dialog, the phone menu, ticking
// ages, copy buttons and the theme toggle. No inline script anywhere: this
// file is all the JavaScript besides htmx, and nothing needs a script before
// the first paint (the server renders the chosen theme from its cookie).
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
      var text = sec < 0 ? "in " + fmtAge(-sec) : fmtAge(sec) + " ago";
      // An unchanged text is not written: a write lays the page out again.
      if (el.textContent !== text) el.textContent = text;
    });
    var clock = document.getElementById("refreshed");
    if (clock && clock.dataset.at) {
      clock.textContent = "refreshed " + fmtAge((Date.now() - Number(clock.dataset.at)) / 1000) + " ago";
    }
  }
  // The time pickers read typed times in the person's zone: the browser's
  // is kept in the tz cookie, which the server reads when a page does not
  // say (?tz=) which zone its times are shown in.
  function keepZone() {
    var zone;
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
    if (!zone || /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(zone) === false) return;
    if (document.cookie.split("; ").indexOf("tz=" + zone) >= 0) return;
    document.cookie = "tz=" + zone + "; path=/; max-age=31536000; samesite=lax" + (location.protocol === "https:" ? "; secure" : "");
  }
  // On a phone, list pages open on their data: the filter form folds
  // into its summary (which names the filters on), unless a refused value
  // waits to be corrected.
  function foldFilters() {
    if (!window.matchMedia || !window.matchMedia("(max-width: 760px)").matches) {
      document.documentElement.classList.remove("fold-pending");
      return;
    }
    document.querySelectorAll("details.filters-fold[open]:not([data-keep-open])").forEach(function (d) { d.open = false; });
    document.documentElement.classList.remove("fold-pending");
  }
  document.addEventListener("DOMContentLoaded", function () {
    foldFilters();
    // The zone's cookie waits until the page is idle: the first use of
    // Intl costs the time to load its data.
    if (window.requestIdleCallback) requestIdleCallback(keepZone); else setTimeout(keepZone, 1000);
    var n = Date.parse(document.body.getAttribute("data-now") || "");
    if (!isNaN(n)) skew = n - Date.now();
    var clock = document.getElementById("refreshed");
    if (clock) clock.dataset.at = String(Date.now());
    setInterval(tick, 1000);
  });
  function refreshed() {
    var clock = document.getElementById("refreshed");
    if (clock) clock.dataset.at = String(Date.now());
    tick();
  }
  document.addEventListener("htmx:afterSwap", refreshed);

  // A box that scrolls sideways (a wide table on a phone) takes keyboard
  // focus, so it can be scrolled without a mouse; one that fits does not,
  // so it adds no tab stop. The boxes app.css can make scroll sideways
  // (SCROLLERS) are measured where the page changed: all of <main> once
  // it has loaded or the window is resized, then what a swap brought in
  // and the boxes around it (a new row can widen its table). Changes are
  // gathered and measured together in the next animation frame, all boxes
  // before any is changed: a change between two measures would lay the
  // page out again for each box.
  var SCROLLERS = "pre, .table-wrap, table, .steps";
  var scrollRoots = [], scrollFrame = 0;
  function focusScrollersIn(root) {
    if (!root || !root.querySelectorAll) return;
    scrollRoots.push(root);
    if (!scrollFrame) scrollFrame = requestAnimationFrame(focusScrollers);
  }
  function focusScrollers() {
    scrollFrame = 0;
    showCurrentStep();
    var boxes = new Set();
    scrollRoots.forEach(function (root) {
      if (!root.isConnected) return;
      root.querySelectorAll(SCROLLERS).forEach(function (el) { boxes.add(el); });
      for (var el = root; el; el = el.parentElement) if (el.matches(SCROLLERS)) boxes.add(el);
    });
    scrollRoots = [];
    var on = [], off = [];
    boxes.forEach(function (el) {
      if (!el.closest("main")) return;
      var o = getComputedStyle(el).overflowX;
      var scrolls = (o === "auto" || o === "scroll") && el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) on.push(el);
      else if (!scrolls && el.dataset.scrollFocus) off.push(el);
    });
    on.forEach(function (el) {
      el.setAttribute("tabindex", "0");
      el.dataset.scrollFocus = "1";
    });
    off.forEach(function (el) {
      el.removeAttribute("tabindex");
      delete el.dataset.scrollFocus;
    });
  }
  function focusAllScrollers() { focusScrollersIn(document.querySelector("main")); }
  document.addEventListener("DOMContentLoaded", focusAllScrollers);
  document.addEventListener("htmx:load", function (ev) { if (ev.detail && ev.detail.elt !== document.body) focusScrollersIn(ev.detail.elt); });
  window.addEventListener("resize", function () {
    clearTimeout(focusAllScrollers.timer);
    focusAllScrollers.timer = setTimeout(focusAllScrollers, 200);
  });

  // Live blocks (panels, the overview's findings): an element with
  // data-refresh-url reloads itself every data-refresh-seconds (10 by
  // default), or at once with data-refresh-load (a panel's placeholder).
  // The answer replaces it: the element of the same id, or the one
  // data-refresh-select names. A refresh fails when no answer comes within
  // FETCH_TIMEOUT, its status is an error, or its element's data-status is
  // not "ok"; the element then keeps its last good content, marked "stale
  // since 06:57:26 UTC, retrying", and retries after 2, 4, 8, 16, then every
  // 30 seconds, until a good answer replaces it. An element that never had
  // good content shows the failed answer instead (the panel's title and
  // what went wrong) when it is one.
  var FETCH_TIMEOUT = 12000, BACKOFF_MAX = 30;
  function liveState(el) {
    if (!el._live) el._live = { failures: 0, goodAt: 0, timer: 0, started: false };
    return el._live;
  }
  function liveEvery(el) {
    var n = Number(el.getAttribute("data-refresh-seconds"));
    return n > 0 ? n : 10;
  }
  function backoff(failures) { return Math.min(BACKOFF_MAX, Math.pow(2, Math.max(1, failures))); }
  function schedule(el, seconds) {
    var st = liveState(el);
    clearTimeout(st.timer);
    st.timer = setTimeout(function () { refreshLive(el); }, seconds * 1000);
  }
  function startLive(root) {
    if (!root || !root.querySelectorAll) return;
    var els = Array.prototype.slice.call(root.querySelectorAll("[data-refresh-url]"));
    if (root.hasAttribute && root.hasAttribute("data-refresh-url")) els.push(root);
    els.forEach(function (el) {
      var st = liveState(el);
      if (st.started) return;
      st.started = true;
      if (el.hasAttribute("data-refresh-load")) { refreshLive(el); return; }
      if ((el.getAttribute("data-status") || "ok") === "ok") {
        st.goodAt = Date.now() + skew;
        schedule(el, liveEvery(el));
      } else {
        st.failures = 1;
        schedule(el, backoff(st.failures));
      }
    });
  }
  // pickLive finds, in an answer's HTML, the element that replaces el.
  function pickLive(body, el) {
    var t = document.createElement("template");
    t.innerHTML = body;
    var sel = el.getAttribute("data-refresh-select");
    if (sel) return t.content.querySelector(sel);
    if (el.id) {
      var same = t.content.getElementById(el.id);
      if (same) return same;
    }
    return null;
  }
  // A hidden tab (another tab in front, a minimised window) does not poll:
  // its refreshes wait in pausedLive and all run at once when it is shown.
  var pausedLive = [], statusPaused = false;
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) return;
    var els = pausedLive;
    pausedLive = [];
    els.forEach(refreshLive);
    if (statusPaused) { statusPaused = false; checkDatabase(); }
  });
  function refreshLive(el) {
    if (!el.isConnected || !el.hasAttribute("data-refresh-url")) return;
    if (document.hidden) {
      if (pausedLive.indexOf(el) < 0) pausedLive.push(el);
      return;
    }
    var ctrl = new AbortController();
    var timer = setTimeout(function () { ctrl.abort(); }, FETCH_TIMEOUT);
    fetch(el.getAttribute("data-refresh-url"), {
      headers: { "HX-Request": "true" }, credentials: "same-origin", cache: "no-store", signal: ctrl.signal
    }).then(function (resp) {
      if (resp.status === 401) {
        window.location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
        return null;
      }
      return resp.text().then(function (body) { return { resp: resp, body: body }; });
    }).then(function (r) {
      clearTimeout(timer);
      if (!r) return;
      var fresh = pickLive(r.body, el);
      var status = fresh ? (fresh.getAttribute("data-status") || "ok") : "";
      if (r.resp.ok && status === "ok") { liveGood(el, fresh); return; }
      var alert = fresh && fresh.querySelector("[role=alert]");
      liveFailed(el, fresh, alert ? alert.textContent.trim() : "the console answered " + r.resp.status);
    }).catch(function () {
      clearTimeout(timer);
      liveFailed(el, null, "no answer within " + FETCH_TIMEOUT / 1000 + "s");
    });
  }
  function swapLive(el, fresh, st) {
    st.started = true;
    fresh._live = st;
    el.replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    refreshed();
    focusScrollersIn(fresh);
  }
  function liveGood(el, fresh) {
    var st = liveState(el);
    clearTimeout(st.timer);
    st.failures = 0;
    st.goodAt = Date.now() + skew;
    swapLive(el, fresh, st);
    schedule(fresh, liveEvery(fresh));
  }
  function liveFailed(el, fresh, reason) {
    var st = liveState(el);
    clearTimeout(st.timer);
    st.failures++;
    var target = el;
    if (!st.goodAt && fresh) {
      swapLive(el, fresh, st);
      target = fresh;
    }
    markStale(target, st, reason);
    schedule(target, backoff(st.failures));
    checkDatabaseSoon();
  }
  function hhmmss(ms) { return new Date(ms).toISOString().substring(11, 19); }
  function markStale(el, st, reason) {
    var host = el.querySelector("header") || el;
    var mark = host.querySelector(".stale-mark");
    if (!mark) {
      mark = document.createElement("span");
      mark.className = "stale-mark";
      mark.setAttribute("data-testid", "stale");
      mark.setAttribute("role", "status");
      var h = host.querySelector("h2");
      if (h) h.insertAdjacentElement("afterend", mark); else host.prepend(mark);
    }
    mark.textContent = st.goodAt ? "stale since " + hhmmss(st.goodAt) + " UTC, retrying" : "no data yet, retrying";
    mark.title = reason + "; next try in " + backoff(st.failures) + "s";
    el.setAttribute("data-stale", "");
  }

  // The banner under the top bar: shown while GET /status/database says
  // the database does not answer ("Database not answering for 12s", counted
  // from when it stopped), cleared when it answers. Pages poll it every 10
  // seconds, every 2 while the database is down, and at once when a live
  // block fails.
  var statusTimer = 0, statusDue = 0, downSince = 0;
  function banner() { return document.getElementById("db-banner"); }
  function scheduleStatus(seconds) {
    clearTimeout(statusTimer);
    statusDue = Date.now() + seconds * 1000;
    statusTimer = setTimeout(checkDatabase, seconds * 1000);
  }
  function checkDatabaseSoon() {
    if (banner() && statusDue - Date.now() > 500) scheduleStatus(0);
  }
  function showBanner() {
    var b = banner();
    if (!b) return;
    if (downSince) {
      b.textContent = "Database not answering for " + fmtAge((Date.now() + skew - downSince) / 1000);
      b.hidden = false;
    } else {
      b.hidden = true;
    }
  }
  function checkDatabase() {
    statusDue = 0;
    if (document.hidden) { statusPaused = true; return; }
    var ctrl = new AbortController();
    var timer = setTimeout(function () { ctrl.abort(); }, 5000);
    fetch("/status/database", { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store", signal: ctrl.signal })
      .then(function (resp) { return resp.ok ? resp.json() : null; })
      .then(function (st) {
        clearTimeout(timer);
        if (st) {
          downSince = st.answering ? 0 : (Date.parse(st.since) || Date.now() + skew);
          showBanner();
        }
        scheduleStatus(downSince ? 2 : 10);
      })
      .catch(function () { clearTimeout(timer); scheduleStatus(2); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var b = banner();
    if (!b) return;
    var since = Date.parse(b.getAttribute("data-since") || "");
    if (!isNaN(since) && !b.hidden) downSince = since;
    setInterval(showBanner, 1000);
    scheduleStatus(downSince ? 2 : 10);
  });
  document.addEventListener("DOMContentLoaded", function () { startLive(document.body); });
  document.addEventListener("htmx:load", function (ev) { startLive(ev.detail && ev.detail.elt); });

  // Time travel: on a page in the past, the time bar's data-travel holds
  // the choice (at=..., window=...); links to the other pages that honour
  // it (data-travel-paths, "/" alone being the overview) carry it, so
  // moving between evidence pages stays in the past. The time bar's own
  // links (Live, the quick picks) and links that pick a time keep theirs.
  function travel() { return document.querySelector("[data-travel]"); }
  function carries(a, bar) {
    if (!a.getAttribute("href") || a.closest(".timebar") || a.origin !== location.origin) return false;
    var p = a.pathname;
    var ok = (bar.getAttribute("data-travel-paths") || "").split(" ").some(function (pre) {
      if (!pre) return false;
      if (pre === "/") return p === "/";
      if (pre.charAt(pre.length - 1) === "/") return p.indexOf(pre) === 0;
      return p === pre || p.indexOf(pre + "/") === 0;
    });
    if (!ok) return false;
    var q = new URLSearchParams(a.search);
    return !q.has("at") && !q.has("window") && !q.has("from") && !q.has("to");
  }
  function carryTravel(root) {
    var bar = travel();
    if (!bar || !root || !root.querySelectorAll) return;
    var extra = new URLSearchParams(bar.getAttribute("data-travel"));
    root.querySelectorAll("a[href]").forEach(function (a) {
      if (!carries(a, bar)) return;
      var q = new URLSearchParams(a.search);
      extra.forEach(function (v, k) { q.set(k, v); });
      a.setAttribute("href", a.pathname + "?" + q.toString() + a.hash);
    });
  }
  document.addEventListener("DOMContentLoaded", function () { carryTravel(document.body); });
  document.addEventListener("htmx:load", function (ev) { carryTravel(ev.detail && ev.detail.elt); });
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("a[href]");
    if (a) carryTravel(a.parentNode || a);
  }, true);

  // Charts: the readout under a sparkline shows the value of the point
  // under the pointer (each point's slice, rect.hit, carries it), and the
  // latest value otherwise.
  function readout(el) {
    var fig = el.closest && el.closest("figure.chart");
    return fig && fig.querySelector(".readout");
  }
  document.addEventListener("mouseover", function (ev) {
    var hit = ev.target.closest && ev.target.closest("rect.hit");
    var out = hit && readout(hit);
    if (!out) return;
    out.textContent = hit.getAttribute("data-value");
    out.classList.add("hovered");
  });
  document.addEventListener("mouseout", function (ev) {
    var hit = ev.target.closest && ev.target.closest("rect.hit");
    var out = hit && readout(hit);
    if (!out || (ev.relatedTarget && ev.relatedTarget.closest && ev.relatedTarget.closest("rect.hit") && readout(ev.relatedTarget) === out)) return;
    out.textContent = out.getAttribute("data-latest");
    out.classList.remove("hovered");
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
  // choice is kept in the console-theme cookie, which the server renders
  // as <html data-theme> on every page.
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
  function applyTheme(t) {
    if (t === "system") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.setAttribute("data-theme", t);
    document.cookie = "console-theme=" + (t === "system" ? "; max-age=0" : t + "; max-age=31536000") +
      "; path=/; samesite=lax" + (location.protocol === "https:" ? "; secure" : "");
  }
  function cycleTheme() {
    applyTheme(themes[(themes.indexOf(currentTheme()) + 1) % themes.length]);
    showTheme();
  }
  // A choice an older console kept in localStorage moves to the cookie.
  function moveStoredTheme() {
    var t;
    try { t = localStorage.getItem("console-theme"); localStorage.removeItem("console-theme"); } catch (e) { return; }
    if ((t === "dark" || t === "light") && !/(^|; )console-theme=/.test(document.cookie)) applyTheme(t);
  }
  document.addEventListener("DOMContentLoaded", function () { moveStoredTheme(); showTheme(); });

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

  // The runbook's step navigation scrolls sideways on a phone: bring the
  // current step into it, once, with the first measure of the scrolling
  // boxes (focusScrollers), so it costs no layout of its own.
  var stepShown = false;
  function showCurrentStep() {
    if (stepShown) return;
    stepShown = true;
    var currentStep = document.querySelector('.steps [aria-current="step"]');
    if (currentStep && currentStep.parentElement.scrollWidth > currentStep.parentElement.clientWidth) {
      currentStep.parentElement.scrollLeft = currentStep.offsetLeft - currentStep.parentElement.offsetLeft - 8;
    }
  }
})();
