/* Presentation of the course site (added by conf.py): an inline formula wider than its line
   (on a phone, say) becomes a line of its own that scrolls sideways inside its own box, instead
   of running past the screen's edge. Re-checked when the window is resized. */
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll("article mjx-container:not([display])").forEach(function (math) {
      math.classList.remove("course-wide-math");
      var parent = math.parentElement && math.parentElement.closest("p, li, td, th, dd, div");
      if (!parent) { return; }
      var room = parent.getBoundingClientRect().right;
      if (math.getBoundingClientRect().right > room + 1) {
        math.classList.add("course-wide-math");
      }
    });
  }
  function whenTypeset() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(mark);
    } else {
      mark();
    }
  }
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(mark, 150);
  });
  document.addEventListener("toggle", function () { mark(); }, true);
  if (document.readyState === "complete") { whenTypeset(); }
  else { window.addEventListener("load", whenTypeset); }
})();
