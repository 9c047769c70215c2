"""Sphinx configuration of the course web site (`make book` builds it into _build/html).

The site renders the committed notebooks with their stored outputs (MyST-NB, no execution) in
sphinx-book-theme, and works offline: MathJax is served from the site itself, copied in from the
`django-static-mathjax` wheel (MathJax 3.2.2, installed with the course's `docs` extra), and
nothing on any page is fetched from another host.

Presentation: `_static/course.css` sizes the code column so that 88 characters (the notebooks'
line length) fit at 1280 px, wraps long printed output, and keeps every page within a phone's
width (tables and display formulas scroll inside their own box, code in a table cell is never
broken, and `_static/course.js` gives an inline formula wider than its line a scrolling line of
its own); the moving figures of `course_utils.interactive` carry their pictures and script in
the page (nothing is loaded from elsewhere); solutions fold their code and outputs together
(tag `hide-cell`); figures and equations are numbered (`numfig`); code cells get a copy button
(sphinx-copybutton); collapsed cells say what they hold (solutions "Show solution", through each
cell's `mystnb.code_prompt_show` metadata, which `tools/notebooks.py check` enforces).

Search: the English index, with one change (`HyphenatedSearch`): a hyphenated term such as
"M-RoPE" or "NTK-aware" is indexed as its parts and as one word ("mrope"), and the search page
joins a hyphenated query word the same way, so searching "M-RoPE" finds the pages that use the
term, not every page with an "m" and a "rope".
"""

from __future__ import annotations

import copy
import importlib.util
import os
import pathlib
import re
import shutil

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from sphinx.errors import ConfigError
from sphinx.search.en import SearchEnglish

project = "Positional encodings in transformers"
author = "the maintainers of the course"
copyright = ("2026, the maintainers of the course. Text and figures under CC BY 4.0, "
             "code under the MIT licence (LICENSE-CONTENT, LICENSE)")


def _repository() -> tuple[str, str]:
    """The GitHub repository the site's Binder and Colab links open, and its branch.

    Configured in one place, ``[tool.course]`` in pyproject.toml (``repository-url``,
    ``repository-branch``); the environment variables ``COURSE_REPOSITORY_URL`` and
    ``COURSE_REPOSITORY_BRANCH`` override it (the GitHub workflow sets them to the fork it runs
    in; an empty ``COURSE_REPOSITORY_URL`` means none). With no URL the pages carry no launch
    links at all, so none can be dead.
    """
    settings = tomllib.loads((pathlib.Path(__file__).parent / "pyproject.toml").read_text())
    course = settings.get("tool", {}).get("course", {})
    # Set in the environment (even to the empty string, "no repository"), the variable wins.
    url = os.environ.get("COURSE_REPOSITORY_URL", course.get("repository-url") or "").strip()
    branch = (os.environ.get("COURSE_REPOSITORY_BRANCH") or course.get("repository-branch")
              or "main").strip()
    if url and not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url.rstrip("/")):
        raise ConfigError(f"repository-url must look like https://github.com/<owner>/<repo> "
                          f"(Binder and Colab open GitHub repositories), got {url!r}")
    return url.rstrip("/"), branch


repository_url, repository_branch = _repository()

extensions = ["myst_nb", "sphinx_copybutton"]

# Only the landing page, the notation, glossary and bibliography pages and the notebooks are
# pages; everything else in the repository is not.
include_patterns = ["index.md", "notation.md", "glossary.md", "bibliography.md", "notebooks/*.ipynb"]
exclude_patterns = [
    "_build", ".venv", ".venv-oldest", "README.md", "**/.ipynb_checkpoints", "node_modules", "tests",
    "course_utils", "tools", ".ci", "_static",
]
root_doc = "index"
language = "en"

