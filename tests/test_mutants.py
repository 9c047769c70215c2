"""The mutant catalogue (tools/mutants.py): every patch still applies, and the runner's bookkeeping.

Nothing here executes a notebook: ``make mutants`` does that. These tests keep the catalogue from
rotting silently as course_utils changes (an old text that no longer occurs exactly once would
plant no bug at all) and check how verdicts are read from a notebook's printed lines.
"""

from __future__ import annotations

import ast
import collections
import importlib.util
import io
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("mutants", ROOT / "tools" / "mutants.py")
mutants = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mutants", mutants)  # dataclasses look their module up there
_spec.loader.exec_module(mutants)

CATALOGUE = mutants.CATALOGUE


def test_catalogue_is_large_and_spread_over_the_modules():
    modules = collections.Counter(m.module for m in CATALOGUE)
    assert len(CATALOGUE) >= 80, len(CATALOGUE)
    assert len(modules) >= 8, modules
    for module in ("sinusoidal", "learned", "relative", "rope", "alibi", "scaling", "attention",
                   "practice", "multimodal", "modern", "lab.model", "lab.train",
                   "real_model.model"):
        assert modules[module] >= 1, f"no mutant in course_utils.{module}"


def test_names_are_unique_and_entries_complete():
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names)), [n for n, c in collections.Counter(names).items() if c > 1]
    for m in CATALOGUE:
        assert m.kind in mutants.KINDS, (m.name, m.kind)
        assert m.description.strip() and "\n" not in m.description, m.name
        assert m.old != m.new, m.name
        assert m.path.startswith("course_utils/") and m.path.endswith(".py"), m.name


@pytest.mark.parametrize("mutant", CATALOGUE, ids=[m.name for m in CATALOGUE])
def test_patch_applies_exactly_once_and_still_parses(mutant):
    source = (ROOT / mutant.path).read_text()
    assert source.count(mutant.old) == 1, (
        f"{mutant.name}: the old text occurs {source.count(mutant.old)} times in {mutant.path}; "
        "update the catalogue entry to the current source")
    patched = source.replace(mutant.old, mutant.new, 1)
    assert patched != source
    ast.parse(patched)  # a patch that breaks the syntax plants a crash, not a bug


def test_the_issue_s_survivors_are_in_the_catalogue():
    names = {m.name for m in CATALOGUE}
    for name in ("attn_no_scale", "shaw_clip_minus_one", "rope_matrix_transposed",
                 "alibi_bias_sign", "alibi_distance_plus_one", "ntk_exponent_one",
                 "ntk_exponent_d_over_d_plus_2", "dynamic_no_floor", "yarn_paper_ramp_over_beta",
                 "bloom_ignores_padding", "adam_no_bias_correction", "lab_causal_mask_removed"):
        assert name in names, name
    assert set(mutants.FIRST) <= names


def test_patched_lines_name_the_lines_of_the_old_text():
    m = mutants.Mutant("x", "course_utils/x.py", "b = 2\nc = 3", "b = 3\nc = 3", "formula", "d")
    assert mutants.patched_lines(m, "a = 1\nb = 2\nc = 3\n") == [2, 3]


def test_imports_are_found_in_every_spelling():
    found = mutants._imports_of_source(
        "import course_utils.rope\nfrom course_utils.lab import model\n"
        "from course_utils.scaling import rope_scaling\n")
    assert {"course_utils.rope", "course_utils.lab.model", "course_utils.scaling"} <= found
    relative = mutants._imports_of_source("from ..rope import apply_rope\nfrom . import tasks\n",
                                          "course_utils.lab.model")
    assert {"course_utils.rope", "course_utils.lab.tasks"} <= relative


def test_users_follow_imports_through_course_utils():
    closure = mutants.import_closure(ROOT)
    assert "course_utils.rope" in closure["course_utils.lab.model"]
    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb"))
    direct = mutants.users(ROOT, notebooks, closure, "rope", transitive=False)
    through = mutants.users(ROOT, notebooks, closure, "rope", transitive=True)
    assert "notebooks/05_rope.ipynb" in direct
    assert set(direct) <= set(through)
    assert "notebooks/03_learned.ipynb" not in through  # chapter 03 never loads rope.py


