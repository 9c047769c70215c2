"""tools/glossary_links.py: what counts as a term's first use, and the links it adds."""

from __future__ import annotations

import pathlib
import sys

import nbformat
import pytest

# A term's link target is the id Sphinx gives it (glossary_links.term_id), so these tests need
# the docs extra; at the dependency floors (`make test-oldest`, no docs extra) they skip.
pytest.importorskip("sphinx", reason="the glossary's ids are Sphinx's: needs the docs extra")

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import glossary_links as gl  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _notebook(tmp_path, *cells, name="05_test.ipynb"):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text) for text in cells]
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_term_ids_are_those_sphinx_gives():
    assert gl.term_id("RoPE") == "term-RoPE"
    assert gl.term_id("rope_scaling") == "term-rope_scaling"
    assert gl.term_id("NTK-aware scaling") == "term-NTK-aware-scaling"


def test_first_use_is_found_outside_headings_math_code_and_links(tmp_path):
    path = _notebook(
        tmp_path,
        "# 05 · RoPE in a title\n\nThe `RoPE` code and $\\text{RoPE}$ and [RoPE](05_rope.ipynb).",
        "Here RoPE is used in prose, and RoPE again.",
    )
    missing = gl.unlinked(path, ["RoPE"])
    assert len(missing) == 1 and "cell 1" in missing[0]
    assert gl.link(path, ["RoPE"]) == 1
    text = nbformat.read(path, as_version=4).cells[1].source
    assert text == "Here [RoPE](../glossary.md#term-RoPE) is used in prose, and RoPE again."
    assert gl.unlinked(path, ["RoPE"]) == []
    assert gl.link(path, ["RoPE"]) == 0  # already linked: nothing to do


def test_other_senses_references_and_case(tmp_path):
    path = _notebook(
        tmp_path,
        "A base model and a code base are not RoPE's base.",
        "Resizing is a position interpolation of the table.",
        "## References\n\nChen et al. *Extending ... via Position Interpolation*.",
        name="09_test.ipynb",
    )
    assert gl.link(path, ["base", "Position Interpolation"]) == 1
    text = nbformat.read(path, as_version=4).cells[0].source
    assert text.endswith("RoPE's [base](../glossary.md#term-base).")
    assert "glossary" not in nbformat.read(path, as_version=4).cells[2].source


def test_config_keys_match_as_code(tmp_path):
    path = _notebook(tmp_path, "Set `rope_scaling` in the config; rope_scaling in prose.")
    assert gl.link(path, ["rope_scaling"]) == 1
    assert nbformat.read(path, as_version=4).cells[0].source.startswith(
        "Set [`rope_scaling`](../glossary.md#term-rope_scaling) in")


@pytest.mark.parametrize("notebook", [nb for nb in NOTEBOOKS if not nb.name.startswith("00_")],
                         ids=lambda p: p.stem)
def test_every_chapter_links_each_term_from_its_first_use(notebook):
    assert gl.unlinked(notebook) == []
