// console: apply the theme chosen with the toggle (app.js) before the page
// paints, so a dark choice never flashes light. Loaded without defer in
// <head>; it only reads localStorage and sets <html data-theme> (and the
// fold-pending class on a phone).
(function () {
  "use strict";
  try {
    var t = localStorage.getItem("console-theme");
    if (t === "dark" || t === "light") document.documentElement.setAttribute("data-theme", t);
  } catch (e) { /* storage refused: follow the system */ }
  // On a phone app.js folds the filter forms once the page has loaded;
  // until then their content stays out of the first paint (app.css,
  // fold-pending), so the data does not jump up when they fold.
  if (window.matchMedia && window.matchMedia("(max-width: 760px)").matches) {
    document.documentElement.classList.add("fold-pending");
  }
})();
