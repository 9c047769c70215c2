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

/* Search results: a snippet is the page's text around the word found, and a formula's text is
   its TeX source until MathJax has run, which it has not on the search page. Show formulas in
   snippets as plain text: delimiters dropped, \mathrm{rh} as rh, \theta as θ. */
(function () {
  "use strict";
  var greek = {alpha: "α", beta: "β", gamma: "γ", delta: "δ", Delta: "Δ", epsilon: "ε",
    theta: "θ", lambda: "λ", mu: "μ", pi: "π", rho: "ρ", sigma: "σ", tau: "τ", phi: "φ",
    omega: "ω", ell: "ℓ", cdot: "·", times: "×", le: "≤", leq: "≤", ge: "≥", geq: "≥",
    approx: "≈", infty: "∞", sum: "Σ", top: "T", to: "→", langle: "⟨", rangle: "⟩",
    ldots: "…", dots: "…", cdots: "…", neq: "≠", pm: "±", in: "∈", mid: "|", Vert: "‖"};
  // Names kept as words (functions); any other command (\big, \left, \overline, ...) is dropped.
  var words = {ln: 1, log: 1, exp: 1, sin: 1, cos: 1, max: 1, min: 1, arg: 1, det: 1,
    Re: 1, Im: 1, mod: 1, softmax: 1};
  var styled = /\\(?:mathrm|text|textrm|mathbf|mathit|operatorname|boldsymbol|mathcal|overline|bar|hat|tilde|vec)\s*\{([^{}]*)\}/g;
  function plainMath(text) {
    var previous;
    text = text.replace(/\\[()[\]]/g, "").replace(/\$/g, "").replace(/\\[,;:! ]/g, " ");
    do {  // innermost first: \frac{\mathrm{a}}{b}
      previous = text;
      text = text.replace(styled, "$1").replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "$1/$2");
    } while (text !== previous);
    return text
      .replace(/\\(?:mathrm|overline|bar|hat)\s+/g, "")
      .replace(/\\([A-Za-z]+)/g, function (all, name) {
        return greek[name] || (words[name] ? name : "");
      })
      .replace(/\\/g, "")
      .replace(/[{}]/g, "");
  }
  function patch() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.coursePlainMath) { return; }
    var original = Search.htmlToText;
    Search.htmlToText = function () {
      return plainMath(original.apply(this, arguments));
    };
    Search.coursePlainMath = true;
  }
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();

/* The self-check questions' script (jupyterquiz) reads MathJax.version[0] half a second after
   the page starts; on a slow phone MathJax (deferred) may not have replaced its configuration
   object by then. An empty version (falsy, so MathJax still reads the object as its
   configuration) keeps that read from failing; the questions hold no TeX to typeset. */
if (window.MathJax && window.MathJax.version === undefined) {
  window.MathJax.version = "";
}
