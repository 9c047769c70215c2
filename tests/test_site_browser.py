"""The course web site, opened page by page in headless Chromium.

The site in ``_build/html`` (built by ``make book``; rebuilt here first if it is missing or older
than its sources) is served on 127.0.0.1 and every page is loaded in a real browser driven by
Playwright. The site must work offline: no request may leave the local server. On each page MathJax
typesets every formula without errors, every image loads, nothing fails or logs an error, and every
same-site link answers 200. Figure captions and alt text from the notebooks' cell metadata, the
collapsed solutions ("Show solution"), set-up and check cells, the notebook download and the
offline search are checked too.

Presentation, on every page: at 1280 px at most 5% of the code cells and printed outputs scroll
sideways (the column fits the notebooks' 88 characters) and no display equation is clipped; every
notebook figure shows its smallest text at 9 px or more and has at least 1.5 image pixels per CSS
pixel (sharp on high-resolution screens); at 390 px (a phone) no page is wider than the screen,
no formula, table, code block or figure runs past its edge without a box of its own that scrolls
it, no printed output is wrapped (tables keep their columns), no identifier in a table cell is
broken across lines, and no page logs a console error at
either width. An unopened solution shows neither its code nor its output. Every same-site link
names a file that exists and its #fragment an id on that page (checked on the built HTML). The
landing page lists each chapter once, the copyright line shows once, searching a hyphenated
term (M-RoPE) finds its chapter first, and every moving figure (``course_utils.interactive``)
shows a new picture for each value of each slider. Two checks read the sources only: each
chapter is named in the glossary and the bibliography, and no formula holds a literal ``\\_``. The site has copy
buttons on code, numbered figures, links between chapters and to the notation page, a glossary
and a bibliography whose entries link to the papers. Screenshots of the landing page and a notebook page, at 1280 px and
at 390 px, go to ``_build/screenshots/``.

Needs Chromium or Chrome (Playwright's own browser download is not used): the program named by
``COURSE_CHROMIUM`` or ``CHROME_BIN`` if set, else the first of ``chromium``, ``chromium-browser``,
``google-chrome``, ``google-chrome-stable`` on ``PATH``, else Chrome's or Chromium's usual place on
macOS. Without one the test is skipped with a message that says what was tried, except under
``CI=true``, where it fails.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SITE_SOURCES = [ROOT / "conf.py", ROOT / "index.md", ROOT / "notation.md", ROOT / "glossary.md",
                ROOT / "bibliography.md", ROOT / "_static" / "course.css",
                ROOT / "_static" / "course.js", *NOTEBOOKS]
CHROMIUM_VARIABLES = ("COURSE_CHROMIUM", "CHROME_BIN")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_MACOS = ("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
                  "/Applications/Chromium.app/Contents/MacOS/Chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # Containers (a GitHub job in a Docker image) give /dev/shm only 64 MB.
    "--disable-dev-shm-usage",
]
SEARCH_WORD = "rotary"  # on the landing page, and the subject of notebook 05
TIMEOUT_MS = 30_000
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
MAX_SCROLLING_SHARE = 0.05  # of the code cells and printed outputs on a page
MIN_FIGURE_TEXT_PX = 9.0
MIN_PIXEL_DENSITY = 1.5  # image pixels per CSS pixel as displayed
MAX_SCREENS = 18  # a chapter's length at 1280x900, folds closed (tools/page_heights.py)
PROMPTS = {"solution": "Show solution", "setup": "Show the set-up", "check": "Show the check"}


def find_chromium() -> tuple[str | None, str]:
    """(path of the Chromium or Chrome to use or None, why none was found).

    An environment variable names it (``COURSE_CHROMIUM``, then ``CHROME_BIN``); a variable
    that names no program is an error rather than a silent fallback. Otherwise the first of
    ``CHROMIUM_NAMES`` on ``PATH``, then the usual macOS application paths.
    """
    for variable in CHROMIUM_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if value:
            found = shutil.which(value)
            if found is None:
                return None, f"{variable}={value!r} names no executable program"
            return found, ""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found, ""
    for path in CHROMIUM_MACOS:
        if os.access(path, os.X_OK):
            return path, ""
    return None, ("no Chromium or Chrome was found: tried " + ", ".join(CHROMIUM_VARIABLES)
                  + " (unset), " + ", ".join(CHROMIUM_NAMES) + " on PATH and "
                  + " and ".join(CHROMIUM_MACOS) + ". Install one (Debian/Ubuntu: `sudo apt-get "
                  "install chromium`) or set COURSE_CHROMIUM=/path/to/chrome")


def _require_browser():
    """Return Playwright's sync API and the browser's path, or skip (fail under CI=true)."""
    problem = None
    chromium = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem = "the playwright package is not installed (run `make setup`)"
    if problem is None:
        chromium, problem = find_chromium()
        problem = problem or None
    if problem is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the site's browser test must run in CI, but {problem}")
        pytest.skip(f"browser test of the web site skipped: {problem}")
    return sync_playwright, chromium


def test_the_browser_is_found_through_a_variable_or_path_and_a_miss_says_what_was_tried(
        tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "google-chrome"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM_MACOS", ())
    monkeypatch.setenv("PATH", str(bin_dir))
    for variable in CHROMIUM_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    assert find_chromium() == (str(fake), "")  # on PATH under a later name
    other = tmp_path / "my-chrome"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    monkeypatch.setenv("CHROME_BIN", str(other))
    assert find_chromium() == (str(other), "")  # the variable wins over PATH
    monkeypatch.setenv("COURSE_CHROMIUM", str(tmp_path / "missing"))
    path, why = find_chromium()
    assert path is None and "COURSE_CHROMIUM=" in why and "names no executable" in why
    monkeypatch.delenv("COURSE_CHROMIUM")
    monkeypatch.delenv("CHROME_BIN")
    fake.unlink()
    path, why = find_chromium()
    assert path is None and "chromium-browser" in why and "apt-get install chromium" in why


def _site_is_stale() -> bool:
    pages = list(SITE.glob("*.html")) + list(SITE.glob("notebooks/*.html"))
    if not (SITE / "index.html").is_file() or not pages:
        return True
    newest_source = max(path.stat().st_mtime for path in SITE_SOURCES if path.exists())
    return newest_source > max(page.stat().st_mtime for page in pages)


def _page_name(notebook: Path) -> str:
    return f"notebooks/{notebook.stem}.html"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A browser may close a connection before a file is sent (a cancelled prefetch): not
        # an error of the site. Anything else is reported as usual.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def playwright_api():
    return _require_browser()


@pytest.fixture(scope="module")
def site(playwright_api) -> Path:
    if _site_is_stale():
        subprocess.run(["make", "--no-print-directory", "book"], cwd=ROOT, check=True)
    return SITE


@pytest.fixture(scope="module")
def base_url(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(playwright_api):
    api, executable = playwright_api
    with api() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()


class _Visitor:
    """A browser context that records every request, failure and console error."""

    def __init__(self, browser, base_url, viewport=None, **context_options):
        self.origin = base_url.rstrip("/")
        self.context = browser.new_context(viewport=viewport or DESKTOP, **context_options)
        self.context.set_default_timeout(TIMEOUT_MS)
        self.off_host, self.failed, self.errors = [], [], []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        self.page.on("requestfailed", self._request_failed)
        self.page.on("response", self._response)

    def _route(self, route):
        url = route.request.url
        if url.startswith(("data:", "blob:", "about:")) or url.startswith(self.origin + "/"):
            route.continue_()
        else:
            self.off_host.append(url)
            route.abort()

    def _request_failed(self, request):
        # The browser's own favicon fetch is cancelled (ERR_ABORTED) when the next page is
        # opened before it ends: not a failure of the site. A missing favicon still fails
        # through its HTTP status (_response).
        if "favicon" in request.url.rsplit("/", 1)[-1] and "ERR_ABORTED" in str(request.failure):
            return
        self.failed.append(f"{request.url} ({request.failure})")

    def _console(self, message):
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def _response(self, response):
        if response.status >= 400:
            self.failed.append(f"{response.url} (HTTP {response.status})")

    def open(self, path):
        self.page.goto(f"{self.origin}/{path}", wait_until="load")
        self.page.wait_for_load_state("networkidle")
        # MathJax typesets after the page has loaded; wait for it and for its web fonts.
        self.page.evaluate(
            "async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise)"
            " { await MathJax.startup.promise; } await document.fonts.ready; }"
        )
        self.page.wait_for_load_state("networkidle")
        return self.page

    def close(self):
        self.context.close()


_PAGE_FACTS = """() => {
  const body = document.querySelector('article') || document.body;
  const maths = [...body.querySelectorAll('.math')];
  const abs = (href) => new URL(href, document.baseURI).href;
  return {
    title: document.title,
    maths: maths.length,
    typeset: maths.filter(m => m.querySelector('mjx-container')).length,
    untypeset: maths.filter(m => !m.querySelector('mjx-container'))
                    .map(m => m.textContent.trim().slice(0, 80)),
    mathErrors: [...document.querySelectorAll('mjx-merror, merror, [data-mjx-error]')]
                    .map(e => e.getAttribute('data-mjx-error') || e.textContent.slice(0, 80)),
    mathjaxLoaded: !!(window.MathJax && window.MathJax.version),
    images: [...document.images].map(img => ({
      src: img.currentSrc || img.src, alt: img.getAttribute('alt'),
      loaded: img.complete && img.naturalWidth > 0,
      figure: (img.closest('figure') || {id: ''}).id,
      inArticle: body.contains(img)})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    articleLinks: [...body.querySelectorAll('a[href]')].map(a => a.href),
    figures: [...body.querySelectorAll('figure')].map(f => ({
      id: f.id,
      caption: (f.querySelector('figcaption') || {textContent: ''}).textContent.trim(),
      alts: [...f.querySelectorAll('img')].map(i => i.getAttribute('alt'))})),
    hidden: [...body.querySelectorAll('details.above-input')].map(d => ({
      open: d.open,
      codeVisible: [...d.querySelectorAll('.cell_input pre')].some(p => p.checkVisibility()),
      outputVisible: [...(d.closest('div.cell') || d).querySelectorAll('.cell_output')]
                       .some(o => o.checkVisibility() && o.textContent.trim()),
      summary: d.querySelector('summary').innerText.trim()})),
    copyrights: document.querySelectorAll('.copyright').length,
    explorers: [...body.querySelectorAll('.course-explorer')].map(e => e.id),
    copyButtons: document.querySelectorAll('.cell_input button.copybtn').length,
    captionNumbers: [...body.querySelectorAll('figcaption .caption-number')]
                      .map(e => e.textContent.trim()),
    downloads: [...document.querySelectorAll('a[href]')].map(a => abs(a.getAttribute('href')))
                  .filter(h => h.includes('/_sources/')),
    // The page's length as a reader first sees it: every fold closed (as loaded).
    height: document.documentElement.scrollHeight,
    viewportHeight: window.innerHeight,
  };
}"""


def _site_pages(site: Path) -> list[str]:
    return sorted(
        path.relative_to(site).as_posix() for path in site.rglob("*.html")
        if not path.relative_to(site).parts[0].startswith(("_", "."))
    )


# Layout, measured with every collapsed cell opened (its code must fit too), then closed again.
_LAYOUT = """() => {
  const body = document.querySelector('article') || document.body;
  const closed = [...body.querySelectorAll('details:not([open])')];
  closed.forEach(d => { d.open = true; });
  const scrolls = e => e.scrollWidth > e.clientWidth + 1;
  const label = e => e.textContent.trim().split('\\n')[0].slice(0, 70);
  const blocks = [...body.querySelectorAll('.cell_input pre, .cell_output pre')]
                   .filter(e => e.checkVisibility());
  const bodyRight = body.getBoundingClientRect().right;
  const equations = [...body.querySelectorAll('mjx-container[display="true"]')];
  const result = {
    blocks: blocks.length,
    scrolling: blocks.filter(scrolls).map(label),
    clippedEquations: equations.filter(m => scrolls(m)
        || m.getBoundingClientRect().right > bodyRight + 1)
        .map(m => (m.closest('.math') || m).textContent.trim().slice(0, 70)),
    images: [...body.querySelectorAll('img')].map(img => ({
      src: img.currentSrc || img.src, shown: img.getBoundingClientRect().width,
      natural: img.naturalWidth})),
    pageWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    // Formulas, tables, code, figures that reach past the screen's right edge without a box of
    // their own (inside the article) that scrolls them sideways.
    overflowing: [...body.querySelectorAll(
        'mjx-container, table, pre, img, code, figure, .course-explorer')]
      .filter(e => e.checkVisibility() && e.getBoundingClientRect().right > window.innerWidth + 1)
      .filter(e => { for (let box = e.parentElement; box && body.contains(box);
                          box = box.parentElement) {
                       const overflow = getComputedStyle(box).overflowX;
                       if (overflow === 'auto' || overflow === 'scroll') {
                         return box.getBoundingClientRect().right > window.innerWidth + 1; } }
                     return true; })
      .map(e => `${e.tagName.toLowerCase()}: ${label(e)}`),
    // Printed output (a table, a path) whose lines the browser wrapped: more rendered lines
    // than printed ones.
    wrappedOutputs: [...body.querySelectorAll('.cell_output pre')]
      .filter(e => e.checkVisibility())
      .filter(e => { const cs = getComputedStyle(e);
                     const lines = e.textContent.replace(/\\n$/, '').split('\\n').length;
                     const inner = e.clientHeight - parseFloat(cs.paddingTop)
                                   - parseFloat(cs.paddingBottom);
                     return inner > (lines + 0.5) * parseFloat(cs.lineHeight); })
      .map(label),
    // Code in a table cell that the browser broke across lines (an identifier split).
    splitInTables: [...body.querySelectorAll('td code, th code')]
      .filter(e => e.checkVisibility() && e.getClientRects().length > 1
                   && e.textContent.trim().indexOf(' ') < 0)
      .map(label),
  };
  closed.forEach(d => { d.open = false; });
  return result;
}"""


@pytest.fixture(scope="module")
def visits(site, base_url, browser):
    """Load every page once at 1280 px; return ``{page: facts}`` and the visitor's records."""
    visitor = _Visitor(browser, base_url)
    facts = {}
    try:
        for path in _site_pages(site):
            page = visitor.open(path)
            facts[path] = page.evaluate(_PAGE_FACTS)
            facts[path]["layout"] = page.evaluate(_LAYOUT)
        yield facts, visitor
    finally:
        visitor.close()


@pytest.fixture(scope="module")
def phone_visits(site, base_url, browser):
    """Load every page once on a 390 px wide phone screen; return ``{page: layout}``, visitor."""
    visitor = _Visitor(browser, base_url, viewport=PHONE, is_mobile=True, has_touch=True)
    facts = {}
    try:
        for path in _site_pages(site):
            facts[path] = visitor.open(path).evaluate(_LAYOUT)
        yield facts, visitor
    finally:
        visitor.close()


def _showcase_notebook() -> Path:
    """The RoPE notebook (math, figures, a collapsed solution), else the last notebook."""
    return next((nb for nb in NOTEBOOKS if nb.name.startswith("05_")), NOTEBOOKS[-1])


def _notebook_cells(notebook: Path):
    return [cell for cell in json.loads(notebook.read_text())["cells"]
            if cell["cell_type"] == "code"]


def _caption_words(caption: str) -> list[str]:
    """Plain words of a MyST caption: math, TeX commands and link targets removed."""
    caption = re.sub(r"\$[^$]*\$|\\[A-Za-z]+|\]\([^)]*\)", " ", caption)
    return re.findall(r"[A-Za-z]{4,}", caption)


def _make_id(name: str) -> str:
    from docutils.nodes import make_id

    return make_id(name)


def test_every_notebook_has_a_page(visits):
    facts, _ = visits
    assert "index.html" in facts and "search.html" in facts
    missing = [_page_name(nb) for nb in NOTEBOOKS if _page_name(nb) not in facts]
    assert not missing, f"notebooks without a page on the site: {missing}"
    landing = {urldefrag(link).url for link in facts["index.html"]["links"]}
    unlinked = [_page_name(nb) for nb in NOTEBOOKS
                if not any(link.endswith("/" + _page_name(nb)) for link in landing)]
    assert not unlinked, f"pages not linked from the landing page: {unlinked}"


def test_no_request_leaves_the_local_server(visits):
    _, visitor = visits
    assert not visitor.off_host, (
        "the site must work offline, but pages requested other hosts: "
        f"{sorted(set(visitor.off_host))}")


def test_no_failed_request_and_no_console_error(visits):
    _, visitor = visits
    assert not visitor.failed, f"failed requests: {sorted(set(visitor.failed))}"
    assert not visitor.errors, f"errors in the browser console: {visitor.errors}"


def test_mathjax_typesets_every_formula_without_errors(visits):
    facts, _ = visits
    with_math = {path: f for path, f in facts.items() if f["maths"]}
    assert "index.html" in with_math, "the landing page's formula was not found"
    for path, f in with_math.items():
        assert f["mathjaxLoaded"], f"{path}: MathJax did not load"
        assert f["typeset"] == f["maths"], (
            f"{path}: MathJax typeset {f['typeset']} of {f['maths']} formulas; "
            f"not typeset: {f['untypeset'][:5]}")
        assert not f["mathErrors"], f"{path}: MathJax reported errors: {f['mathErrors'][:5]}"


def test_every_image_loads(visits):
    facts, _ = visits
    broken = [(path, image["src"]) for path, f in facts.items()
              for image in f["images"] if not image["loaded"]]
    assert not broken, f"images that did not load: {broken}"


def test_every_notebook_figure_has_alt_text(visits):
    facts, _ = visits
    for notebook in NOTEBOOKS:
        images = [i for i in facts[_page_name(notebook)]["images"] if i["inArticle"]]
        bad = [image["figure"] or image["src"].rsplit("/", 1)[-1] for image in images
               if not image["alt"] or "_images/" in image["alt"]
               or image["alt"].lower().endswith((".png", ".svg", ".jpg"))]
        assert not bad, (
            f"{notebook.name}: figures without alt text: {bad}; give each figure's code cell the "
            'metadata {"mystnb": {"figure": {"caption": ..., "name": ...}, "image": {"alt": ...}}}')


def test_figure_captions_and_alt_text_from_cell_metadata_survive(visits):
    facts, _ = visits
    for notebook in NOTEBOOKS:
        figures = {f["id"]: f for f in facts[_page_name(notebook)]["figures"]}
        for cell in _notebook_cells(notebook):
            meta = cell["metadata"].get("mystnb", {})
            figure, image = meta.get("figure", {}), meta.get("image", {})
            if not figure.get("name"):
                continue
            fig_id = _make_id(figure["name"])
            assert fig_id in figures, f"{notebook.name}: no figure with id {fig_id!r} on its page"
            shown = figures[fig_id]
            words = _caption_words(figure.get("caption", ""))
            assert shown["caption"] and all(word in shown["caption"] for word in words), (
                f"{notebook.name}: figure {fig_id!r} caption {shown['caption']!r} does not show "
                f"the metadata caption {figure.get('caption')!r}")
            if image.get("alt"):
                assert image["alt"] in shown["alts"], (
                    f"{notebook.name}: figure {fig_id!r} lost its alt text {image['alt']!r}")


def _prompt_of(cell) -> str:
    return cell["metadata"].get("mystnb", {}).get("code_prompt_show", "Show code cell {type}")


def _folded(cell) -> str | None:
    """How MyST-NB folds a cell: "source" (hide-input), "content" (hide-cell), or None."""
    tags = cell["metadata"].get("tags", [])
    return "content" if "hide-cell" in tags else "source" if "hide-input" in tags else None


def test_folded_cells_are_collapsed_and_say_what_they_hold(visits):
    facts, _ = visits
    for notebook in NOTEBOOKS:
        tagged = [cell for cell in _notebook_cells(notebook) if _folded(cell)]
        hidden = facts[_page_name(notebook)]["hidden"]
        assert len(hidden) == len(tagged), (
            f"{notebook.name}: {len(tagged)} cells tagged hide-input or hide-cell but "
            f"{len(hidden)} collapsed blocks")
        for cell, block in zip(tagged, hidden, strict=True):
            assert not block["open"] and not block["codeVisible"], (
                f"{notebook.name}: a folded cell's source is shown expanded")
            assert block["summary"] == _prompt_of(cell).replace("{type}", _folded(cell)), (
                f"{notebook.name}: a collapsed cell says {block['summary']!r}")
            if "".join(cell["source"]).startswith("# Solution to Exercise"):
                assert block["summary"] == PROMPTS["solution"], (
                    f"{notebook.name}: a solution's toggle says {block['summary']!r}")


def test_an_unopened_solution_shows_neither_code_nor_output(visits):
    """Folded means hidden: a solution's printed answer folds with its code (tag hide-cell);
    set-up and check cells fold their code only, and their outputs stay in view."""
    facts, _ = visits
    for notebook in NOTEBOOKS:
        tagged = [cell for cell in _notebook_cells(notebook) if _folded(cell)]
        hidden = facts[_page_name(notebook)]["hidden"]
        for cell, block in zip(tagged, hidden, strict=False):
            first = "".join(cell["source"]).splitlines()[0]
            if first.startswith("# Solution to Exercise"):
                assert not block["outputVisible"], (
                    f"{notebook.name}: {first!r} is folded but its output is shown (tag the "
                    "cell hide-cell: `tools/notebooks.py retag-solutions`)")
            elif cell.get("outputs") and _prompt_of(cell) in (PROMPTS["setup"], PROMPTS["check"]):
                shows_text = any(o.get("text") or o.get("data", {}).get("text/plain")
                                 for o in cell["outputs"])
                assert block["outputVisible"] or not shows_text, (
                    f"{notebook.name}: the output of a {_prompt_of(cell)!r} cell is hidden")


def test_solutions_open_with_a_neutral_comment(visits):
    """A collapsed cell in Jupyter still shows its first line: it must not give the answer."""
    for notebook in NOTEBOOKS:
        if notebook.name.startswith("00_"):
            continue
        solutions = [cell for cell in _notebook_cells(notebook)
                     if _prompt_of(cell) == PROMPTS["solution"]]
        assert solutions, f"{notebook.name}: no solution cells found"
        for cell in solutions:
            first = "".join(cell["source"]).splitlines()[0]
            assert re.fullmatch(r"# Solution to Exercise \d+\.\d+", first), (
                f"{notebook.name}: a solution starts with {first!r}")


def test_every_notebook_can_be_downloaded(visits, base_url):
    facts, _ = visits
    for notebook in NOTEBOOKS:
        wanted = f"{base_url}_sources/notebooks/{notebook.name}"
        assert wanted in facts[_page_name(notebook)]["downloads"], (
            f"{notebook.name}: the page has no download link to {wanted}")
        with _open_url(wanted) as response:
            served = json.loads(response.read())
        assert served == json.loads(notebook.read_text()), (
            f"{notebook.name}: the downloadable notebook differs from the committed one "
            "(rebuild the site with `make book`)")


def _open_url(url):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return opener.open(url, timeout=30)


def test_every_internal_link_resolves(visits, base_url):
    facts, _ = visits
    targets = {}
    for path, f in facts.items():
        for link in f["links"]:
            url = urldefrag(link).url
            if url.startswith(base_url):
                targets.setdefault(url, path)
            else:
                assert urlsplit(url).scheme in ("http", "https", "mailto", "javascript"), url
    assert len(targets) > len(facts), "too few same-site links found: is the toctree there?"
    broken = []
    for url, page in sorted(targets.items()):
        try:
            with _open_url(url) as response:
                status = response.status
        except urllib.error.HTTPError as error:
            status = error.code
        if status != 200:
            broken.append(f"{url} (HTTP {status}, linked from {page})")
    assert not broken, f"broken same-site links: {broken}"


def test_offline_search_finds_a_word(site, base_url, browser):
    visitor = _Visitor(browser, base_url)
    try:
        page = visitor.open(f"search.html?q={SEARCH_WORD}")
        page.wait_for_selector("#search-results ul.search li", timeout=TIMEOUT_MS)
        hits = page.eval_on_selector_all("#search-results ul.search li a",
                                         "links => links.map(a => a.href)")
        assert hits, f"searching for {SEARCH_WORD!r} found nothing"
        rope = [nb for nb in NOTEBOOKS if nb.name.startswith("05_")]
        if rope:
            assert any(_page_name(rope[0]) in hit for hit in hits), (
                f"searching for {SEARCH_WORD!r} did not find {rope[0].name}: {hits}")
        assert not visitor.off_host and not visitor.failed and not visitor.errors, (
            visitor.off_host, visitor.failed, visitor.errors)
    finally:
        visitor.close()


_CONTRAST = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const c = [r, g, b].map(v => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
      return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]; };
  const background = el => { for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3); }
      return [255, 255, 255]; };
  const ratio = el => { const a = lum(rgb(getComputedStyle(el).color).slice(0, 3)),
      b = lum(background(el)); return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); };
  const pick = sel => [...document.querySelectorAll(sel)].slice(0, 20);
  return {
    theme: document.documentElement.dataset.theme,
    prose: pick('article p').map(ratio),
    input: pick('.cell_input pre').map(ratio),
    output: pick('.cell_output pre').map(ratio),
    highlighted: [...document.querySelectorAll('.cell_input pre span')]
                   .filter(span => span.textContent.trim()).map(ratio),
    caption: pick('figcaption p').map(ratio),
  };
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_code_and_outputs_readable_in_light_and_dark_mode(site, base_url, browser, scheme):
    page_path = _page_name(_showcase_notebook())
    visitor = _Visitor(browser, base_url, color_scheme=scheme)
    try:
        result = visitor.open(page_path).evaluate(_CONTRAST)
    finally:
        visitor.close()
    assert result["theme"] == scheme
    for part in ("prose", "input", "output", "highlighted", "caption"):
        if part == "caption" and not result[part]:
            continue  # a page without figure captions
        assert result[part], f"{page_path}: no {part} text found"
        worst = min(result[part])
        # 4.5:1 is WCAG's minimum contrast for body text.
        assert worst >= 4.5, f"{page_path} in {scheme} mode: {part} text contrast {worst:.2f} < 4.5"


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_screenshots(site, base_url, browser, screen):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    showcase = _showcase_notebook()
    suffix = "" if screen == "desktop" else "-phone"
    shots = {f"index{suffix}.png": "index.html",
             f"{showcase.stem}{suffix}.png": _page_name(showcase)}
    options = {} if screen == "desktop" else {"viewport": PHONE, "is_mobile": True}
    visitor = _Visitor(browser, base_url, **options)
    try:
        for name, path in shots.items():
            visitor.open(path).screenshot(path=SCREENSHOTS / name, full_page=True)
            assert (SCREENSHOTS / name).stat().st_size > 10_000
    finally:
        visitor.close()


