"""Fuzz every public function of course_utils with arbitrary arguments.

Each call must either return a finite result (of the documented shape, for the functions with a
targeted test below) or raise one of the documented errors, ValueError or TypeError, whose message
names one of the arguments passed. Also documented, and so allowed: IndexError for a learned
table's lookup beyond ``max_len``; AssertionError from the checks of ``course_utils.checks``
(raising it is their job); the "not attempted" signal of ``exercises.answer_of``. Any other
exception, or a NaN or +inf in a result, is a defect.

How the arguments are drawn: every parameter gets a plausible value chosen by its name (a small
dimension for ``head_dim``, a finite array for ``positions``, a valid layout for ``layout``), and
then, in most examples, one parameter is replaced by junk (None, strings, NaN, inf, negative,
huge or fractional numbers, arrays of the wrong dtype or shape, ragged lists). So calls get past
the first check and meet the junk deep inside the function. Public methods of returned objects
(a learned table's lookup, a KV cache) are called the same way.

Allowances, each documented by the function it concerns:

* ``-inf`` where a function returns an attention bias on purpose: ``alibi_bias(causal=True)`` puts
  ``-inf`` above the diagonal (the causal mask is part of the bias) and ``practice.mask_to_bias``
  turns blocked entries into ``-inf``. Nowhere else.
* NaN in the lab's accuracies (``lab.train.evaluate``, ``lab.train.Experiment``): a model with a
  learned table has no output beyond its ``max_len``, and NaN marks "not scored".
* An exception raised by a callable the test itself passed in (``check_raises``'s ``func``, a
  stub handed to a checker) propagates unchanged, by design.
* MemoryError is out of scope: sizes are drawn small (a few dozen per dimension at most), or
  absurd (2**63 and beyond), which must be rejected as ValueError before any allocation.

The functions are discovered through each module's ``__all__``, so a function added later is
fuzzed without editing this file (a parameter name not in ``PLAUSIBLE`` just always gets junk).
Hypothesis runs derandomised (the same examples on every run, no example database) with a modest
number of examples: the whole file takes seconds.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import traceback
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import course_utils  # noqa: E402
import course_utils.exercises  # noqa: E402
from course_utils import (  # noqa: E402
    alibi,
    attention,
    learned,
    practice,
    relative,
    rope,
    scaling,
    sinusoidal,
)

FUZZ = settings(derandomize=True, deadline=None, max_examples=25, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
TARGETED = settings(FUZZ, max_examples=40)

ALLOWED = (ValueError, TypeError)
EXTRA_ALLOWED = {
    # Checks raise AssertionError when a claim is false: that is what they are for.
    "course_utils.checks.check_close": (AssertionError,),
    "course_utils.checks.check_true": (AssertionError,),
    "course_utils.checks.check_raises": (AssertionError,),
    # The command's entry point: argparse exits with status 2, and a usage line, on bad arguments.
    "course_utils.explain.main": (SystemExit,),
    # A learned table has no row beyond max_len.
    "course_utils.learned.LearnedPositionalEmbedding": (IndexError,),
    # Documented: a path that is not the model file is refused with the command that fetches it,
    # and hashing a file that is not there raises the operating system's error.
    "course_utils.real_model.files.require_model": (
        importlib.import_module("course_utils.real_model.files").ModelNotAvailableError,),
    "course_utils.real_model.files.require_text": (
        importlib.import_module("course_utils.real_model.files").ModelNotAvailableError,),
    "course_utils.real_model.files.sha256_file": (OSError,),
    # Documented: signals "not attempted" to grade(), which turns it into that verdict.
    "course_utils.exercises.answer_of": (course_utils.exercises._NotAttempted,),
}
NAN_ALLOWED = {
    # Documented: accuracy is NaN where a learned table has no row for the test length.
    "course_utils.lab.train.evaluate",
    "course_utils.lab.train.Experiment",  # its accuracy (and mean_accuracy), likewise
}
# Functions that return what the caller gave them: answer_of hands the learner's own answer,
# NaN or inf included, to grade(), which judges it.
PASS_THROUGH = {"course_utils.exercises.answer_of"}
NEG_INF_ALLOWED = {
    "course_utils.alibi.alibi_bias",  # causal=True: -inf above the diagonal is the causal mask
    "course_utils.practice.mask_to_bias",  # blocked entries become -inf by definition
}
# Names an error message may use for an argument besides the parameter's own name.
ARGUMENT_ALIASES = {
    # A check called without a witness is refused, naming the missing argument.
    "course_utils.checks.check_close": {"witness"},
    "course_utils.checks.check_true": {"witness"},
}
# Functions that train many models for many steps: the listed parameters always get junk, so
# the call is rejected before any training (their other arguments are still fuzzed).
ALWAYS_JUNK = {
    "course_utils.lab.train.run_experiment": ("task",),
    "course_utils.lab.extension.run_context_extension": ("task",),
    "course_utils.lab.extension.prefix_dynamic": ("task",),
    "course_utils.lab.extension.ceiling_curve": ("task",),
}

# Functions that download, write or load the released model's files and text: a junk path would
# make them fetch 93 MB into a folder named by the junk, or read 0.5 GB of weights per example. Their
# argument checks are tested with named bad arguments in tests/test_real_model.py.
NOT_FUZZED = {
    "course_utils.real_model.files.fetch",
    "course_utils.real_model.files.fetch_model",
    "course_utils.real_model.files.extract_gguf",
    "course_utils.real_model.files.extract_text",
    "course_utils.real_model.model.Model",
    "course_utils.real_model.model.load_model",
    "course_utils.real_model.model.read_config",
}


def _public_callables():
    found = {}
    modules = [course_utils] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(course_utils.__path__, "course_utils.")
        if not info.name.rsplit(".", 1)[-1].startswith("_")
    ]
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not callable(obj) or getattr(obj, "__module__", None) != module.__name__:
                continue
            try:
                parameters = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            if not any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                       for p in parameters.values()):
                continue  # nothing to pass a bad value to
            if f"{module.__name__}.{name}" not in NOT_FUZZED:
                found[f"{module.__name__}.{name}"] = obj
    return dict(sorted(found.items()))


PUBLIC = _public_callables()


# ---------------------------------------------------------------------------- junk arguments
_SPECIAL = [None, True, False, 0, 1, -1, 2, 3, 4, 7, 8, 16, -8, 2**63, -(2**63), 10**30,
            0.0, 0.5, -0.5, 1.5, 2.0, 8.0, 1e308, -1e308, 5e-324, float("nan"), float("inf"),
            -float("inf"), "abc", "", "float32", "half", "interleaved", "causal", b"x",
            complex(1, 1), [], [1, 2], [[1, 2], [3]], ["a", "b"], [1.5, float("nan")], (), (2, 3),
            {}, {"a": 1}, object(), np.float64, np.int32, "linear", "yarn", np.float16(1.0),
            np.int8(-3), np.uint64(2**64 - 1), np.array(5), np.array(2.5), np.array([]),
            np.array(["x"]), np.array([True, False]), np.zeros((2, 0)), np.zeros((0, 4)),
            np.full((2, 4), np.nan), np.full(3, np.inf), np.array([1 + 2j]),
            lambda *a, **k: None, lambda *a, **k: 1.0, print]


@st.composite
def _any_array(draw):
    dtype = draw(st.sampled_from(["float64", "float32", "float16", "int64", "int32", "uint8",
                                  "bool", "complex128"]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6))
    if dtype in ("float64", "float32", "float16"):
        elements = st.floats(allow_nan=True, allow_infinity=True,
                             width=int(np.dtype(dtype).itemsize * 8))
    elif dtype == "bool":
        elements = st.booleans()
    elif dtype == "complex128":
        elements = st.complex_numbers(max_magnitude=1e6, allow_nan=False)
    else:
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    return draw(hnp.arrays(dtype, shape, elements=elements))


JUNK = st.one_of(
    st.sampled_from(_SPECIAL),
    st.integers(-10, 64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    _any_array(),
    st.lists(st.integers(-5, 40), max_size=6),
    st.lists(st.floats(-1e3, 1e3), max_size=6),
)


def _check_result(value, qualname, path="result"):
    """No NaN and no +inf anywhere in the result; -inf only where documented."""
    if qualname in PASS_THROUGH:
        return
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            assert qualname in NAN_ALLOWED or not np.isnan(value).any(), f"{qualname}: NaN in {path}"
            assert not np.isposinf(value.real).any(), f"{qualname}: +inf in {path}"
            if qualname not in NEG_INF_ALLOWED:
                assert not np.isneginf(value.real).any(), f"{qualname}: -inf in {path}"
    elif isinstance(value, (float, np.floating)):
        assert math.isfinite(value) or (qualname in NAN_ALLOWED and math.isnan(value)), (
            f"{qualname}: non-finite {path} {value!r}")
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value[:50]):
            _check_result(item, qualname, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in list(value.items())[:50]:
            _check_result(item, qualname, f"{path}[{key!r}]")


def _call(qualname, func, args=(), kwargs=None, *, names=None):
    """Call ``func``; return its result, or None after an allowed exception.

    With ``names``, a ValueError/TypeError must mention one of them (the argument at fault).
    """
    allowed = ALLOWED + EXTRA_ALLOWED.get(qualname, ())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                result = func(*args, **(kwargs or {}))
    except (Exception, SystemExit) as exc:  # SystemExit: a command's entry point, if allowed
        if not isinstance(exc, allowed):
            # An error raised by a callable this test passed in (check_raises's func, a stub
            # given to a checker) is the caller's own and propagates unchanged, by design.
            if traceback.extract_tb(exc.__traceback__)[-1].filename == __file__:
                return None
            raise
        if isinstance(exc, ALLOWED):
            message = str(exc)
            assert message, f"{qualname} raised {type(exc).__name__} without a message"
            if names is not None:
                assert any(name in message for name in names), (
                    f"{qualname} raised {type(exc).__name__}({message!r}), which names none of "
                    f"the arguments {sorted(names)}")
        return None
    finally:
        plt.close("all")
    _check_result(result, qualname)
    return result


# Plausible values by parameter name, so that most calls get past the first check and a single
# junk argument is met deep inside the function. A name not listed gets junk.
def _floats(shape, low=-10.0, high=10.0):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high, allow_nan=False))


def _small_shape(min_dims=1, max_dims=3, min_side=1, max_side=5):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def _lab_objects():
    from course_utils.lab import model, tasks, train

    configs = [model.ModelConfig(scheme, vocab_size=8, d_model=8, n_heads=2, n_layers=1,
                                 d_mlp=8, max_len=8) for scheme in model.SCHEMES]
    params = [model.init_params(c) for c in configs]
    task = tasks.make_task("copy_back", n_symbols=7)
    tokens = np.random.default_rng(0).integers(0, 8, (2, 5))
    caches = [model.forward(p, tokens, c)[1] for p, c in zip(params, configs, strict=True)]
    experiment = train.run_experiment(task, schemes=("none", "learned"), train_length=6,
                                      multipliers=(1, 4), steps=1, n_test=4, d_model=8,
                                      n_heads=2, n_layers=1, d_mlp=8)
    return configs, params, task, caches, experiment


try:
    _CONFIGS, _PARAMS, _TASK, _CACHES, _EXPERIMENT = _lab_objects()
except Exception:  # a broken lab fails its own tests; here its functions just get junk arguments
    _CONFIGS = _PARAMS = _CACHES = [None]
    _TASK = _EXPERIMENT = None
SMALL_INT = st.integers(1, 10)
EVEN = st.integers(1, 8).map(lambda n: 2 * n)
FLOAT_ARRAY = _floats(_small_shape())
INT_ARRAY = hnp.arrays(np.int64, _small_shape(), elements=st.integers(-20, 20))
MASK = hnp.arrays(np.int64, _small_shape(2, 2), elements=st.integers(0, 1))
PLAUSIBLE = {
    **dict.fromkeys(["n_heads", "n_queries", "max_len", "new_max_len", "batch", "length",
                     "n_symbols", "n_values", "max_position", "n_tokens", "train_length",
                     "n_sequences", "n_directions", "decimals", "min_distance", "offset"],
                    SMALL_INT),
    **dict.fromkeys(["n_keys", "n_positions", "seq_len"],
                    st.one_of(st.none(), st.integers(0, 12))),
    **dict.fromkeys(["head_dim", "d_model", "rotary_dim"], EVEN),
    "num_buckets": st.integers(4, 40), "max_distance": st.integers(0, 200),
    "original_max_position_embeddings": st.integers(1, 10**5),
    **dict.fromkeys(["base", "rope_base"], st.floats(1.5, 1e6)),
    **dict.fromkeys(["factor", "scale"], st.floats(1.0, 64.0)),
    **dict.fromkeys(["mscale", "alpha", "ridge"], st.floats(0.0, 2.0)),
    "beta": st.floats(2.0, 64.0), "lr": st.floats(1e-4, 1e-1),
    **dict.fromkeys(["positions", "offsets", "relative_distance", "distances", "r", "targets",
                     "data", "x", "weights", "actual", "expected"],
                    st.one_of(FLOAT_ARRAY, INT_ARRAY)),
    **dict.fromkeys(["relative_position", "input_ids", "position_ids", "tokens", "labels",
                     "order"], INT_ARRAY),
    **dict.fromkeys(["position", "k"], st.one_of(st.floats(-1e4, 1e4), st.integers(-50, 50),
                                                 _floats((5, 4)))),
    "q": _floats((3, 4)), "v": st.one_of(_floats((5, 2)), _floats((4,))), "u": _floats((4,)),
    "bias": _floats((3, 5)), "weight": _floats((8, 3)), "table": _floats((32, 2)),
    "inv_freq": hnp.arrays(np.float64, st.integers(1, 8).map(lambda n: (n,)),
                           elements=st.floats(1e-6, 1.0)),
    **dict.fromkeys(["attention_mask", "mask", "allowed"], MASK),
    "lengths": st.lists(st.integers(1, 6), min_size=1, max_size=4),
    "layout": st.sampled_from(["half", "interleaved", "concat"]),
    "method": st.sampled_from(scaling.METHODS), "precision": st.sampled_from(rope.PRECISIONS),
    "convention": st.sampled_from(scaling.DYNAMIC_CONVENTIONS),
    "scheme": st.sampled_from(["none", "sinusoidal", "learned", "t5", "rope", "alibi"]),
    **dict.fromkeys(["causal", "bidirectional", "truncate", "logx", "logy"], st.booleans()),
    "dtype": st.sampled_from([np.float64, np.float32, np.float16, "float32"]),
    "axis": st.integers(-2, 1), "seed": st.integers(0, 5), "steps": st.integers(1, 2),
    **dict.fromkeys(["name", "title", "xlabel", "ylabel", "colorbar_label"],
                    st.sampled_from(["a claim", "copy_back", "recall"])),
    "config": st.sampled_from(_CONFIGS), "params": st.sampled_from(_PARAMS),
    "task": st.just(_TASK), "rng": st.integers(0, 3).map(np.random.default_rng),
    "curves": FLOAT_ARRAY.map(lambda y: {"y": y}),
    "vocab_size": st.integers(2, 10), "d_mlp": st.integers(0, 8), "n_layers": st.integers(1, 2),
    "t5_num_buckets": st.integers(4, 16), "t5_max_distance": st.integers(4, 16),
    "cache": st.sampled_from(_CACHES), "dlogits": _floats((2, 5, 8)),
    "grads": st.sampled_from(_PARAMS).map(lambda p: {k: np.ones_like(v) for k, v in p.items()}),
    "state": st.none(), "experiment": st.just(_EXPERIMENT),
    "condition": st.booleans(), "exception": st.sampled_from([ValueError, TypeError,
                                                              (ValueError, TypeError)]),
    "func": st.sampled_from([lambda: None, lambda: int("x"), lambda: [][1]]),
    "compute_answer": st.sampled_from([lambda: 1.0, lambda: np.ones(3), lambda: "x"]),
    "hints": st.sampled_from([(), [(0.0, "zero is wrong")]]),
    "rtol": st.floats(0, 1e-3), "atol": st.floats(0, 1e-3),
}
# Arrays whose last dimension is even (RoPE's head_dim) or rows summing to 1 (attention weights).
PLAUSIBLE["x"] = st.one_of(PLAUSIBLE["x"], _floats(st.tuples(st.integers(1, 4), EVEN)))
PLAUSIBLE["weights"] = _floats(_small_shape(), 0.01, 1.0).map(
    lambda w: w / w.sum(axis=-1, keepdims=True))
PLAUSIBLE["r"] = st.one_of(PLAUSIBLE["r"], _floats((3, 5, 4)))
PLAUSIBLE["allowed"] = st.one_of(MASK.map(lambda m: m.astype(bool)), MASK)


def _arguments(data, func, qualname):
    """Plausible arguments for ``func``, with (usually) one of them replaced by junk."""
    parameters = [p for p in inspect.signature(func).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    always = ALWAYS_JUNK.get(qualname, ())
    kwargs = {}
    for parameter in parameters:
        name = parameter.name
        required = parameter.default is parameter.empty
        if not (required or name in always or data.draw(st.booleans(), label=f"pass {name}")):
            continue
        plausible = PLAUSIBLE.get(name)
        kwargs[name] = data.draw(JUNK if plausible is None or name in always else plausible,
                                 label=name)
    if kwargs and data.draw(st.integers(0, 3), label="mutate?") > 0:
        victim = data.draw(st.sampled_from(sorted(kwargs)), label="junk argument")
        kwargs[victim] = data.draw(JUNK, label=f"junk {victim}")
    return kwargs


@pytest.mark.parametrize("qualname", list(PUBLIC))
@FUZZ
@given(data=st.data())
def test_arbitrary_arguments_raise_documented_errors(qualname, data):
    func = PUBLIC[qualname]
    kwargs = _arguments(data, func, qualname)
    names = set(kwargs) | ARGUMENT_ALIASES.get(qualname, set())
    result = _call(qualname, func, kwargs=kwargs, names=names)
    # Instances of the package's classes: fuzz their public methods too (a learned table's
    # lookup, resizing, a KV cache's append).
    if result is not None and type(result).__module__.startswith("course_utils"):
        for method_name in sorted(vars(type(result))):
            method = getattr(result, method_name)
            if (method_name.startswith("_") and method_name != "__call__") or not callable(method):
                continue
            method_kwargs = _arguments(data, method, qualname)
            _call(qualname, method, kwargs=method_kwargs,
                  names=set(method_kwargs) | ARGUMENT_ALIASES.get(qualname, set()))


def test_every_module_is_covered():
    modules = {name.rsplit(".", 1)[0] for name in PUBLIC}
    for expected in ("course_utils.sinusoidal", "course_utils.rope", "course_utils.alibi",
                     "course_utils.relative", "course_utils.scaling", "course_utils.attention",
                     "course_utils.learned", "course_utils.checks"):
        assert expected in modules
    assert len(PUBLIC) >= 40


# ---------------------------------------------------------------------------- targeted
# Mostly valid arguments with edge cases, so the calls get past validation and the shapes and
# values of the results are checked.
EVEN = st.integers(1, 32).map(lambda n: 2 * n)
SMALL_EVEN = st.integers(1, 8).map(lambda n: 2 * n)
BASES = st.one_of(st.sampled_from([1.0, 2.0, 10.0, 1e4, 5e5, 1e6]),
                  st.floats(1.0, 1e7, allow_nan=False))
POSITIONS = st.one_of(
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=5),
               elements=st.floats(-1e7, 1e7, allow_nan=False)),
    hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=5),
               elements=st.integers(-10**9, 10**9)),
    hnp.arrays(np.float64, st.just((3,)), elements=st.sampled_from([np.nan, np.inf, 1.0])),
)


@TARGETED
@given(positions=POSITIONS, d=EVEN, base=BASES, layout=st.sampled_from(sinusoidal.LAYOUTS),
       dtype=st.sampled_from([np.float64, np.float32, np.float16]))
def test_sinusoidal_encoding_at_shape_and_range(positions, d, base, layout, dtype):
    out = _call("course_utils.sinusoidal.sinusoidal_encoding_at", sinusoidal.sinusoidal_encoding_at,
                (positions, d), {"base": base, "layout": layout, "dtype": dtype})
    if np.isfinite(positions).all() and not (layout == "concat" and d < 4):
        assert out is not None
    if out is not None:
        assert out.shape == positions.shape + (d,) and out.dtype == dtype
        assert np.abs(out.astype(np.float64)).max(initial=0) <= 1.0


@TARGETED
@given(n=st.integers(-3, 50), d=st.integers(-2, 40),
       start=st.one_of(st.integers(-5, 10**7), st.integers(2**53 - 60, 2**53 + 5),
                       st.integers(2**53, 2**64)),
       layout=st.sampled_from(sinusoidal.LAYOUTS))
def test_sinusoidal_encoding_shape(n, d, start, layout):
    out = _call("course_utils.sinusoidal.sinusoidal_encoding", sinusoidal.sinusoidal_encoding,
                (n, d), {"start": start, "layout": layout})
    if start + n > 2**53:  # positions would no longer be exact in float64
        assert out is None
    if out is not None:
        assert out.shape == (n, d)
        if n:
            reference = sinusoidal.sinusoidal_encoding_at(np.array([float(start)]), d,
                                                          layout=layout)
            np.testing.assert_array_equal(out[:1], reference)


@TARGETED
@given(seq=st.integers(0, 6), d=SMALL_EVEN, lead=hnp.array_shapes(min_dims=0, max_dims=2,
                                                                  max_side=3),
       layout=st.sampled_from(rope.LAYOUTS), dtype=st.sampled_from(["float64", "float32",
                                                                    "float16", "int64"]),
       positions=st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6),
                           st.sampled_from([np.nan, np.inf, "3", None])),
       partial=st.booleans(), base=BASES)
def test_apply_rope_shape_and_norm(seq, d, lead, layout, dtype, positions, partial, base):
    x = np.random.default_rng(seq + d).normal(size=lead + (seq, d)).astype(dtype)
    rotary_dim = d // 2 + (d // 2) % 2 if partial else None
    out = _call("course_utils.rope.apply_rope", rope.apply_rope, (x, positions),
                {"layout": layout, "base": base, "rotary_dim": rotary_dim})
    if out is None:
        return
    assert out.shape == x.shape
    assert out.dtype == (x.dtype if dtype != "int64" else np.float64)
    if dtype in ("float64", "int64"):
        np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1),
                                   rtol=1e-9, atol=1e-9)


@TARGETED
@given(n_heads=st.integers(-2, 40), n_queries=st.integers(-2, 12), extra=st.integers(-3, 12),
       causal=st.sampled_from([True, False, 1, None]))
def test_alibi_bias_shape_and_sign(n_heads, n_queries, extra, causal):
    n_keys = n_queries + extra
    out = _call("course_utils.alibi.alibi_bias", alibi.alibi_bias, (n_heads, n_queries, n_keys),
                {"causal": causal})
    if out is None:
        return
    assert out.shape == (n_heads, n_queries, n_keys)
    assert (out <= 0).all()
    query = np.arange(n_keys - n_queries, n_keys)[:, None]
    above = np.arange(n_keys)[None, :] > query
    assert np.isneginf(out[:, above]).all() if causal else np.isfinite(out).all()
    assert np.isfinite(out[:, ~above]).all()


@TARGETED
@given(rel=st.one_of(
           hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=30),
                      elements=st.integers(-(2**63) + 1, 2**63 - 1)),
           hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=2, min_side=9, max_side=30),
                      elements=st.integers(-300, 300)),
           hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=5),
                      elements=st.floats(-1e20, 1e20))),
       bidirectional=st.booleans(), num_buckets=st.integers(-1, 80),
       max_distance=st.integers(-1, 10**6))
def test_t5_buckets_in_range(rel, bidirectional, num_buckets, max_distance):
    out = _call("course_utils.relative.t5_relative_position_bucket",
                relative.t5_relative_position_bucket, (rel,),
                {"bidirectional": bidirectional, "num_buckets": num_buckets,
                 "max_distance": max_distance})
    if out is None:
        return
    assert out.shape == rel.shape and out.dtype == np.int64
    assert ((out >= 0) & (out < num_buckets)).all()


@TARGETED
@given(method=st.sampled_from(scaling.METHODS + ("ntk-aware", "Linear")),
       head_dim=st.integers(-2, 64), base=st.one_of(BASES, st.sampled_from([0.5, -1.0, np.nan])),
       factor=st.one_of(st.floats(0.5, 1e4), st.sampled_from([np.inf, 1e300])),
       length=st.integers(-1, 10**6), seq_len=st.one_of(st.none(), st.integers(-1, 10**7)))
def test_rope_scaling_shapes(method, head_dim, base, factor, length, seq_len):
    n = max(head_dim // 2, 1)
    params = {"llama3": {"low_freq_factor": 1.0, "high_freq_factor": 4.0},
              "longrope": {"short_factor": [1.0] * n, "long_factor": [2.0] * n}}.get(method, {})
    out = _call("course_utils.scaling.rope_scaling", scaling.rope_scaling, (method, head_dim),
                {"base": base, "factor": factor, "original_max_position_embeddings": length,
                 "seq_len": seq_len, **params})
    if out is None:
        return
    inv_freq, attention_factor = out
    assert inv_freq.shape == (head_dim // 2,)
    assert (inv_freq > 0).all() and np.isfinite(inv_freq).all()
    assert math.isfinite(attention_factor) and attention_factor > 0


@TARGETED
@given(x=_any_array(), axis=st.integers(-5, 5))
def test_softmax_rows_sum_to_one(x, axis):
    out = _call("course_utils.attention.softmax", attention.softmax, (x,), {"axis": axis})
    if out is not None:
        assert out.shape == x.shape
        np.testing.assert_allclose(out.sum(axis=axis), 1.0, rtol=1e-3 if x.dtype.itemsize < 8
                                   else 1e-9)


@TARGETED
@given(max_len=st.integers(-1, 20), d_model=st.integers(-1, 8),
       positions=st.one_of(st.integers(-3, 25), st.lists(st.integers(-3, 25), max_size=5),
                           st.sampled_from([1.5, np.nan, "0", None])))
def test_learned_lookup_inside_or_index_error(max_len, d_model, positions):
    table = _call("course_utils.learned.LearnedPositionalEmbedding",
                  learned.LearnedPositionalEmbedding, (max_len, d_model))
    assume(table is not None)
    try:
        out = table(positions)
    except IndexError as exc:
        assert "max_len" in str(exc)
        return
    except (ValueError, TypeError) as exc:
        assert str(exc)
        return
    assert out.shape == np.shape(positions) + (d_model,)


# ---------------------------------------------------------------------------- named rejections
# The contract, case by case: the error type, and a fragment naming the argument at fault (or,
# for a choice, listing the valid options).
Z = np.zeros
LONG = {"original_max_position_embeddings": 16}
REJECTIONS = [
    ("odd d_model", lambda: sinusoidal.sinusoidal_encoding(4, 7), ValueError, "d_model"),
    ("zero d_model", lambda: sinusoidal.sinusoidal_encoding(4, 0), ValueError, "d_model"),
    ("negative length", lambda: sinusoidal.sinusoidal_encoding(-1, 8), ValueError, "n_positions"),
    ("float length", lambda: sinusoidal.sinusoidal_encoding(4.0, 8), TypeError, "n_positions"),
    ("string d_model", lambda: sinusoidal.sinusoidal_encoding(4, "8"), TypeError, "d_model"),
    ("NaN position", lambda: sinusoidal.sinusoidal_encoding_at([0, np.nan], 8), ValueError,
     "positions"),
    ("inf position", lambda: sinusoidal.sinusoidal_encoding_at([np.inf], 8), ValueError,
     "positions"),
    ("string positions", lambda: sinusoidal.sinusoidal_encoding_at(["a"], 8), TypeError,
     "positions"),
    ("unknown sinusoidal layout", lambda: sinusoidal.sinusoidal_encoding(4, 8, layout="half"),
     ValueError, "'interleaved', 'concat'"),
    ("integer dtype", lambda: sinusoidal.sinusoidal_encoding(4, 8, dtype=np.int32), ValueError,
     "dtype"),
    ("unknown dtype", lambda: sinusoidal.sinusoidal_encoding(4, 8, dtype="banana"), TypeError,
     "dtype"),
    ("NaN base", lambda: sinusoidal.sinusoidal_frequencies(8, base=np.nan), ValueError, "base"),
    ("base below 1", lambda: rope.rope_inv_freq(8, base=5e-324), ValueError, "base"),
    ("odd head_dim", lambda: rope.rope_inv_freq(7), ValueError, "head_dim"),
    ("odd last dimension of x", lambda: rope.apply_rope(Z((2, 7)), [0, 1], layout="half"),
     ValueError, "head_dim"),
    ("positions do not broadcast", lambda: rope.apply_rope(Z((2, 8)), [0, 1, 2], layout="half"),
     ValueError, "positions"),
    ("NaN RoPE position", lambda: rope.apply_rope(Z((2, 8)), [0, np.nan], layout="half"),
     ValueError, "positions"),
    ("NaN in x", lambda: rope.apply_rope(np.full((2, 8), np.nan), [0, 1], layout="half"),
     ValueError, "x"),
    ("unknown RoPE layout", lambda: rope.apply_rope(Z((2, 8)), [0, 1], layout="neox"),
     ValueError, "'half', 'interleaved'"),
    ("string x", lambda: rope.apply_rope(np.array([["a"] * 8]), [0], layout="half"), TypeError,
     "x"),
    ("complex x", lambda: rope.apply_rope(Z((2, 8), complex), [0, 1], layout="half"), TypeError,
     "x"),
    ("zero heads", lambda: alibi.alibi_slopes(0), ValueError, "n_heads"),
    ("float heads", lambda: alibi.alibi_slopes(8.0), TypeError, "n_heads"),
    ("fractional heads", lambda: alibi.alibi_bias(2.5, 4), TypeError, "n_heads"),
    ("boolean heads", lambda: alibi.alibi_slopes(True), TypeError, "n_heads"),
    ("negative queries", lambda: alibi.alibi_bias(4, -1), ValueError, "n_queries"),
    ("fewer keys than queries", lambda: alibi.alibi_bias(4, 5, 3), ValueError, "n_keys"),
    ("fractional relative position",
     lambda: relative.t5_relative_position_bucket(np.array([1.5])), ValueError,
     "relative_position"),
    ("NaN relative position", lambda: relative.t5_relative_position_bucket(np.array([np.nan])),
     ValueError, "relative_position"),
    ("relative position beyond int64", lambda: relative.t5_relative_position_bucket([1e30]),
     ValueError, "relative_position"),
    ("int64 minimum", lambda: relative.t5_relative_position_bucket([np.iinfo(np.int64).min]),
     ValueError, "relative_position"),
    ("uint64 beyond int64",
     lambda: relative.t5_relative_position_bucket(np.array([2**64 - 1], dtype=np.uint64)),
     ValueError, "relative_position"),
    ("fractional Shaw distance", lambda: relative.shaw_clip(np.array([0.5]), 2), ValueError,
     "relative_position"),
    ("unknown scaling method", lambda: scaling.rope_scaling("ntk-by-parts", 8, factor=2, **LONG),
     ValueError, "'linear'"),
    ("factor below 1", lambda: scaling.rope_scaling("linear", 8, factor=0.5, **LONG), ValueError,
     "factor"),
    ("NTK base overflows", lambda: scaling.rope_scaling("ntk", 8, factor=1e300, **LONG),
     ValueError, "factor"),
    ("dynamic base overflows",
     lambda: scaling.rope_scaling("dynamic", 8, factor=1e300, seq_len=10**6, **LONG), ValueError,
     "factor"),
    ("dynamic_ntk_base overflows",
     lambda: scaling.dynamic_ntk_base(8, factor=1e300, seq_len=10**9,
                                      original_max_position_embeddings=1), ValueError, "factor"),
    ("odd rotary head_dim", lambda: scaling.rope_scaling("linear", 7, factor=2, **LONG),
     ValueError, "head_dim"),
    ("unknown precision", lambda: rope.rope_angles([1], 8, precision="fp8"), ValueError,
     "'float64'"),
    ("NaN mscale", lambda: scaling.yarn_get_mscale(2.0, np.nan), ValueError, "mscale"),
    ("NaN rotation position", lambda: rope.rope_rotation_matrix(np.nan, 8, layout="half"),
     ValueError, "position"),
    ("infinite shift", lambda: sinusoidal.sinusoidal_shift_matrix(np.inf, 8), ValueError, "k"),
    ("fractional learned position",
     lambda: learned.LearnedPositionalEmbedding(8, 4)(np.array([1.5])), ValueError, "positions"),
    ("learned position at max_len", lambda: learned.LearnedPositionalEmbedding(8, 4)([8]),
     IndexError, "max_len"),
    ("negative learned position", lambda: learned.LearnedPositionalEmbedding(8, 4)([-1]),
     IndexError, "max_len"),
    ("string scores", lambda: attention.softmax(np.array(["a"])), TypeError, "x"),
    ("bias does not broadcast",
     lambda: attention.scaled_dot_product_attention(Z((3, 4)), Z((5, 4)), Z((5, 2)),
                                                    bias=Z((2, 2))), ValueError, "bias"),
    ("fractional attention mask",
     lambda: practice.position_ids_from_attention_mask(np.array([[1.0, 0.5]])), ValueError,
     "attention_mask"),
]


@pytest.mark.parametrize(("case", "call", "error", "fragment"), REJECTIONS,
                         ids=[case[0] for case in REJECTIONS])
def test_bad_input_is_rejected_naming_the_argument(case, call, error, fragment):
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value), f"{case}: {info.value}"
