"""Values that belong to the world, kept as data files with where they were read.

- ``library/<name>.json``: a library's output (e.g. Hugging Face transformers), recorded by
  ``tools/library_records.py`` with the library, its version, the function and its inputs.
  Notebooks compare the course's numpy functions with these records, so they stay numpy-only;
  ``tests/test_library_records.py`` recomputes every record with the installed library.
- ``records/<name>``: the course's own long experiments (the labs' trainings, chapter 13's long
  runs), written by the ``tools/`` script each record names and read by the chapters through
  :func:`experiment_record_path`, so a chapter opened outside a clone (Colab) finds them too.

:func:`library_record` loads one record; its ``witness`` is the text a check prints.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np

__all__ = ["LibraryRecord", "library_record", "library_record_names", "DATA_DIR",
           "RECORDS_DIR", "experiment_record_path"]

DATA_DIR = pathlib.Path(__file__).resolve().parent
_LIBRARY_DIR = DATA_DIR / "library"
RECORDS_DIR = DATA_DIR / "records"


@dataclasses.dataclass(frozen=True)
class LibraryRecord:
    """One stored library output.

    Attributes
    ----------
    name : str
        The file's stem, ``library/<name>.json``.
    library, version : str
        E.g. ``"transformers"``, ``"5.23.0"``.
    function : str
        The function or class that computed the outputs, with its module.
    source : str
        The file that defines it, inside the library's repository.
    inputs : dict
        The arguments it was called with (JSON values).
    outputs : dict of str to numpy.ndarray
        What it returned, as float64 or int64 arrays.
    """

    name: str
    library: str
    version: str
    function: str
    source: str
    inputs: dict
    outputs: dict

    def __post_init__(self):
        for field in ("name", "library", "version", "function", "source"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value:
                raise TypeError(f"{field} must be a non-empty string, got {value!r:.60}")
        for field in ("inputs", "outputs"):
            if not isinstance(getattr(self, field), dict):
                raise TypeError(f"{field} must be a dict, got {type(getattr(self, field)).__name__}")

    @property
    def witness(self) -> str:
        """``"library: <library> <version> <function>, stored in data/library/<name>.json"``."""
        short = self.function.rsplit(".", 1)[-1]
        return f"library: {self.library} {self.version} {short}, data/library/{self.name}.json"


def library_record_names() -> list[str]:
    """The names of every stored library record, sorted."""
    return sorted(p.stem for p in _LIBRARY_DIR.glob("*.json"))


def _as_array(value):
    array = np.asarray(value)
    if array.dtype.kind in "iub":
        return array.astype(np.int64)
    return array.astype(np.float64)


def library_record(name: str) -> LibraryRecord:
    """Load ``course_utils/data/library/<name>.json``.

    Raises
    ------
    ValueError
        If no record has that name (the message lists the names there are).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a record name (a string), got {name!r:.60}")
    path = _LIBRARY_DIR / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"name must be one of the stored library records "
                         f"{library_record_names()}, got {name!r}")
    raw = json.loads(path.read_text())
    return LibraryRecord(name=name, library=raw["library"], version=raw["version"],
                         function=raw["function"], source=raw["source"], inputs=raw["inputs"],
                         outputs={k: _as_array(v) for k, v in raw["outputs"].items()})


def experiment_record_path(name: str) -> pathlib.Path:
    """The path of ``course_utils/data/records/<name>``, a stored experiment of the course.

    Raises
    ------
    ValueError
        If no record has that file name (the message lists the names there are).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a record's file name (a string), got {name!r:.60}")
    names = sorted(p.name for p in RECORDS_DIR.iterdir() if p.suffix in (".json", ".npz"))
    if name not in names:
        raise ValueError(f"name must be one of the stored experiment records {names}, got {name!r}")
    return RECORDS_DIR / name