def test_code_and_output_fit_the_column_at_1280px(visits):
    facts, _ = visits
    total = scrolling = 0
    for path, f in facts.items():
        layout = f["layout"]
        total += layout["blocks"]
        scrolling += len(layout["scrolling"])
        allowed = int(MAX_SCROLLING_SHARE * layout["blocks"])
        assert len(layout["scrolling"]) <= allowed, (
            f"{path}: {len(layout['scrolling'])} of {layout['blocks']} code cells and outputs "
            f"run off the column at 1280 px (at most {allowed}): {layout['scrolling'][:5]}")
    assert total and scrolling <= MAX_SCROLLING_SHARE * total


def test_no_display_equation_is_clipped_at_1280px(visits):
    facts, _ = visits
    for path, f in facts.items():
        assert not f["layout"]["clippedEquations"], (
            f"{path}: display equations wider than the column at 1280 px (split them): "
            f"{f['layout']['clippedEquations']}")


def _figure_outputs(notebook: Path) -> dict[str, dict]:
    """``{image file name on the site: output metadata}`` for every PNG the notebook shows.

    MyST-NB names an output image by the SHA-256 of its bytes."""
    found = {}
    for cell in _notebook_cells(notebook):
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                digest = hashlib.sha256(base64.b64decode("".join(png))).hexdigest()
                found[f"{digest}.png"] = output.get("metadata", {}).get("image/png", {})
    return found


