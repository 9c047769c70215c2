import math

import numpy as np
import pytest

from course_utils.checks import WITNESS_KINDS, check_close, check_raises, check_true, parse_witness

W = "invariant: a value the test chose"


def test_check_close_passes_and_prints_one_line(capsys):
    check_close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]), witness=W, name="equal arrays")
    assert capsys.readouterr().out == "PASS  equal arrays  [invariant: a value the test chose]\n"


def test_check_close_scalar_against_formula(capsys):
    check_close(math.sqrt(2) ** 2, 2.0, witness=W, name="sqrt(2)^2", rtol=1e-12)
    assert capsys.readouterr().out.startswith("PASS")


def test_check_close_fails_on_wrong_value_with_evidence():
    with pytest.raises(AssertionError) as info:
        check_close(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 3.0]), witness=W, name="wrong", rtol=1e-6,
                    atol=1e-9)
    message = str(info.value)
    for fragment in ("wrong", "1 of 3", "shape (3,)", "max abs error 5.000e-01", "max rel error 2.000e-01",
                     "index (1,)", "rtol=1e-06", "atol=1e-09"):
        assert fragment in message


def test_check_close_fails_on_shape_mismatch_even_if_broadcastable():
    with pytest.raises(AssertionError, match=r"shape mismatch, actual \(1, 3\) vs expected \(3,\)"):
        check_close(np.zeros((1, 3)), np.zeros(3), witness=W, name="shapes")


@pytest.mark.parametrize("actual, expected", [([np.nan], [np.nan]), ([np.nan], [1.0]), ([1.0], [np.nan])])
def test_check_close_fails_on_nan(actual, expected):
    with pytest.raises(AssertionError, match="NaN"):
        check_close(np.array(actual), np.array(expected), witness=W, name="nan")


def test_check_close_matching_infinities_pass_and_opposite_fail():
    check_close(np.array([-np.inf, 1.0]), np.array([-np.inf, 1.0]), witness=W, name="inf")
    with pytest.raises(AssertionError):
        check_close(np.array([np.inf]), np.array([-np.inf]), witness=W, name="opposite inf")


def test_check_close_tolerances_are_respected():
    check_close(1.0 + 1e-3, 1.0, witness=W, name="within rtol", rtol=2e-3)
    with pytest.raises(AssertionError):
        check_close(1.0 + 1e-3, 1.0, witness=W, name="outside rtol", rtol=5e-4)
    check_close(1e-10, 0.0, witness=W, name="within atol", atol=1e-9)


@pytest.mark.parametrize("kwargs, error", [
    ({"name": ""}, TypeError), ({"name": 3}, TypeError),
    ({"name": "x", "rtol": -1.0}, ValueError), ({"name": "x", "atol": "0"}, TypeError),
])
def test_check_close_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        check_close(1.0, 1.0, witness=W, **kwargs)


def test_check_close_rejects_non_numeric():
    with pytest.raises(TypeError, match="actual"):
        check_close("abc", 1.0, witness=W, name="strings")


def test_check_true(capsys):
    check_true(np.float64(2.0) > 1.0, witness=W, name="numpy bool")
    check_true(True, witness=W, name="python bool")
    assert capsys.readouterr().out == (f"PASS  numpy bool  [{W}]\n" f"PASS  python bool  [{W}]\n")
    with pytest.raises(AssertionError, match="FAILED false claim"):
        check_true(False, witness=W, name="false claim")


def test_check_true_refuses_arrays_and_non_booleans():
    with pytest.raises(TypeError, match=r"\.all\(\) or \.any\(\)"):
        check_true(np.array([True, False]), witness=W, name="array")
    with pytest.raises(TypeError, match="boolean"):
        check_true(1, witness=W, name="int")


def test_check_raises(capsys):
    check_raises(lambda: int("x"), ValueError, name="int('x') fails", match="invalid literal")
    assert capsys.readouterr().out.startswith(
        "PASS  int('x') fails  [raises ValueError]\n      ValueError: invalid literal")
    with pytest.raises(AssertionError, match="no ValueError"):
        check_raises(lambda: 1, ValueError, name="nothing raised")
    with pytest.raises(AssertionError, match="does not contain"):
        check_raises(lambda: int("x"), ValueError, name="wrong message", match="zzz")
    with pytest.raises(KeyError):  # an unexpected error type is not swallowed
        check_raises(lambda: {}["k"], ValueError, name="other error")


@pytest.mark.parametrize("kind", WITNESS_KINDS)
def test_every_witness_kind_is_printed_after_the_name(capsys, kind):
    check_true(True, name="claim", witness=f"{kind}: where it comes from")
    assert capsys.readouterr().out == f"PASS  claim  [{kind}: where it comes from]\n"


@pytest.mark.parametrize("witness, error, match", [
    (None, TypeError, "witness is required"),
    (3, TypeError, "witness must be a string"),
    ("Su et al. 2021, eq. 34", ValueError, "must start with one of paper"),
    ("tautology: x == x", ValueError, "must start with one of paper"),
    ("paper:", ValueError, "names its kind but not what it is"),
    ("paper:  ", ValueError, "names its kind but not what it is"),
    ("paper: abc", ValueError, "names its kind but not what it is"),
])
def test_a_check_without_a_proper_witness_is_refused_before_it_runs(capsys, witness, error, match):
    for call in (lambda: check_true(True, name="claim", witness=witness),
                 lambda: check_close(1.0, 1.0, name="claim", witness=witness)):
        with pytest.raises(error, match=match):
            call()
    assert capsys.readouterr().out == ""


def test_a_witness_is_required_even_when_the_claim_is_false():
    with pytest.raises(TypeError, match="witness is required"):
        check_true(False, name="false claim")


def test_parse_witness_splits_kind_and_detail():
    assert parse_witness("closed form:  derived  above") == ("closed form", "derived above")


def test_a_long_witness_continues_on_indented_lines_within_88_characters(capsys):
    detail = "Peng et al. 2023, section 3.2, equation 23 with the ramp in turns " * 2
    name = ("a claim with a long name " * 2).strip()
    check_true(True, name=name, witness=f"paper: {detail}")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "PASS  " + name
    assert lines[1].startswith("      [paper: Peng et al.")
    assert all(line.startswith("       ") for line in lines[2:])
    assert lines[-1].endswith("]") and all(len(line) <= 88 for line in lines)
