"""Assertions that turn a demo into a checked demo.

Each check prints one deterministic line, ``PASS  <name>``, when the claim holds and raises
:class:`AssertionError` with the evidence when it does not. Nothing here only prints on failure.
"""

from __future__ import annotations

import numbers
import textwrap

import numpy as np

__all__ = ["check_close", "check_true", "check_raises"]


def _require_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a non-empty string describing the claim, got {name!r}")
    return name


def _require_tolerance(value: object, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{arg} must be a non-negative real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{arg} must be a non-negative finite number, got {value!r}")
    return value


def _as_numeric_array(value: object, arg: str) -> np.ndarray:
    try:
        array = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{arg} must be a number or an array of numbers, got {value!r}") from exc
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)
    ):
        raise TypeError(
            f"{arg} must be a number or an array of numbers, got dtype {array.dtype} ({value!r:.80})"
        )
    return array


def check_close(actual, expected, *, name, rtol=1e-7, atol=0.0):
    """Check that ``actual`` equals ``expected`` elementwise within tolerances.

    Passes when ``|actual - expected| <= atol + rtol * |expected|`` everywhere (as
    :func:`numpy.isclose`), the shapes are equal and neither side has NaN.

    Parameters
    ----------
    actual, expected : scalar or array_like
        Numbers to compare. Shapes must match exactly (no broadcasting).
    name : str
        What is being claimed; printed as ``PASS  <name>``.
    rtol, atol : float
        Relative and absolute tolerance.

    Raises
    ------
    AssertionError
        With the shapes, the max absolute and relative error, where it occurs, and the tolerances.
    """
    name = _require_name(name)
    rtol = _require_tolerance(rtol, "rtol")
    atol = _require_tolerance(atol, "atol")
    a = _as_numeric_array(actual, "actual")
    e = _as_numeric_array(expected, "expected")
    if a.shape != e.shape:
        raise AssertionError(
            f"FAILED {name}: shape mismatch, actual {a.shape} vs expected {e.shape}"
        )
    a64 = a.astype(np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64)
    e64 = e.astype(a64.dtype)
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    if nan_a.any() or nan_e.any():
        raise AssertionError(
            f"FAILED {name}: NaN present ({int(nan_a.sum())} in actual, {int(nan_e.sum())} in "
            f"expected), shape {a.shape}"
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        abs_err = np.abs(a64 - e64)
        inf_equal = np.isinf(a64) & np.isinf(e64) & (a64 == e64)
        abs_err = np.where(inf_equal, 0.0, abs_err)
        rel_err = np.where(abs_err == 0, 0.0, abs_err / np.abs(e64))
        ok = abs_err <= atol + rtol * np.abs(e64)
    any_inf = np.isinf(a64) | np.isinf(e64)
    ok = np.where(any_inf, inf_equal, ok)
    if not np.all(ok):
        worst = np.unravel_index(int(np.argmax(np.where(ok, -np.inf, abs_err))), a.shape or (1,))
        worst_index = tuple(int(i) for i in worst) if a.shape else ()
        raise AssertionError(
            f"FAILED {name}: {int((~ok).sum())} of {ok.size} elements differ; shape {a.shape}; "
            f"max abs error {float(np.max(abs_err)):.3e}, max rel error "
            f"{float(np.max(rel_err)):.3e}; worst at index {worst_index}: actual "
            f"{a64[worst] if a.shape else a64} vs expected {e64[worst] if e.shape else e64}; "
            f"tolerances rtol={rtol:g}, atol={atol:g}"
        )
    print(f"PASS  {name}")


def check_true(condition, *, name):
    """Check that ``condition`` is true.

    ``condition`` must be a Python or NumPy boolean (an array must be reduced with ``.all()`` or
    ``.any()`` first, so a reader sees which was meant). Prints ``PASS  <name>`` or raises
    :class:`AssertionError`.
    """
    name = _require_name(name)
    if isinstance(condition, np.ndarray):
        if condition.shape != ():
            raise TypeError(
                f"condition must be a single boolean, got an array of shape {condition.shape}; "
                "reduce it with .all() or .any()"
            )
        condition = condition[()]
    if not isinstance(condition, (bool, np.bool_)):
        raise TypeError(f"condition must be a boolean, got {type(condition).__name__}: {condition!r}")
    if not bool(condition):
        raise AssertionError(f"FAILED {name}: condition is False")
    print(f"PASS  {name}")


def check_raises(func, exception, *, name, match=None):
    """Check that calling ``func()`` raises ``exception`` (whose message contains ``match``).

    Prints ``PASS  <name>`` followed by the error message (wrapped at 88 characters), so a
    notebook shows what a learner would see.
    """
    name = _require_name(name)
    if not callable(func):
        raise TypeError(f"func must be callable with no arguments, got {func!r}")
    expected = exception if isinstance(exception, tuple) else (exception,)
    if not expected or not all(isinstance(e, type) and issubclass(e, Exception) for e in expected):
        raise TypeError(f"exception must be an exception class or a tuple of them, got {exception!r}")
    if match is not None and not isinstance(match, str):
        raise TypeError(f"match must be a string or None, got {match!r}")
    expected_names = " or ".join(e.__name__ for e in expected)
    try:
        func()
    except expected as exc:
        message = str(exc)
        if match is not None and match not in message:
            raise AssertionError(
                f"FAILED {name}: raised {type(exc).__name__} but the message {message!r} "
                f"does not contain {match!r}"
            ) from exc
        shown = textwrap.fill(f"{type(exc).__name__}: {message}", 88, initial_indent=" " * 6,
                              subsequent_indent=" " * 8, break_long_words=False,
                              break_on_hyphens=False)
        print(f"PASS  {name}\n{shown}")
        return
    raise AssertionError(f"FAILED {name}: no {expected_names} was raised")