def test_figure_text_is_at_least_9px_and_figures_are_sharp(visits):
    facts, _ = visits
    checked = 0
    for notebook in NOTEBOOKS:
        outputs = _figure_outputs(notebook)
        shown = {image["src"].rsplit("/", 1)[-1]: image
                 for image in facts[_page_name(notebook)]["layout"]["images"]}
        for name, meta in outputs.items():
            if name not in shown:
                continue  # an output removed from the page
            image = shown[name]
            assert meta.get("width") and meta.get("smallest_text_px"), (
                f"{notebook.name}: a figure was not drawn by use_course_style()'s formatter "
                "(no width or smallest_text_px in its output metadata); re-execute the notebook")
            text_px = meta["smallest_text_px"] * image["shown"] / meta["width"]
            assert text_px >= MIN_FIGURE_TEXT_PX, (
                f"{notebook.name}: figure {name} is shown {image['shown']:.0f} px wide, so its "
                f"smallest text is {text_px:.1f} px (at least {MIN_FIGURE_TEXT_PX})")
            density = image["natural"] / image["shown"]
            assert density >= MIN_PIXEL_DENSITY, (
                f"{notebook.name}: figure {name} has {density:.2f} image pixels per CSS pixel "
                f"(at least {MIN_PIXEL_DENSITY} for high-resolution screens)")
            checked += 1
    assert checked >= len(NOTEBOOKS), f"only {checked} figures were measured"


