"""Sphinx configuration of the course web site (`make book` builds it into _build/html).

The site renders the committed notebooks with their stored outputs (MyST-NB, no execution) in
sphinx-book-theme, and works offline: MathJax is served from the site itself, copied in from the
`django-static-mathjax` wheel (MathJax 3.2.2, installed with the course's `docs` extra), and
nothing on any page is fetched from another host.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil

from sphinx.errors import ConfigError

project = "Positional encodings in transformers"
author = "the course authors"

extensions = ["myst_nb"]

# Only the landing page, the notation page and the notebooks are pages; everything else in the repository is not.
include_patterns = ["index.md", "notation.md", "notebooks/*.ipynb"]
exclude_patterns = [
    "_build", ".venv", ".venv-oldest", "README.md", "**/.ipynb_checkpoints", "node_modules", "tests",
    "course_utils", "tools", ".ci",
]
root_doc = "index"
language = "en"

# Render the committed outputs; `make book EXECUTE=1` re-runs the notebooks first.
nb_execution_mode = "off"
# Widget outputs would load require.js and the widget manager from a CDN: never load them.
nb_ipywidgets_js = {}
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# MathJax 3 from the site's own _static/mathjax (copied in by `_copy_mathjax` below).
mathjax_path = "mathjax/tex-chtml.js"
# Without the `noundefined` package an unknown macro is a TeX error (an `merror` the browser test
# finds) instead of silently shown red text.
mathjax3_config = {"tex": {"packages": {"[-]": ["noundefined"]}}}

html_theme = "sphinx_book_theme"
html_title = "Positional encodings in transformers"
html_last_updated_fmt = None
html_copy_source = True  # the download button links to _sources/notebooks/<name>.ipynb
html_sourcelink_suffix = ""
html_show_sphinx = False
# Follow the reader's light/dark preference (figures have opaque white backgrounds, so both
# read well); an unset mode makes the theme log a console error.
html_context = {"default_mode": "auto"}
html_theme_options = {
    "use_download_button": True,
    "use_fullscreen_button": True,
    "use_repository_button": False,
    "use_issues_button": False,
    "use_edit_page_button": False,
    "use_source_button": False,
    "launch_buttons": {},
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}

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


def setup(app):
    _mathjax_source()  # fail early, before reading any page, if MathJax is missing
    app.connect("build-finished", _copy_mathjax)