# Render the committed outputs; `make book EXECUTE=1` re-runs the notebooks first.
nb_execution_mode = "off"
# Widget outputs would load require.js and the widget manager from a CDN: never load them.
nb_ipywidgets_js = {}
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# A link to a labelled equation or a glossary term of another page, written so that it also
# opens that notebook in Jupyter ("05_rope.ipynb#equation-eq-05-rotation",
# "../glossary.md#term-RoPE"), names an id MyST does not look up (it knows headings and figures)
# and would be reported as missing; the browser test checks every such #fragment against the
# ids of the built page instead (test_every_internal_link_and_anchor_lands).
suppress_warnings = ["myst.xref_missing"]
# Collapsed cells: the default label; solutions, checks and set-up cells set their own in their
# metadata ("Show solution", "Show the check", "Show the set-up").
nb_code_prompt_show = "Show code cell {type}"
nb_code_prompt_hide = "Hide code cell {type}"

# "Figure 3" under each figure, and {numref} references to it in the text.
numfig = True
numfig_format = {"figure": "Figure %s", "table": "Table %s", "code-block": "Listing %s"}
math_numfig = True
math_eqref_format = "({number})"

# Copy buttons on code cells only (not on printed output); prompts are not copied.
copybutton_selector = "div.cell_input div.highlight pre, div.highlight-bash pre, div.highlight-python pre"
copybutton_exclude = ".linenos, .gp, .go"

# MathJax 3 from the site's own _static/mathjax (copied in by `_copy_mathjax` below).
mathjax_path = "mathjax/tex-chtml.js"
# Without the `noundefined` package an unknown macro is a TeX error (an `merror` the browser test
# finds) instead of silently shown red text.
mathjax3_config = {"tex": {"packages": {"[-]": ["noundefined"]}}}

html_theme = "sphinx_book_theme"
html_title = "Positional encodings in transformers"
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_js_files = ["course.js"]
html_favicon = "_static/favicon.svg"
html_last_updated_fmt = None
html_copy_source = True  # the download button links to _sources/notebooks/<name>.ipynb
html_sourcelink_suffix = ""
html_show_sphinx = False
# Follow the reader's light/dark preference (figures have opaque white backgrounds, so both
# read well); an unset mode makes the theme log a console error.
html_context = {"default_mode": "auto"}
html_theme_options = {
    **({"repository_url": repository_url, "repository_branch": repository_branch,
        "path_to_docs": ""} if repository_url else {}),
    "use_download_button": True,
    "use_fullscreen_button": True,
    "use_repository_button": bool(repository_url),
    "use_issues_button": False,
    "use_edit_page_button": False,
    "use_source_button": False,
    # Binder and Colab open the chapter's notebook from the configured repository; no links
    # without one.
    "launch_buttons": ({"binderhub_url": "https://mybinder.org",
                        "colab_url": "https://colab.research.google.com",
                        "notebook_interface": "jupyterlab"} if repository_url else {}),
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # The search field sits in the sidebar; without this the header holds a second search button.
    "navbar_persistent": [],
    # The copyright line once, under the article; the theme's page footer stays empty.
    "footer_content_items": ["copyright.html"],
    "footer_start": [],
    "footer_end": [],
}
html_search_language = "en"

# Parts of MathJax's es5 distribution the site needs: the TeX-to-CommonHTML bundle, its fonts,
# and the pieces it loads on demand (TeX extensions, the context menu, accessibility).
_MATHJAX_SKIP = (
    "latest.js", "mml-chtml.js", "mml-svg.js", "node-main.js", "tex-chtml-full.js",
    "tex-chtml-full-speech.js", "tex-mml-chtml.js", "tex-mml-svg.js", "tex-svg.js",
    "tex-svg-full.js", "svg", "svg.js",
)