def test_pages_fit_a_phone_screen(phone_visits):
    facts, visitor = phone_visits
    for path, layout in facts.items():
        assert layout["pageWidth"] <= layout["viewport"], (
            f"{path}: the page is {layout['pageWidth']} px wide on a {layout['viewport']} px "
            "phone screen, so it scrolls sideways")
        assert not layout["overflowing"], (
            f"{path}: at {layout['viewport']} px these run past the screen's edge with no box "
            f"of their own to scroll in (clipped): {layout['overflowing'][:8]}")
        assert not layout["wrappedOutputs"], (
            f"{path}: printed output wrapped at {layout['viewport']} px (a table's columns or "
            f"an identifier split): {layout['wrappedOutputs'][:5]}")
        assert not layout["splitInTables"], (
            f"{path}: identifiers broken across lines in table cells at {layout['viewport']} px: "
            f"{layout['splitInTables'][:8]}")
    assert not visitor.off_host and not visitor.failed, (visitor.off_host, visitor.failed)
    assert not visitor.errors, f"errors in the browser console on a phone: {visitor.errors}"


def test_no_chapter_is_longer_than_18_screens(visits):
    """At 1280x900 with every fold closed, a chapter is at most MAX_SCREENS screens long."""
    facts, _ = visits
    lengths = {nb.stem: facts[_page_name(nb)]["height"] / facts[_page_name(nb)]["viewportHeight"]
               for nb in NOTEBOOKS}
    assert all(facts[_page_name(nb)]["viewportHeight"] == DESKTOP["height"] for nb in NOTEBOOKS)
    too_long = {name: round(screens, 1) for name, screens in lengths.items()
                if screens > MAX_SCREENS}
    assert not too_long, (
        f"chapters longer than {MAX_SCREENS} screens of 1280x900 (tools/page_heights.py shows "
        f"what fills them): {too_long}")


