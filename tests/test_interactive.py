"""The moving figures of course_utils.interactive: small, offline, deterministic, and moving."""

from __future__ import annotations

import re

import pytest

from course_utils import interactive
from course_utils.interactive import MAX_BYTES

BUILDERS = {
    "rope-base": interactive.rope_base_explorer,
    "rope-scaling": interactive.rope_scaling_explorer,
    "alibi-heads": interactive.alibi_explorer,
    "mrope-video": interactive.mrope_explorer,
}


@pytest.fixture(scope="module")
def explorers():
    return {name: build() for name, build in BUILDERS.items()}


@pytest.mark.parametrize("name", BUILDERS)
def test_each_explorer_is_small_offline_html_with_a_still(explorers, name):
    explorer = explorers[name]
    text = explorer._repr_html_()
    assert text == explorer.html and explorer.name == name
    assert len(text.encode()) < MAX_BYTES
    assert not re.search(r"(src|href)=\"(https?:)?//", text), "nothing may load from another host"
    assert "<script" in text and 'type="range"' in text
    assert explorer.still_png().startswith(b"\x89PNG\r\n\x1a\n")
    # The default picture is in the page without scripts (and so in print).
    assert 'alt="' in text and "@media print" in text
    assert len(explorer.frames) == len(set(explorer.frames)), "two settings draw the same picture"


@pytest.mark.parametrize("name", BUILDERS)
def test_each_explorer_is_the_same_on_every_run(explorers, name):
    assert BUILDERS[name]().html == explorers[name].html


def test_the_frame_order_follows_the_controls(explorers):
    mrope = explorers["mrope-video"]
    (_, grids, grid_default), (_, frames, frame_default) = mrope.controls
    assert len(mrope.frames) == len(grids) * len(frames)
    assert mrope.default_index == grid_default * len(frames) + frame_default


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="default"):
        interactive.rope_base_explorer(default=12345.0)
    with pytest.raises(ValueError, match="bases"):
        interactive.rope_base_explorer(bases=(10_000.0,))
    with pytest.raises(TypeError, match="factors"):
        interactive.rope_scaling_explorer(factors=4.0)
    with pytest.raises(ValueError, match="factors"):
        interactive.rope_scaling_explorer(factors=(0.5, 2.0), default=2.0)
    with pytest.raises(TypeError, match="head_counts"):
        interactive.alibi_explorer(head_counts=(2.5, 4))
    with pytest.raises(ValueError, match="grids"):
        interactive.mrope_explorer(grids=((2, 3, 4), (3, 3)))
    with pytest.raises(ValueError, match="frames"):
        interactive.mrope_explorer(frames=1)
    with pytest.raises(ValueError, match="name"):
        interactive.Explorer("Bad Name", [b""], [("x", [1], 0)], alt="", width_px=10)


def test_insert_interactive_puts_each_figure_once_at_the_end_of_its_section(tmp_path):
    import shutil
    import sys
    from pathlib import Path

    import nbformat

    tools = Path(__file__).resolve().parents[1] / "tools"
    sys.path.insert(0, str(tools))
    try:
        import insert_interactive
    finally:
        sys.path.remove(str(tools))
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    copies = []
    for prefix, places in insert_interactive.PLACES.items():
        source = next(notebooks.glob(f"{prefix}*.ipynb"))
        copies.append(Path(shutil.copy(source, tmp_path / source.name)))
        # Start from the chapter without its moving figures (they may be in it already).
        nb = nbformat.read(copies[-1], as_version=4)
        nb.cells = [c for c in nb.cells if not c.get("id", "").startswith("explore-")]
        nbformat.write(nb, copies[-1])
        assert insert_interactive.insert(copies[-1]) == len(places)
        assert insert_interactive.insert(copies[-1]) == 0, "a second run must change nothing"
        cells = nbformat.read(copies[-1], as_version=4).cells
        for heading, function, _ in places:
            index = next(i for i, c in enumerate(cells)
                         if c.get("id") == insert_interactive._cell_id(function))
            assert f"{function}()" in cells[index].source
            assert cells[index - 1].cell_type == "markdown"
            following = cells[index + 1] if index + 1 < len(cells) else None
            assert following is None or following.source.startswith("## "), (
                f"{copies[-1].name}: {function} is not at the end of the section {heading!r}")
    assert insert_interactive.main(["--check", *map(str, copies)]) == 0


def test_pictures_do_not_depend_on_the_callers_style_and_leave_it_alone(explorers):
    import matplotlib as mpl

    with mpl.rc_context({"font.size": 17.0, "axes.grid": False, "lines.linewidth": 4.0}):
        assert interactive.alibi_explorer().html == explorers["alibi-heads"].html
        assert mpl.rcParams["font.size"] == 17.0 and mpl.rcParams["lines.linewidth"] == 4.0
