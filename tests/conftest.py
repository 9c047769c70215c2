"""Shared fixtures. Hypothesis runs derandomised so CI results are reproducible."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

import pytest
from hypothesis import settings

settings.register_profile("course", derandomize=True, deadline=None, max_examples=60)
settings.load_profile("course")


def _import_reference(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        message = (f"{name} is not installed: run 'make reference' to install the reference "
                   "implementations (torch, transformers) these tests compare against")
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI must run every reference test)")
        pytest.skip(message)


@pytest.fixture(scope="session")
def torch():
    module = _import_reference("torch")
    module.set_default_dtype(module.float32)
    return module


@pytest.fixture(scope="session")
def transformers(torch):
    return _import_reference("transformers")


@contextlib.contextmanager
def closed_stdout(monkeypatch):
    """``sys.stdout`` as a pipe whose reader has gone, so the first line printed raises
    BrokenPipeError (what ``| head -1`` does once head has exited). Used inside the test, not as
    a fixture: capsys puts its own stdout back when the test starts."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = open(write_end, "w", buffering=1)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(sys, "stdout", stream)
            yield stream
    finally:
        try:
            stream.close()
        except BrokenPipeError:  # a partial line still buffered for the reader that has gone
            pass


def stdout_went_to_devnull(stream) -> bool:
    """After a plan met the closed pipe, the command points stdout at the null device."""
    return os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))


# The longest modules and notebooks first: pytest-xdist's loadscope hands out whole modules in
# the order collected, so a long one that starts last leaves the other processes idle at the end.
# (Measured with `pytest --durations`, in wall time under `make test`: the site in a browser, the
# fuzzing, chapter 13, the fresh-venv launch, the explain command, the moving figures, ...)
LONGEST_FIRST = ("tests/test_site_browser.py", "tests/test_fuzz.py",
                 "notebooks/13_released_model.ipynb", "tests/test_launch.py",
                 "tests/test_explain.py", "tests/test_interactive.py",
                 "tests/test_library_records.py", "tests/test_real_model.py",
                 "tests/test_teacher_kit.py", "notebooks/12_lab_context_extension.ipynb",
                 "notebooks/09_lab_length_generalization.ipynb",
                 "tests/test_explain_released_corpus.py")


def pytest_configure(config):
    # pytest-xdist 3.6 and later reorders loadscope's modules by their number of tests (most
    # first) unless told not to, which would undo the order set below: a module of a few long
    # tests (the browser) then starts half-way through the run and ends long after the rest.
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order inside each module, and of the others, is kept