def test_cross_chapter_links_land_on_sections_figures_and_equations(site):
    """Chapters point into each other: links to a section, figure or equation of another chapter.

    Every chapter from 02 on links at least once to an anchor (not the top) of another chapter,
    the course as a whole links to figures and to labelled equations of other chapters, and
    every labelled equation (``$$ ... $$ (eq-NN-name)``) is numbered on its page.
    """
    pages = _html_pages(site)
    chapter = re.compile(r"(?:^|/)(\d\d_[a-z0-9_]+)\.html#([^\"'\s]+)$")
    kinds = {"section": 0, "figure": 0, "equation": 0}
    without = []
    for notebook in NOTEBOOKS:
        own = _page_name(notebook)
        anchored = []
        for raw in _HREF.findall(pages[own]):
            match = chapter.search(raw)
            if match and match.group(1) != notebook.stem:
                anchored.append(match.group(2))
        for fragment in anchored:
            kind = ("figure" if fragment.startswith("fig-") else
                    "equation" if fragment.startswith("equation-") else "section")
            kinds[kind] += 1
        if notebook.name[:2] >= "02" and not anchored:
            without.append(notebook.name)
    assert not without, f"chapters that link to no section, figure or equation of another: {without}"
    assert all(count > 0 for count in kinds.values()), (
        f"cross-chapter links by kind of anchor: {kinds} (each kind is needed)")
    for path, text in pages.items():
        for label in re.findall(r'id="(equation-eq-[^"]+)"', text):
            block = text[text.index(f'id="{label}"'):][:600]
            assert 'class="eqno"' in block, f"{path}: equation {label} has no number"