def _run(*lines, error=None):
    return mutants.summarise({"cells": [{"index": 3, "text": "".join(line + "\n" for line in lines),
                                         "error": error}]})


def test_compare_names_the_checks_a_mutant_fails():
    baseline = _run("PASS  angles agree  [paper: Su et al. 2021, eq. 34]", "PASS  norm kept",
                    "TRY AGAIN  Exercise 5.1: off by one")
    mutated = _run("FAILED angles agree: 3 of 4 elements differ", "PASS  norm kept",
                   "TRY AGAIN  Exercise 5.1: off by one", "TRY AGAIN  Exercise 5.2: layout")
    outcome = mutants.compare(baseline, mutated)
    assert outcome["checks"] == ["angles agree", "exercise Exercise 5.2 (TRY AGAIN)"]
    assert outcome["errors"] == [] and outcome["output_changed"]
    crashed = mutants.compare(baseline, _run("PASS  norm kept", error="ValueError: bad"))
    assert crashed["checks"] == [] and crashed["errors"] == ["cell 3: ValueError: bad"]
    assert crashed["missing"] == 1
    colon = mutants.compare(_run("PASS  RoPE: angles agree  [closed form: eq. 3 above]"),
                            _run("FAILED RoPE: angles agree: 1 of 4 elements differ"))
    assert colon["checks"] == ["RoPE: angles agree"]
    same = mutants.compare(baseline, baseline)
    assert same == {"checks": [], "errors": [], "missing": 0, "output_changed": False,
                    "seconds": None}


def test_recording_checks_print_failures_and_go_on(monkeypatch):
    source = (ROOT / "course_utils" / "checks.py").read_text() + mutants.RECORDING
    monkeypatch.setenv(mutants.RECORD_VARIABLE, "1")
    namespace = {"__name__": "recording_checks"}
    exec(compile(source, "checks.py", "exec"), namespace)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    namespace["check_close"](1.0, 2.0, name="one is two", witness="closed form: a made-up claim")
    namespace["check_true"](True, name="true holds", witness="closed form: a made-up claim")
    with pytest.raises(TypeError):  # a wrong call still raises: only failed claims are recorded
        namespace["check_true"]([True], name="bad call", witness="closed form: a made-up claim")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("FAILED one is two: ")
    assert lines[1].startswith("PASS  true holds")
    monkeypatch.delenv(mutants.RECORD_VARIABLE)
    plain = {"__name__": "plain_checks"}
    exec(compile(source, "checks.py", "exec"), plain)
    with pytest.raises(AssertionError):
        plain["check_close"](1.0, 2.0, name="one is two", witness="closed form: a made-up claim")


def test_fingerprint_ignores_a_reworded_docstring_but_not_a_moved_line(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('def f(x):\n    """Twice x."""\n    return 2 * x\n')
    first = mutants.fingerprint(path)
    path.write_text('def f(x):\n    """Two times x."""\n    return 2 * x\n')
    assert mutants.fingerprint(path) == first  # the same code on the same lines
    path.write_text('def f(x):\n    """Two times x.\n    """\n    return 2 * x\n')
    assert mutants.fingerprint(path) != first  # coverage's line numbers moved
    path.write_text('def f(x):\n    """Twice x."""\n    return 3 * x\n')
    assert mutants.fingerprint(path) != first


def test_a_baseline_without_the_kernel_s_coverage_filters_nothing():
    """Coverage saved only by worker processes must not rule a notebook out."""
    measured = {"coverage": {"course_utils/checks.py": [1, 5, 233], "course_utils/rope.py": [47]}}
    assert mutants.kernel_measured(measured, 233)
    assert not mutants.kernel_measured({"coverage": {"course_utils/rope.py": [47]}}, 233)
    assert not mutants.kernel_measured({"coverage": None}, 233)