def _mathjax_source() -> pathlib.Path:
    spec = importlib.util.find_spec("mathjax")
    root = pathlib.Path(spec.origin).parent / "static" / "mathjax" if spec and spec.origin else None
    if root is None or not (root / "es5" / "tex-chtml.js").is_file():
        raise ConfigError(
            "MathJax 3 was not found: the site serves it from the 'django-static-mathjax' package "
            "of the course's docs extra. Run `make setup` (or pip install -e '.[dev]')."
        )
    return root


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source = _mathjax_source()
    target = pathlib.Path(app.outdir) / "_static" / "mathjax"
    version = (source / "package.json").read_bytes()
    copied = target / "package.json"  # written last: a complete copy of this version
    if copied.is_file() and copied.read_bytes() == version:
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source / "es5", target, ignore=shutil.ignore_patterns(*_MATHJAX_SKIP))
    shutil.copy2(source / "LICENSE", target / "LICENSE")
    copied.write_bytes(version)


def _number_figures_per_page(app, env) -> list[str]:
    """Number the figures of every page from 1, as the caption cells in the notebooks do.

    Without a numbered toctree Sphinx counts figures across the whole site (the first figure of
    notebook 01 would be "Figure 2"). This runs after Sphinx has assigned its numbers and keeps
    their order within each page, in ``env.course_page_fignumbers``; :func:`_use_page_numbers`
    puts them in place when writing starts. Sphinx's own numbers stay in the pickled environment,
    so that the next build compares like with like, and the pages returned here are those whose
    page numbers changed: a build with nothing new rewrites no page.
    """
    previous = getattr(env, "course_page_fignumbers", {})
    pages = {}
    for docname, numbers in env.toc_fignumbers.items():
        pages[docname] = {}
        for figtype, by_id in numbers.items():
            ordered = sorted(by_id, key=lambda target: by_id[target])
            pages[docname][figtype] = {target: (index,) for index, target in enumerate(ordered, 1)}
    env.course_page_fignumbers = pages
    return sorted(d for d, numbers in pages.items() if numbers != previous.get(d))


def _use_page_numbers(app, builder) -> None:
    """Write with the per-page figure numbers of :func:`_number_figures_per_page`."""
    pages = getattr(builder.env, "course_page_fignumbers", None)
    if pages is not None:
        builder.env.toc_fignumbers = copy.deepcopy(pages)


_HYPHENS = "-\u2010\u2011"  # hyphen-minus, hyphen, non-breaking hyphen


class HyphenatedSearch(SearchEnglish):
    """English search in which a hyphenated term is also one word (see the module docstring)."""

    _word_re = re.compile(rf"\w+(?:[{_HYPHENS}]\w+)*")
    # The search page's splitter: split as Sphinx does, but join the parts of a hyphenated word
    # (a leading "-" still excludes a word). No quotes or angle brackets: this text goes into a
    # template.
    js_splitter_code = (
        "var splitQuery = function (query) {\n"
        "  return query.split(/[^\\p{Letter}\\p{Number}_\\p{Emoji_Presentation}"
        "\\u002d\\u2010\\u2011]+/gu)\n"
        "    .map(function (term) {\n"
        "      return term.replace(/([\\p{Letter}\\p{Number}_])[\\u002d\\u2010\\u2011]+"
        "(?=[\\p{Letter}\\p{Number}_])/gu, String.fromCharCode(36, 49))\n"
        "        .replace(/[\\u002d\\u2010\\u2011]+$/u, String());\n"
        "    })\n"
        "    .filter(function (term) { return term.replace(/^[\\u002d]+/u, String()); });\n"
        "};\n"
    )

    def split(self, input: str) -> list[str]:
        words = []
        for word in self._word_re.findall(input):
            parts = re.split(f"[{_HYPHENS}]", word)
            words += parts
            if len(parts) > 1:
                words.append("".join(parts))
        return words


def setup(app):
    app.add_search_language(HyphenatedSearch)
    _mathjax_source()  # fail early, before reading any page, if MathJax is missing
    app.connect("build-finished", _copy_mathjax)
    app.connect("env-get-updated", _number_figures_per_page, priority=900)
    app.connect("write-started", _use_page_numbers)
