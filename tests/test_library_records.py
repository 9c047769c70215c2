"""The library outputs stored as data (course_utils/data/library) are what the library computes.

Each record is recomputed with the installed transformers by the recorder that wrote it
(tools/library_records.py). A stored record that no recorder produces fails: no record may be
typed by hand.
"""

from __future__ import annotations

import os
import pathlib
import sys

import numpy as np
import pytest

from course_utils.data import library_record, library_record_names

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
import library_records  # noqa: E402


def test_every_stored_record_has_a_recorder():
    assert set(library_record_names()) <= set(library_records.RECORDERS)


@pytest.mark.parametrize("name", library_record_names())
def test_record_matches_the_installed_library(transformers, name):
    if name.startswith("smollm2_"):  # recorded from the released model's file (make model)
        from course_utils.real_model import files

        if not (files.model_available() and files.text_available()):
            message = (f"{files.GGUF_NAME} or {files.TEXT_NAME} is not in {files.cache_dir()}: "
                       f"run `{files.FETCH_COMMAND}`")
            if os.environ.get("CI") == "true":
                pytest.fail(message + " (CI must recompute every record)")
            pytest.skip(message)
    assert library_records.differences(name) == []


@pytest.mark.parametrize("name", library_record_names())
def test_record_loads_with_its_witness(name):
    record = library_record(name)
    assert record.witness.startswith(f"library: {record.library} {record.version} ")
    assert record.outputs and all(isinstance(v, np.ndarray) for v in record.outputs.values())


def test_unknown_record_is_refused_by_name():
    with pytest.raises(ValueError, match="name must be one of the stored library records"):
        library_record("no_such_record")
