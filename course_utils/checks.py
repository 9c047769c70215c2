"""Assertions that turn a demo into a checked demo.

Each check prints one deterministic line, ``PASS  <name>  [<witness>]``, when the claim holds
and raises :class:`AssertionError` with the evidence when it does not. Nothing here only prints on
failure.

The witness says where the expected value comes from, as ``"<kind>: <detail>"`` with a kind from
:data:`WITNESS_KINDS`:

- ``paper``: a published equation, table or figure, cited by number
  (``"paper: Su et al. 2021, eq. 34"``);
- ``config``: a released checkpoint's configuration, kept as data in ``course_utils/data/configs``;
- ``library``: a library's output stored as data with the library, its version and the function
  (``course_utils/data/library``, see :func:`course_utils.data.library_record`);
- ``brute force``: the same quantity by a different, slower route in the same cell (a loop, a full
  matrix, a dense softmax, a numerical derivative);
- ``closed form``: a value derived by hand in the text above the check;
- ``invariant``: a property the tested code does not impose by construction, tried on inputs that
  were not built to satisfy it.

A function compared with a copy of its own formula, a numpy identity or arithmetic on constants is
not a check: print it as a demonstration instead.
"""

from __future__ import annotations

import numbers
import textwrap

import numpy as np

__all__ = ["check_close", "check_true", "check_raises", "WITNESS_KINDS", "parse_witness"]

#: The kinds of witness a check may name, in the order the witness report lists them.
WITNESS_KINDS = ("paper", "config", "library", "brute force", "closed form", "invariant")
_LINE = 88  # printed lines fit the notebooks' line length


def _require_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a non-empty string describing the claim, got {name!r}")
    return name


def parse_witness(witness: object) -> tuple[str, str]:
    """Split ``"<kind>: <detail>"`` into ``(kind, detail)``; raise if either part is missing.

    ``kind`` must be one of :data:`WITNESS_KINDS`; ``detail`` says which equation, config, library
    function, route or property, specifically enough that a reader can go and look.
    """
    example = "e.g. witness='paper: Su et al. 2021, eq. 34'"
    if witness is None:
        raise TypeError(
            "witness is required: say where the expected value comes from, as '<kind>: <detail>' "
            f"with kind one of {', '.join(WITNESS_KINDS)} ({example})")
    if not isinstance(witness, str):
        raise TypeError(f"witness must be a string '<kind>: <detail>', got {witness!r:.80}")
    kind, sep, detail = witness.partition(":")
    kind, detail = kind.strip(), " ".join(detail.split())
    if not sep or kind not in WITNESS_KINDS:
        raise ValueError(
            f"witness must start with one of {', '.join(WITNESS_KINDS)} and a colon, got "
            f"{witness!r:.80} ({example})")
    if len(detail) < 10:  # a word or two says nothing a reader can look up
        raise ValueError(f"witness {witness!r} names its kind but not what it is: add which "
                         f"equation, config, function, route or property ({example})")
    return kind, detail


def _pass_line(name: str, witness: str) -> str:
    """``PASS  name  [witness]`` on one line if it fits, else the witness on indented lines."""
    kind, detail = parse_witness(witness)
    tag = f"[{kind}: {detail}]"
    line = f"PASS  {name}  {tag}"
    if len(line) <= _LINE:
        return line
    wrapped = textwrap.fill(tag, _LINE, initial_indent=" " * 6, subsequent_indent=" " * 7,
                            break_long_words=False, break_on_hyphens=False)
    return f"PASS  {name}\n{wrapped}"


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


def check_close(actual, expected, *, name, witness=None, rtol=1e-7, atol=0.0):
    """Check that ``actual`` equals ``expected`` elementwise within tolerances.

    Passes when ``|actual - expected| <= atol + rtol * |expected|`` everywhere (as
    :func:`numpy.isclose`), the shapes are equal and neither side has NaN.

    Parameters
    ----------
    actual, expected : scalar or array_like
        Numbers to compare. Shapes must match exactly (no broadcasting).
    name : str
        What is being claimed; printed as ``PASS  <name>  [<witness>]``.
    witness : str
        Where ``expected`` comes from, ``"<kind>: <detail>"`` (see the module docstring).
        Required.
    rtol, atol : float
        Relative and absolute tolerance.

    Raises
    ------
    AssertionError
        With the shapes, the max absolute and relative error, where it occurs, and the tolerances.
    """
    name = _require_name(name)
    line = _pass_line(name, witness)
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
    print(line)


def check_true(condition, *, name, witness=None):
    """Check that ``condition`` is true.

    ``condition`` must be a Python or NumPy boolean (an array must be reduced with ``.all()`` or
    ``.any()`` first, so a reader sees which was meant). ``witness`` (required) says where the
    claim's standard comes from, as in :func:`check_close`. Prints ``PASS  <name>  [<witness>]``
    or raises :class:`AssertionError`.
    """
    name = _require_name(name)
    line = _pass_line(name, witness)
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
    print(line)


def check_raises(func, exception, *, name, match=None):
    """Check that calling ``func()`` raises ``exception`` (whose message contains ``match``).

    Prints ``PASS  <name>  [raises <Exception>]`` followed by the error message (wrapped at 88
    characters), so a notebook shows what a learner would see. Its witness is the message itself,
    printed below the line; the witness report counts these lines as error checks.
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
        head = f"PASS  {name}  [raises {type(exc).__name__}]"
        if len(head) > _LINE:
            head = f"PASS  {name}\n      [raises {type(exc).__name__}]"
        print(f"{head}\n{shown}")
        return
    raise AssertionError(f"FAILED {name}: no {expected_names} was raised")
