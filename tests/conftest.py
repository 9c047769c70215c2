"""Shared fixtures. Hypothesis runs derandomised so CI results are reproducible."""

from __future__ import annotations

import importlib
import os

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
