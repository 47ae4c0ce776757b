// console: apply the theme chosen with the toggle (app.js) before the page
// paints, so a dark choice never flashes light. Loaded without defer in
// <head>; it only reads localStorage and sets <html data-theme>.
(function () {
  "use strict";
  try {
    var t = localStorage.getItem("console-theme");
    if (t === "dark" || t === "light") document.documentElement.setAttribute("data-theme", t);
  } catch (e) { /* storage refused: follow the system */ }
})();