def test_copy_buttons_and_numbered_figures(visits):
    facts, _ = visits
    for notebook in NOTEBOOKS:
        f = facts[_page_name(notebook)]
        assert f["copyButtons"] > 0, f"{notebook.name}: no copy buttons on code cells"
        numbers = f["captionNumbers"]
        assert numbers == [f"Figure {k}" for k in range(1, len(numbers) + 1)], (
            f"{notebook.name}: figure numbers {numbers}")
        if not notebook.name.startswith("00_"):
            assert len(numbers) == len(f["figures"]), (
                f"{notebook.name}: {len(f['figures'])} figures but {len(numbers)} numbered")


def test_chapters_link_to_each_other_notation_glossary_and_bibliography(visits, base_url):
    facts, _ = visits
    for page in ("notation.html", "glossary.html", "bibliography.html"):
        assert page in facts, f"the site has no {page}"
        landing = {urldefrag(link).url for link in facts["index.html"]["links"]}
        assert base_url + page in landing, f"the landing page does not link to {page}"
    for notebook in NOTEBOOKS:
        if notebook.name.startswith("00_"):
            continue
        links = {urldefrag(link).url for link in facts[_page_name(notebook)]["articleLinks"]}
        for page in ("notation.html", "bibliography.html"):
            assert base_url + page in links, f"{notebook.name}: no link to {page}"
        others = {base_url + _page_name(nb) for nb in NOTEBOOKS if nb != notebook}
        in_text = {link for link in links if link in others}
        assert in_text, f"{notebook.name}: its text links to no other chapter"
    papers = [link for link in facts["bibliography.html"]["links"]
              if link.startswith(("https://arxiv.org/abs/", "https://doi.org/"))]
    code = [link for link in facts["bibliography.html"]["links"]
            if link.startswith("https://github.com/")]
    assert len(papers) >= 20 and len(code) >= 10, (
        f"the bibliography links to {len(papers)} papers and {len(code)} code files")
    glossary = facts["glossary.html"]
    assert glossary["title"].startswith("Glossary")


# --- Links and anchors, the landing page, the footer, search, the moving figures -----------------

def _html_pages(site: Path) -> dict[str, str]:
    return {path: (site / path).read_text(encoding="utf-8") for path in _site_pages(site)}


_ID = re.compile(r"""\bid\s*=\s*["']([^"']+)["']""")
_HREF = re.compile(r"""<a\b[^>]*?\bhref\s*=\s*["']([^"']*)["']""", re.I)


def test_every_internal_link_and_anchor_lands(site):
    """Every same-site link names a file that exists, and its #fragment an id on that page."""
    import html as html_lib
    from urllib.parse import unquote, urljoin

    pages = _html_pages(site)
    ids = {path: set(map(html_lib.unescape, _ID.findall(text))) for path, text in pages.items()}
    broken, checked = [], 0
    for path, text in pages.items():
        # A script's text is not a link (the self-check questions' script builds some).
        for raw in _HREF.findall(re.sub(r"<script\b.*?</script>", "", text, flags=re.S | re.I)):
            href = html_lib.unescape(raw)
            if not href or urlsplit(href).scheme or href.startswith(("//", "mailto:")):
                continue
            target, fragment = urldefrag(urljoin(f"http://site/{path}", href))
            target_path = unquote(urlsplit(target).path).lstrip("/") or "index.html"
            if target_path.endswith("/"):
                target_path += "index.html"
            checked += 1
            if not (site / target_path).is_file():
                broken.append(f"{path}: {href} (no file {target_path})")
            elif fragment and target_path.endswith(".html") and \
                    unquote(fragment) not in ids.get(target_path, set()):
                broken.append(f"{path}: {href} (no id {unquote(fragment)!r} on {target_path})")
    assert checked > len(pages), "too few same-site links found"
    assert not broken, f"{len(broken)} links that do not land: {broken[:15]}"


def test_every_chapter_is_in_the_glossary_and_the_bibliography():
    """Each chapter is named by the glossary (its terms) and the bibliography (its works)."""
    for page in ("glossary.md", "bibliography.md"):
        text = (ROOT / page).read_text()
        missing = [nb.name for nb in NOTEBOOKS if not nb.name.startswith("00_")
                   and f"notebooks/{nb.name}" not in text]
        assert not missing, f"{page} names no term or work of {missing}"


def test_the_landing_page_lists_each_chapter_once_and_the_copyright_shows_once(site):
    text = (site / "index.html").read_text(encoding="utf-8")
    article = text[text.index("<article"):text.index("</article>")]
    for notebook in NOTEBOOKS:
        count = len(re.findall(rf'href="{re.escape(_page_name(notebook))}(#[^"]*)?"', article))
        assert count == 1, (
            f"the landing page's text links to {_page_name(notebook)} {count} times (the "
            "chapter list must appear once; the toctree belongs in the sidebar only)")
    for path, page in _html_pages(site).items():
        count = page.count('class="copyright"')
        assert count == 1, f"{path}: the copyright line appears {count} times"


def _search(browser, base_url, query: str) -> list[str]:
    from urllib.parse import quote

    visitor = _Visitor(browser, base_url)
    try:
        page = visitor.open(f"search.html?q={quote(query)}")
        page.wait_for_function(
            "() => { const s = document.querySelector('#search-results'); return s &&"
            " /Search finished|did not match/.test(s.textContent); }", timeout=TIMEOUT_MS)
        return page.eval_on_selector_all("#search-results ul.search li a",
                                         "links => links.map(a => a.getAttribute('href'))")
    finally:
        visitor.close()


