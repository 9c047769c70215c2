"""Link each glossary term from its first use in each chapter.

    python tools/glossary_links.py --check NOTEBOOK...   # exit 1 if a first use is not linked
    python tools/glossary_links.py --link NOTEBOOK...    # link every first use, in place
    python tools/glossary_links.py --show NOTEBOOK...    # print each first use in its context

The terms are those of the ``{glossary}`` block of ``glossary.md``. A term's *use* is the term
(or its plural; a few terms take the variants in VARIANTS) as a whole word in the prose of a
chapter's markdown cells, case-insensitive; not inside a heading, a formula, an HTML block, a
figure caption written for Jupyter only (tag ``remove-cell``), or the text of another link. A
term written as code (``rope_scaling``) is used where it appears as a whole code span. Some
words have a second, everyday sense in some chapters ("base model" is not RoPE's base); those
occurrences are listed in OTHER_SENSES, and the chapters where a word has only its other sense
in NOT_IN; they are not uses of the term. The References section is not read (titles, not uses).

The first use in each chapter must be a link ``[text](../glossary.md#<id>)``, where ``<id>`` is
the id Sphinx gives the term on the glossary page, such as ``term-RoPE``
(``test_every_internal_link_and_anchor_lands`` checks that it exists on the built page).
``tools/notebooks.py check`` applies ``--check``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "glossary.md"
LINK_TARGET = "../glossary.md#"

# Other written forms of a term (regular expressions, matched case-insensitively).
VARIANTS = {
    "absolute position encoding": r"absolute position (?:encodings?|embeddings?)",
    "fine-tune": r"fine-tun(?:e|es|ed|ing)",
    "frequency": r"frequenc(?:y|ies)",
    "KV cache": r"KV[ -]cache",
    "length generalisation": r"length generali[sz]ation",
    "position id": r"position ids?",
    "sliding window": r"sliding[ -]windows?",
}
# Occurrences that are another sense of the word, not the glossary's term.
OTHER_SENSES = {
    "base": r"base[ -]models?|base (?:case|line)|database|code base",
    "pair": r"pairs? of (?:tokens|positions|queries|keys|words|numbers|sequences|layers|heads)"
            r"|(?:query|key|token)[ -]key pairs?|neighbouring pairs",
}
# Chapters where a word is only ever used in another sense (06's "base" is that of the slopes'
# geometric sequence; 03 and 04 pair positions, not channels).
NOT_IN = {"base": {"03", "06"}, "pair": {"03", "04"}}
# Terms matched with their case: "Position Interpolation" is Chen et al.'s method, where
# "position interpolation" may be any resizing of a table.
CASE_SENSITIVE = {"Position Interpolation"}


def glossary_terms(path: pathlib.Path = GLOSSARY) -> list[str]:
    """The terms of the ``{glossary}`` block, in order."""
    text = path.read_text(encoding="utf-8")
    match = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    if match is None:
        raise ValueError(f"{path}: no ```{{glossary}} block")
    return [line.strip() for line in match.group(1).splitlines()
            if line.strip() and not line.startswith((" ", "\t"))]


def term_id(term: str) -> str:
    """The id Sphinx gives a glossary term (``make_id(env, document, "term", term)``)."""
    from sphinx.util.nodes import _make_id  # keeps case and underscores: term-rope_scaling

    return _make_id(f"term-{term}")


def _pattern(term: str) -> re.Pattern:
    if term.isidentifier() and "_" in term:  # a config key, written as code
        return re.compile(rf"`{re.escape(term)}`")
    body = VARIANTS.get(term, re.escape(term) + r"(?:s|es)?")
    flags = 0 if term in CASE_SENSITIVE else re.I
    return re.compile(rf"(?<![\w`-]){body}(?![\w`-])", flags)


# Spans of a markdown cell that are not prose: headings, HTML lines, display and inline math,
# code spans (but a whole code span may be a term), and link targets.
_NOT_PROSE = re.compile(
    r"(?m)^#{1,6} .*$|^\s*<.*$|(?s:\$\$.*?\$\$)|(?<!\\)\$[^$\n]+\$|\]\([^)]*\)")
_CODE = re.compile(r"`[^`\n]+`")
_LINK_TEXT = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")


def _blocked(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _NOT_PROSE.finditer(text)]
    spans += [m.span(1) for m in _LINK_TEXT.finditer(text)]
    return spans


def _first_use(cells: list[dict], term: str, chapter: str = ""):
    """``(cell index, start, end, linked)`` of the term's first use, or None.

    The References section (from its heading on) holds titles, not uses: it is not read.
    """
    if chapter in NOT_IN.get(term, ()):
        return None
    pattern = _pattern(term)
    other = re.compile(OTHER_SENSES[term], re.I) if term in OTHER_SENSES else None
    target = LINK_TARGET + term_id(term)
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown" or "remove-cell" in cell["metadata"].get("tags", []):
            continue
        text = "".join(cell["source"])
        if text.startswith("## References"):
            return None
        others = [m.span() for m in other.finditer(text)] if other else []
        for link in _LINK_TEXT.finditer(text):  # an existing link to the term counts
            if link.group(2) == target and pattern.search(link.group(1)):
                earlier = [m for m in pattern.finditer(text[:link.start()])
                           if not _inside(m.span(), _blocked(text) + others + _code(text, term))]
                if not earlier:
                    return index, link.start(), link.end(), True
        for match in pattern.finditer(text):
            if _inside(match.span(), _blocked(text) + others + _code(text, term)):
                continue
            return index, match.start(), match.end(), False
    return None


def _code(text: str, term: str) -> list[tuple[int, int]]:
    if term.isidentifier() and "_" in term:
        return []
    return [m.span() for m in _CODE.finditer(text)]


def _inside(span, spans) -> bool:
    return any(a <= span[0] and span[1] <= b for a, b in spans)


def _chapter_cells(path: pathlib.Path) -> tuple[dict, list[dict]]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return notebook, notebook["cells"]


def unlinked(path: pathlib.Path, terms: list[str] | None = None) -> list[str]:
    """Each term whose first use in the notebook is not a link to its glossary entry."""
    _, cells = _chapter_cells(path)
    missing = []
    for term in terms or glossary_terms():
        found = _first_use(cells, term, path.name[:2])
        if found is not None and not found[3]:
            index, start, end, _ = found
            text = "".join(cells[index]["source"])
            missing.append(f"{term!r} (cell {index}: ...{text[max(0, start - 30):end + 30]!r}...)")
    return missing


def link(path: pathlib.Path, terms: list[str] | None = None) -> int:
    """Wrap each unlinked first use in a glossary link, in place; return how many."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    count = 0
    for term in terms or glossary_terms():
        found = _first_use(notebook.cells, term, path.name[:2])
        if found is None or found[3]:
            continue
        index, start, end, _ = found
        text = "".join(notebook.cells[index].source)
        words = text[start:end]
        text = f"{text[:start]}[{words}]({LINK_TARGET}{term_id(term)}){text[end:]}"
        notebook.cells[index].source = text
        count += 1
    if count:
        nbformat.write(notebook, path)
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--link", action="store_true")
    mode.add_argument("--show", action="store_true")
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    args = parser.parse_args(argv)
    terms = glossary_terms()
    status = 0
    for path in args.notebooks:
        if not path.is_file():
            parser.error(f"no such notebook: {path}")
        if args.link:
            print(f"{path.name}: {link(path, terms)} first uses linked")
        elif args.check:
            missing = unlinked(path, terms)
            if missing:
                status = 1
                print(f"{path.name}: first uses not linked to the glossary: " + "; ".join(missing))
        else:
            _, cells = _chapter_cells(path)
            for term in terms:
                found = _first_use(cells, term, path.name[:2])
                if found:
                    index, start, end, linked = found
                    text = "".join(cells[index]["source"]).replace("\n", " ")
                    print(f"{path.name[:2]} {term:26} {'L' if linked else '-'} "
                          f"{text[max(0, start - 35):end + 25]!r}")
    return status


if __name__ == "__main__":
    sys.exit(main())
