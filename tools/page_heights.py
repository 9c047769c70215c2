"""How long each chapter page of the web site is, in screens of 1280x900 (the limit is 18).

    python tools/page_heights.py                 # build the site into _build/heights, measure all
    python tools/page_heights.py 05 11           # measure only chapters 05 and 11
    python tools/page_heights.py --site _build/html   # measure an already built site

A page's length is the height of its document with every fold closed (as a reader first sees
it), after MathJax has typeset, in Debian's Chromium at 1280x900. The browser test
``tests/test_site_browser.py`` asserts the same limit on the site ``make book`` builds; this
command is the quick way to see where a chapter stands while shortening it. Prints one line per
chapter and a breakdown (visible code, printed output, figures, the rest: text, formulas and
spacing); exits 1 if a measured chapter is over the limit.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
DESKTOP = {"width": 1280, "height": 900}
MAX_SCREENS = 18

MEASURE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise; }
  await document.fonts.ready;
  const shown = e => { for (let p = e; p; p = p.parentElement) {
      if (p.tagName === 'DETAILS' && !p.open && !p.querySelector(':scope > summary')
          .contains(e)) return false; } return true; };
  const r = {code: 0, output: 0, figures: 0};
  for (const cell of document.querySelectorAll('article div.cell')) {
    const input = cell.querySelector('.cell_input');
    if (input && shown(input)) r.code += input.getBoundingClientRect().height;
    const out = cell.querySelector('.cell_output');
    if (out && shown(out)) {
      const img = [...out.querySelectorAll('img, .course-explorer')]
        .reduce((a, i) => a + i.getBoundingClientRect().height, 0);
      r.figures += img; r.output += out.getBoundingClientRect().height - img; }
  }
  r.height = document.documentElement.scrollHeight;
  r.rest = document.querySelector('article').getBoundingClientRect().height
           - r.code - r.output - r.figures;
  for (const k in r) r[k] = Math.round(r[k]);
  return r; }"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def measure(site: pathlib.Path, chapters: list[str]) -> dict[str, dict]:
    """``{page name: {"height", "code", "output", "figures", "rest"}}`` in CSS pixels."""
    from playwright.sync_api import sync_playwright

    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pages = sorted((site / "notebooks").glob("[0-9][0-9]_*.html"))
    pages = [p for p in pages if not chapters or p.name[:2] in chapters]
    results = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport=DESKTOP)
            for path in pages:
                page.goto(f"http://127.0.0.1:{server.server_address[1]}/notebooks/{path.name}",
                          wait_until="networkidle")
                results[path.stem] = page.evaluate(MEASURE)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="two-digit chapter numbers (default: all)")
    parser.add_argument("--site", type=pathlib.Path,
                        help="an already built site (default: build into _build/heights)")
    args = parser.parse_args(argv)
    bad = [c for c in args.chapters if not (len(c) == 2 and c.isdigit())]
    if bad:
        parser.error(f"chapters must be two-digit numbers such as 05, got {bad}")
    site = args.site
    if site is None:
        site = ROOT / "_build" / "heights"
        subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "auto",
                        "-d", str(ROOT / "_build" / "heights-doctrees"), str(ROOT), str(site)],
                       cwd=ROOT, check=True)
    results = measure(site, args.chapters)
    over = 0
    print(f"{'chapter':36} {'screens':>7}  {'code':>6} {'output':>6} {'figures':>7} {'rest':>6}")
    for name, r in results.items():
        screens = r["height"] / DESKTOP["height"]
        over += screens > MAX_SCREENS
        flag = "  over" if screens > MAX_SCREENS else ""
        print(f"{name:36} {screens:7.1f}  {r['code']:6} {r['output']:6} {r['figures']:7} "
              f"{r['rest']:6}{flag}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