@pytest.mark.parametrize("term, chapter", [("M-RoPE", "10_"), ("NTK-aware", "07_")])
def test_search_finds_hyphenated_terms(site, base_url, browser, term, chapter):
    """A hyphenated term is one word: its chapter comes first, pages without it do not come."""
    hits = [hit.split("#")[0] for hit in _search(browser, base_url, term)]
    pages = [hit for hit in dict.fromkeys(hits) if hit.startswith("notebooks/")]
    assert pages, f"searching for {term!r} found no chapter"
    assert pages[0].startswith(f"notebooks/{chapter}"), (
        f"searching for {term!r}: the first chapter found is {pages[0]}, not {chapter}*")
    plain = term.lower()
    without = [p for p in pages if plain not in
               (site / p).read_text(encoding="utf-8").lower().replace("\u2011", "-")]
    assert not without, f"searching for {term!r} found pages that do not use it: {without}"


_MOVE = """async (root) => {
  const image = root.querySelector('img');
  const seen = [image.src];
  const moved = [];
  for (const input of root.querySelectorAll('input[type=range]')) {
    const start = input.value;
    for (let v = Number(input.min); v <= Number(input.max); v++) {
      if (String(v) === start) continue;
      input.value = String(v);
      input.dispatchEvent(new Event('input', {bubbles: true}));
      await new Promise(r => requestAnimationFrame(r));
      moved.push({changed: !seen.includes(image.src), label: input.getAttribute('aria-label'),
                  value: root.querySelector('output') && input.parentNode
                           .querySelector('output').textContent});
      seen.push(image.src);
    }
    input.value = start;
    input.dispatchEvent(new Event('input', {bubbles: true}));
  }
  return {controls: root.querySelectorAll('input[type=range]').length, moved: moved,
          back: image.src === seen[0]};
}"""


def test_moving_figures_move_without_a_kernel(site, base_url, browser, visits):
    """At least three figures on the site have sliders; each value of each slider shows a new
    picture (drawn in advance: the page talks to no kernel and no other host)."""
    facts, _ = visits
    found = {path: f["explorers"] for path, f in facts.items() if f["explorers"]}
    assert sum(map(len, found.values())) >= 3, (
        f"at least three moving figures are wanted on the site, found {found} (insert them with "
        "`tools/insert_interactive.py` and execute the notebooks)")
    visitor = _Visitor(browser, base_url)
    try:
        for path, explorers in found.items():
            page = visitor.open(path)
            for element in explorers:
                root = page.locator(f"#{element}")
                size = len(root.evaluate("r => r.outerHTML").encode())
                assert size < 1_000_000, f"{path}: {element} is {size} bytes (at most 1 MB)"
                result = root.evaluate(_MOVE)
                assert result["controls"] >= 1, f"{path}: {element} has no slider"
                still = [m for m in result["moved"] if not m["changed"]]
                assert result["moved"] and not still, (
                    f"{path}: {element}: moving a slider left the picture as it was: {still}")
                assert result["back"], f"{path}: {element} did not return to its first picture"
        assert not visitor.off_host and not visitor.failed and not visitor.errors, (
            visitor.off_host, visitor.failed, visitor.errors)
    finally:
        visitor.close()


_ESCAPED_UNDERSCORE = re.compile(r"\\_")


