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
  var greek = {alpha: "α", beta: "β", gamma: "γ", Gamma: "Γ", delta: "δ", Delta: "Δ",
    epsilon: "ε", varepsilon: "ε", zeta: "ζ", eta: "η", theta: "θ", vartheta: "ϑ", Theta: "Θ",
    iota: "ι", kappa: "κ", lambda: "λ", Lambda: "Λ", mu: "μ", nu: "ν", xi: "ξ", Xi: "Ξ",
    pi: "π", Pi: "Π", rho: "ρ", varrho: "ρ", sigma: "σ", Sigma: "Σ", tau: "τ", upsilon: "υ",
    phi: "φ", varphi: "φ", Phi: "Φ", chi: "χ", psi: "ψ", Psi: "Ψ", omega: "ω", Omega: "Ω",
    ell: "ℓ", cdot: "·", times: "×", le: "≤", leq: "≤", ge: "≥", geq: "≥", approx: "≈",
    infty: "∞", sum: "Σ", prod: "Π", top: "ᵀ", to: "→", langle: "⟨", rangle: "⟩",
    lfloor: "⌊", rfloor: "⌋", lceil: "⌈", rceil: "⌉", Vert: "‖", lVert: "‖", rVert: "‖",
    vert: "|", lvert: "|", rvert: "|", mid: "|", partial: "∂", nabla: "∇", sqrt: "√",
    ldots: "…", dots: "…", cdots: "…", neq: "≠", ne: "≠", pm: "±", in: "∈", equiv: "≡",
    propto: "∝", circ: "∘", odot: "⊙", otimes: "⊗", oplus: "⊕", sim: "∼", gets: "←",
    Rightarrow: "⇒", mapsto: "↦", forall: "∀", exists: "∃", int: "∫"};
  // Commands that only size or space what follows: dropped. Any other command keeps its name.
  var layout = {left: 1, right: 1, big: 1, Big: 1, bigg: 1, Bigg: 1, bigl: 1, bigr: 1,
    Bigl: 1, Bigr: 1, displaystyle: 1, textstyle: 1, quad: 1, qquad: 1, nonumber: 1,
    notag: 1, limits: 1};
  var styled = /\\(?:mathrm|text|textrm|texttt|textit|textbf|mathbf|mathit|mathsf|mathtt|operatorname|boldsymbol|mathcal|mathbb|vec|overbrace|underline)\s*\{([^{}]*)\}/g;
  var marks = {tilde: "\u0303", widetilde: "\u0303", hat: "\u0302", widehat: "\u0302",
    bar: "\u0304", overline: "\u0304"};
  function accent(all, name, first, rest) {  // the mark on the group's first letter: z̄_(q,i)
    return first + marks[name] + (rest || "");
  }
  function plainMath(tex) {
    var previous;
    var text = tex.replace(/(\\[A-Za-z]+)(?=\\)/g, "$1 ")      // \lfloor\mathrm{..}: two commands
      .replace(/\\begin\s*\{[pb]matrix\}/g, "(").replace(/\\end\s*\{[pb]matrix\}/g, ")")
      .replace(/\\(?:begin|end)\s*\{[^{}]*\}(?:\{[^{}]*\})?/g, " ")
      .replace(/\\\\/g, "; ").replace(/&/g, " ").replace(/\\[,;:! ]/g, " ")
      .replace(/\\\|/g, "‖").replace(/\\([{}%#_$])/g, "$1")
      .replace(/\\(tilde|widetilde|hat|widehat|bar|overline)\s*(\w)/g,
        function (all, name, letter) { return letter + marks[name]; });
    do {  // innermost groups first: \frac{q^{C}_{m}}{\sqrt{d}}
      previous = text;
      text = text.replace(styled, "$1")
        .replace(/\\(tilde|widetilde|hat|widehat|bar|overline)\s*\{(\w)([^{}]*)\}/g, accent)
        .replace(/\\underbrace\s*\{([^{}]*)\}\s*_\s*(?:\{([^{}]*)\}|\(((?:[^()]|\([^()]*\))*)\)|(\w))/g,
          function (all, body, a, b, c) { return body + " [" + (a || b || c) + "]"; })
        .replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2) ")
        .replace(/\\sqrt\s*\{([^{}]*)\}/g, "√($1)")
        .replace(/\\pmod\s*\{([^{}]*)\}/g, "(mod $1)")
        .replace(/([_^])\{([^{}]*)\}/g, function (all, mark, inner) {
          return mark + (inner.length > 1 ? "(" + inner + ")" : inner);
        });
    } while (text !== previous);
    return text
      .replace(/\\pmod\s*(\w+)/g, "(mod $1)")
      .replace(/\\[dt]?frac\s*(\w)\s*(\w)/g, "$1/$2 ")
      .replace(/\((\w+)\)\/\((\w+)\)/g, "$1/$2")
      .replace(/\\(?:mathrm|mathcal|mathbb|mathbf|mathit|boldsymbol|operatorname|vec)\s*(?=\w)/g, "")
      .replace(/\\([A-Za-z]+)/g, function (all, name) {
        return greek[name] || (layout[name] ? "" : name === "bmod" ? " mod" : " " + name);
      })
      .replace(/[{}]/g, "")
      .replace(/ {2,}/g, " ");
  }
  // Only the formulas of a page's text, between \( \) or \[ \], are rewritten: code stays as it is.
  function plainText(text) {
    return text.replace(/\\\(([\s\S]*?)\\\)|\\\[([\s\S]*?)\\\]/g, function (all, inline, display) {
      return plainMath(inline !== undefined ? inline : display);
    });
  }
  function patch() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.coursePlainMath) { return; }
    var original = Search.htmlToText;
    Search.htmlToText = function () {
      return plainText(original.apply(this, arguments));
    };
    Search.coursePlainMath = true;
  }
  window.coursePlainText = plainText;  // read by the browser test on every formula of the site
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
