"""Every work a chapter cites is on the bibliography page, and that entry links back to the chapter.

A cited work is an author and a year in a chapter's References section: at the start of a bullet,
``- Surname, X. et al. (2021). *Title.*``, or after the end of another work in the same bullet,
``... arXiv:2104.09864. Black et al. (2022), *GPT-NeoX-20B*``; library files cited without a
year are not works. An
entry on the bibliography page is a bold heading ``**Surname et al. (2021).**`` followed by a
``Chapter(s):`` line of links to the chapters that cite it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb") if not p.name.startswith("00"))
_CITATION = re.compile(r"^- \s*([^()\[\]]+?)\s*\((\d{4})[a-z]?\)", re.M)
# A further work in the same bullet: after ". " or "; ", names (or "et al.") then the year.
_MORE = re.compile(r"(?:\.|;)\s+([A-Z][\w\-]*(?: [A-Z][\w\-]*)*(?: et al\.)?)\s*\((\d{4})[a-z]?\)")


def _first_surname(authors: str) -> str:
    return re.split(r"[,\s]", authors.strip(), maxsplit=1)[0].lower()


def cited_works(path: Path) -> set[tuple[str, str]]:
    """(first author's surname, year) of every work in the chapter's References section."""
    cells = json.loads(path.read_text())["cells"]
    text = "".join(
        "".join(c["source"]) for c in cells
        if c["cell_type"] == "markdown" and "".join(c["source"]).lstrip().startswith("## References"))
    found = _CITATION.findall(text) + _MORE.findall(text)
    return {(_first_surname(a), y) for a, y in found}


def bibliography_entries() -> dict[tuple[str, str], str]:
    """(first author's surname, year) -> the entry's text, for every entry of the page."""
    text = (ROOT / "bibliography.md").read_text()
    entries = {}
    for block in re.split(r"\n(?=\(bib-)", text):
        head = re.search(r"^\*\*([^*]+?)\s*\((\d{4})[a-z]?\)", block, re.M)
        if head:
            entries[(_first_surname(head.group(1)), head.group(2))] = block
    return entries


def test_the_parser_finds_the_works_of_a_chapter():
    assert ("vaswani", "2017") in cited_works(ROOT / "notebooks" / "02_sinusoidal.ipynb")
    works = cited_works(ROOT / "notebooks" / "11_positions_in_modern_models.ipynb")
    assert {("su", "2021"), ("abdin", "2024"), ("gemma", "2025"), ("openai", "2025")} <= works
    assert ("vaswani", "2017") in bibliography_entries()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name[:2])
def test_every_cited_work_has_an_entry_that_links_back(path):
    entries = bibliography_entries()
    works = cited_works(path)
    assert works, f"{path.name}: no cited works found in its References section"
    missing = sorted(w for w in works if w not in entries)
    assert not missing, f"{path.name} cites works the bibliography page lacks: {missing}"
    unlinked = sorted(w for w in works if f"notebooks/{path.name})" not in entries[w])
    assert not unlinked, f"bibliography entries that do not link back to {path.name}: {unlinked}"