def _maths(text: str) -> list[str]:
    """The $...$ and $$...$$ formulas of a markdown text (code spans and blocks left out)."""
    text = re.sub(r"```.*?```|`[^`\n]*`", " ", text, flags=re.S)
    return re.findall(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", text, flags=re.S)


def test_no_formula_carries_a_literal_backslash_underscore():
    r"""``\_`` in a formula typesets a visible underscore (a markdown escape that reached TeX);
    a subscript is ``_`` and a name in a formula is ``\mathrm{...}`` or plain text."""
    found = []
    sources = {path.name: [
        "".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
        if cell["cell_type"] == "markdown"] + [
        cell["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "")
        for cell in json.loads(path.read_text())["cells"]] for path in NOTEBOOKS}
    for page in ("index.md", "notation.md", "glossary.md", "bibliography.md"):
        sources[page] = [(ROOT / page).read_text()]
    for name, texts in sources.items():
        for text in texts:
            for display, inline in _maths(text):
                formula = display or inline
                if _ESCAPED_UNDERSCORE.search(formula):
                    found.append(f"{name}: ${formula.strip()[:60]}$")
    assert not found, f"formulas with a literal \\_: {found}"


def test_retag_solutions_folds_code_and_output_together():
    """``tools/notebooks.py retag-solutions`` turns an older solution cell (hide-input: only the
    code folded) into one the template accepts, keeps other tags, and is idempotent."""
    import nbformat

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import notebooks as tool
    finally:
        sys.path.remove(str(ROOT / "tools"))
    old = nbformat.v4.new_code_cell("# Solution to Exercise 5.1\nprint(42)", metadata={
        "tags": ["hide-input", "other"], "jupyter": {"source_hidden": True},
        "mystnb": {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}})
    plain = nbformat.v4.new_code_cell("print(1)", metadata={"tags": ["hide-input"]})
    nb = nbformat.v4.new_notebook(cells=[plain, old])
    assert not tool.is_folded_solution(old)
    assert tool.retagged_solutions(nb) == 1
    assert tool.is_folded_solution(old) and "other" in old.metadata["tags"]
    assert plain.metadata["tags"] == ["hide-input"], "only solution cells change"
    assert tool.retagged_solutions(nb) == 0


def test_self_check_questions_answer_on_the_page_without_a_kernel(site, base_url, browser):
    """Chapter 05's questions (one .Quiz box each): a wrong choice says why it is wrong, the right one says why it is
    right, and a typed number is judged on Enter, all in the page (jupyterquiz's script in the
    cell's output); nothing is fetched from another host, and the questions fit a phone."""
    from course_utils.quiz import quiz_questions

    questions = quiz_questions(5)
    choice = next(q for q in questions if q["type"] == "multiple_choice")
    number = next(q for q in questions if q["type"] == "numeric")
    right = next(a for a in choice["answers"] if a["correct"])
    wrong = next(a for a in choice["answers"] if not a["correct"])
    for viewport in (DESKTOP, PHONE):
        visitor = _Visitor(browser, base_url, viewport=viewport)
        try:
            page = visitor.open("notebooks/05_rope.html")
            quiz = page.locator(".Quiz").first
            quiz.wait_for(timeout=TIMEOUT_MS)
            assert page.locator(".Quiz .MCButton").count() >= len(choice["answers"])
            box = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert box[0] <= box[1], f"at {viewport['width']} px the page scrolls sideways: {box}"
            # jupyterquiz lays out each question as three siblings: the question, its answers
            # and its feedback.
            question = page.locator(".MultipleChoiceQn", has_text=choice["question"][:40]).first
            answers = question.locator("xpath=following-sibling::div[contains(@class,'Answer')][1]")
            feedback = question.locator("xpath=following-sibling::div[contains(@class,'Feedback')][1]")
            answers.locator(".MCButton", has_text=wrong["answer"]).click()
            assert "incorrect" in feedback.get_attribute("class").split()
            assert wrong["feedback"][:30] in feedback.inner_text()
            answers.locator(".MCButton", has_text=right["answer"]).click()
            assert "correct" in feedback.get_attribute("class").split()
            assert right["feedback"][:30] in feedback.inner_text()
            asked = page.locator(".NumericQn", has_text=number["question"][:40]).first
            field = asked.locator("xpath=following-sibling::div[contains(@class,'Answer')][1]").locator(
                "input")
            judged = asked.locator("xpath=following-sibling::div[contains(@class,'Feedback')][1]")
            field.fill("12345")
            field.press("Enter")
            assert number["answers"][1]["feedback"][:30] in judged.inner_text()  # the hint
            field.fill(str(number["answers"][0]["value"]))
            field.press("Enter")
            assert number["answers"][0]["feedback"][:30] in judged.inner_text()
            assert not visitor.off_host and not visitor.failed and not visitor.errors, (
                visitor.off_host, visitor.failed, visitor.errors)
        finally:
            visitor.close()


def test_search_snippets_show_formulas_as_plain_text(site, base_url, browser):
    """A snippet around a word found shows its formulas as plain text, not TeX source: no
    backslash, no command name a formula's source would leave behind, no environment names
    run together with the text. The queries are words whose stem the pages hold next to
    formulas (a word found only in a formula would fall back to the page's first line)."""
    leftovers = re.compile(r"\\|\b(?:d?frac|t?frac\d|langle|rangle|overline|mathrm|lfloor|rfloor|"
                           r"sqrt|partial|varphi|kappa)|(?:split|gathered|aligned|cases)"
                           r"(?:split|gathered|aligned|cases)|\b(?:big|Big|left|right)[(\[|]")
    found = {}
    visitor = _Visitor(browser, base_url)
    try:
        for query in ("frequency", "slope", "channel", "kernel", "attention", "stretch"):
            page = visitor.open(f"search.html?q={query}")
            page.wait_for_function(
                "() => { const s = document.querySelector('#search-results'); return s &&"
                " /Search finished|did not match/.test(s.textContent); }", timeout=TIMEOUT_MS)
            page.wait_for_timeout(1500)  # snippets arrive after the list
            snippets = page.eval_on_selector_all("#search-results p.context",
                                                 "ps => ps.map(p => p.textContent)")
            assert snippets, f"no snippets shown for {query!r}"
            found[query] = snippets
            with_tex = [s[:160] for s in snippets if leftovers.search(s)]
            assert not with_tex, f"snippets for {query!r} with TeX source: {with_tex}"
    finally:
        visitor.close()
    # and what a formula becomes: chapter 07's d/2 and its theta
    assert any("≤ d/2" in s and "θ_i" in s for s in found["frequency"]), found["frequency"][:3]


# What a formula's TeX source leaves behind when its rewrite misses something.
LEFTOVER_TEX = (r"[\\{}&]|\b(?:begin|end)\b|frac|texttt|bmod|pmod|underbrace|tilde|mathrm|mathcal|"
                r"mathbb|lfloor|rfloor|lceil|rceil|overline|sqrt")


def test_every_formula_of_the_site_reads_as_plain_text_in_search_snippets(site, base_url,
                                                                         browser):
    """The rewrite search snippets use (``window.coursePlainText``, course.js), applied to
    every formula of every page: no TeX command, brace or environment survives it, and it
    adds no digit the formula does not have."""
    pages = [p.relative_to(site).as_posix() for p in sorted(site.glob("*.html"))
             + sorted((site / "notebooks").glob("[0-9][0-9]_*.html"))]
    visitor = _Visitor(browser, base_url)
    try:
        page = visitor.open("search.html")
        page.wait_for_function("() => typeof window.coursePlainText === 'function'",
                               timeout=TIMEOUT_MS)
        results = page.evaluate("""async ([pages, pattern]) => {
            const leftover = new RegExp(pattern);
            const out = {count: 0, bad: [], conjugates: []};
            for (const name of pages) {
              const html = await (await fetch(name)).text();
              const doc = new DOMParser().parseFromString(html, "text/html");
              for (const m of doc.querySelectorAll("article .math")) {
                out.count += 1;
                const plain = window.coursePlainText(m.textContent);
                const digits = t => (t.match(/[0-9]/g) || []).length;
                if (leftover.test(plain) || digits(plain) > digits(m.textContent)) {
                  out.bad.push(name + ": " + plain.slice(0, 100)); }
                if (/overline\\{z|bar\\s*z/.test(m.textContent)) { out.conjugates.push(plain); }
              }
            }
            return out; }""", [pages, LEFTOVER_TEX])
    finally:
        visitor.close()
    assert results["count"] > 1000, results["count"]   # the site's formulas were all read
    assert not results["bad"], results["bad"][:10]
    # a conjugate keeps its bar, on the group's first letter (notation page: z̄_(q,i))
    assert results["conjugates"], "no conjugate formula found"
    assert all("z\u0304" in plain and not re.search("z\u0304[0-9]", plain)
               for plain in results["conjugates"]), results["conjugates"]


def test_a_display_formula_that_scrolls_on_a_phone_shows_a_cue(site, base_url, browser):
    """At 390 px a display formula wider than the column scrolls inside its box, and its box
    draws an edge shadow (course.css) so the reader sees there is more."""
    visitor = _Visitor(browser, base_url, viewport=PHONE)
    try:
        page = visitor.open("notebooks/05_rope.html")
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=TIMEOUT_MS)
        page.evaluate("() => MathJax.startup.promise")
        wide = page.evaluate("""() => [...document.querySelectorAll('article mjx-container[display="true"]')]
            .filter(m => m.scrollWidth > m.clientWidth + 1)
            .map(m => getComputedStyle(m).backgroundImage)""")
        assert wide, "no display formula scrolls at 390 px on chapter 05 (the cue is untested)"
        assert all(image.count("radial-gradient") == 2 for image in wide), wide
    finally:
        visitor.close()
