"""Write one section of ``benchmarks/RESULTS.md`` between ``<!-- name:begin -->`` and
``<!-- name:end -->`` markers, leaving the rest of the file alone.

``make portability`` and ``make lab-seeds`` write their sections this way; ``make bench``, which
rewrites the file, keeps every such section.
"""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"


def write_section(name: str, body: str, path: pathlib.Path = RESULTS) -> None:
    """Replace the section ``name`` of ``path`` with ``body`` (markdown), or append it."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text() if path.is_file() else "# Benchmark results\n"
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)
    print(f"Written to {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
