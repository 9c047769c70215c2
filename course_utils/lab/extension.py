"""Context extension of a RoPE model: train once at ``L``, stretch RoPE, fine-tune briefly at ``sL``.

:func:`run_context_extension` trains one RoPE model per seed at ``train_length``; then, for every
method of :data:`METHODS` and every multiplier ``s``, it evaluates that same model at ``s L``
tokens with the stretched RoPE (no fine-tune), fine-tunes it once at ``s L`` and evaluates the
weights saved after each number of steps in ``checkpoints``. A model trained from scratch at the
longest length (with the unchanged RoPE), called the ceiling here, is meant as one; on the
recall task's far queries it is not (notebook 12). The frequencies come from
:func:`course_utils.scaling.rope_scaling` through :class:`~course_utils.lab.model.RopeScaling`.

Jobs (a pre-training, a from-scratch model, one fine-tune) are seeded one by one and run in
worker processes, so the results do not depend on the number of workers.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import platform
from dataclasses import dataclass, field, replace

import matplotlib.pyplot as plt
import numpy as np

from .. import _validate as val
from .model import ModelConfig, RopeScaling, cross_entropy, forward
from .tasks import Task, far_recall_batch
from .train import (
    _interactive_progress,
    _json_equal,
    _one_blas_thread,
    _open_record,
    _process_pool,
    _progress_bar,
    _settings_record,
    evaluate_by_position,
    fine_tune,
    train,
)

__all__ = ["METHODS", "METHOD_LABELS", "SHORT_LABELS", "method_config", "ContextExtension",
           "run_context_extension", "table_rows", "format_table", "extension_table",
           "plot_by_position", "plot_vs_steps", "versions", "answer_distance",
           "position_blind_expected", "evaluate_by_distance", "baselines_by_distance",
           "SPLITS", "paired_bootstrap", "verdict", "CLAIMS", "summarise", "cell_values",
           "claim_differences", "claim_table", "verdict_matrix", "grid_runs", "run_fingerprint",
           "stated_verdicts", "rerun_test", "test_set_check", "path_verdicts", "path_steps", "own_ceiling",
           "stated_on_paths", "evaluate_passkey", "t_interval",
           "PASSKEY_SEED", "ceiling_curve", "prefix_forward", "prefix_dynamic"]

METHODS = ("rope", "pi", "ntk", "dynamic", "yarn", "yarn_no_t")
"""Unchanged RoPE, Position Interpolation, NTK-aware, dynamic NTK, YaRN, YaRN without its
attention temperature."""

METHOD_LABELS = {"rope": "RoPE, unchanged", "pi": "PI", "ntk": "NTK-aware",
                 "dynamic": "dynamic NTK", "yarn": "YaRN", "yarn_no_t": "YaRN, no temperature",
                 "scratch": "trained at the long length",
                 "dynamic_prefix": "dynamic NTK, prefix by prefix (YaRN 3.3)",
                 "ntk_short": "NTK-aware set for 2L"}
_SCALING = {"pi": ("linear", True), "ntk": ("ntk", True), "dynamic": ("dynamic", True),
            "yarn": ("yarn", True), "yarn_no_t": ("yarn", False)}
_COLORS = {"rope": "0.35", "pi": "#1b9e77", "ntk": "#d95f02", "dynamic": "#7570b3",
           "yarn": "#e7298a", "yarn_no_t": "#e7298a", "scratch": "k"}


def method_config(config, method, factor, train_length, yarn_params=()):
    """``config`` with the RoPE of ``method`` stretched by ``factor`` from ``train_length``.

    ``"rope"`` returns ``config`` unchanged; the others set ``rope_scaling`` to a
    :class:`RopeScaling` (``yarn_params`` are YaRN's keywords, as ``(name, value)`` pairs).
    """
    if not isinstance(config, ModelConfig) or config.scheme != "rope":
        raise TypeError("config must be a ModelConfig with scheme='rope'")
    method = val.choice(method, "method", METHODS)
    factor = val.positive_float(factor, "factor", minimum=1.0)
    train_length = val.positive_int(train_length, "train_length")
    if method == "rope":
        return config
    name, temperature = _SCALING[method]
    try:
        params = tuple(tuple(pair) for pair in yarn_params)
    except TypeError:
        params = None
    if params is None or any(len(pair) != 2 or not isinstance(pair[0], str)
                             for pair in params):
        raise TypeError("yarn_params must be (name, value) pairs, e.g. (('beta_fast', 32),), "
                        f"got {yarn_params!r:.60}")
    params = params if name == "yarn" else ()
    return replace(config, rope_scaling=RopeScaling(name, float(factor), train_length,
                                                    params=params, temperature=temperature))


def versions():
    """Python, numpy and platform versions, saved with every result."""
    return {"python": platform.python_version(), "numpy": np.__version__,
            "platform": f"{platform.system()} {platform.machine()}"}


@dataclass
class ContextExtension:
    """Results of :func:`run_context_extension`.

    Attributes
    ----------
    task : Task
    train_length : int
    multipliers : tuple of int
    methods : tuple of str (from :data:`METHODS`)
    checkpoints : tuple of int, starting with 0 (no fine-tune)
    seeds : tuple of int
    settings : dict of the run's settings and :func:`versions`
    correct : int array ``(methods, multipliers, checkpoints, seeds, longest length)``
        Correct predictions at each position (0 beyond a shorter test length).
    total : int array ``(multipliers, longest length)``
        Labelled positions at each position (the same test sequences for every model).
    loss : float array ``(methods, multipliers, checkpoints, seeds)``: mean test cross-entropy.
    scratch_correct : int array ``(multipliers, seeds, longest length)``; scratch_loss :
        ``(multipliers, seeds)``: the model trained at the longest length.
    base_accuracy : float array ``(seeds,)``: the pre-trained model at ``train_length``.
    base_models : tuple of ``(config, params)``, one per seed.
    tune_losses : float array ``(methods, multipliers, seeds, max checkpoint)``.
    correct_dist : int array ``(methods, multipliers, checkpoints, seeds, longest length)``
        Correct predictions at positions ``>= train_length``, by the distance from the query to
        the latest earlier copy of its key (:func:`answer_distance`).
    total_dist : int array ``(multipliers, longest length)``: labelled positions by distance.
    scratch_correct_dist : int array ``(multipliers, seeds, longest length)``
    baseline_dist : dict ``{"blind" | "window": float array (multipliers, longest length)}``:
        expected correct predictions of the baselines by distance (:func:`baselines_by_distance`).
    passkey : dict or None
        With ``passkey=True``, :func:`evaluate_passkey` for every model: ``"correct"``
        ``(methods, multipliers, checkpoints, seeds)``, ``"total"`` ``(multipliers,)``,
        ``"needle"`` ``(methods, multipliers, checkpoints, seeds, layers, heads)``, the
        baselines' expected hits ``"blind"`` and ``"window"`` ``(multipliers,)``, and the
        ceiling's ``"scratch_correct"`` ``(multipliers, seeds)`` and ``"scratch_needle"``.
    ceiling_curve : dict ``{steps: (far accuracy, passkey accuracy)}``, arrays ``(seeds,)`` at
        the longest length, for the models of ``ceiling_steps``.
    """

    task: Task
    train_length: int
    multipliers: tuple
    methods: tuple
    checkpoints: tuple
    seeds: tuple
    settings: dict
    correct: np.ndarray
    total: np.ndarray
    loss: np.ndarray
    scratch_correct: np.ndarray
    scratch_loss: np.ndarray
    base_accuracy: np.ndarray
    base_models: tuple = field(repr=False)
    tune_losses: np.ndarray = field(repr=False)
    correct_dist: np.ndarray = field(default=None, repr=False)
    total_dist: np.ndarray = field(default=None, repr=False)
    scratch_correct_dist: np.ndarray = field(default=None, repr=False)
    baseline_dist: dict = field(default=None, repr=False)
    passkey: dict = field(default=None, repr=False)
    ceiling_curve: dict = field(default=None, repr=False)

    def __post_init__(self):
        if not isinstance(self.task, Task):
            raise TypeError(f"task must be a Task, got {type(self.task).__name__}")
        val.positive_int(self.train_length, "train_length")
        for name in ("multipliers", "methods", "checkpoints", "seeds", "base_models"):
            if not isinstance(getattr(self, name), tuple):
                raise TypeError(f"{name} must be a tuple, got {getattr(self, name)!r:.60}")
        for m in self.multipliers:
            val.positive_int(m, "multipliers")
        if not self.methods or any(m not in METHODS for m in self.methods):
            raise ValueError(f"methods must be names from {METHODS}, got {self.methods!r:.60}")
        if not self.checkpoints or self.checkpoints[0] != 0:
            raise ValueError(f"checkpoints must start with 0, got {self.checkpoints!r:.60}")
        for c in self.checkpoints:
            val.positive_int(c, "checkpoints", allow_zero=True)
        if not isinstance(self.settings, dict):
            raise TypeError(f"settings must be a dict, got {self.settings!r:.60}")
        shapes = {"correct": 5, "total": 2, "loss": 4, "scratch_correct": 3, "scratch_loss": 2,
                  "base_accuracy": 1, "tune_losses": 4}
        for name, ndim in shapes.items():
            array = getattr(self, name)
            if name == "scratch_loss" and isinstance(array, np.ndarray) \
                    and np.isnan(array).all():
                continue  # no model trained long (scratch=False)
            if not isinstance(array, np.ndarray) or array.ndim != ndim \
                    or not np.issubdtype(array.dtype, np.number) \
                    or not np.all(np.isfinite(array)) or np.any(array < 0):
                raise ValueError(f"{name} must be a {ndim}-D array of finite non-negative "
                                 f"numbers, got {array!r:.60}")
        if self.total.shape[0] != len(self.multipliers) or np.any(self.total.sum(axis=-1) == 0):
            raise ValueError("total must hold, for each multiplier, labelled positions to count")

    def _beyond(self, k):
        """Positions at or beyond the training length, within test length ``k``."""
        n = self.train_length * self.multipliers[k]
        positions = np.arange(self.total.shape[-1])
        return (positions >= self.train_length) & (positions < n)

    def accuracy(self):
        """Accuracy over the labelled positions ``>= train_length``:
        ``(methods, multipliers, checkpoints, seeds)``."""
        out = np.empty(self.correct.shape[:4])
        for k in range(len(self.multipliers)):
            beyond = self._beyond(k)
            out[:, k] = (self.correct[:, k][..., beyond].sum(axis=-1)
                         / self.total[k, beyond].sum())
        return out

    def scratch_accuracy(self):
        """The from-scratch model's accuracy beyond ``train_length``: ``(multipliers, seeds)``."""
        out = np.empty(self.scratch_correct.shape[:2])
        for k in range(len(self.multipliers)):
            beyond = self._beyond(k)
            out[k] = self.scratch_correct[k][..., beyond].sum(axis=-1) / self.total[k, beyond].sum()
        return out

    def _split_mask(self, split):
        split = val.choice(split, "split", SPLITS)
        if self.correct_dist is None:
            raise ValueError("this result holds no counts by distance")
        distance = np.arange(self.total_dist.shape[-1])
        return {"all": distance >= 0, "near": distance < self.train_length,
                "far": distance >= self.train_length}[split]

    def split_accuracy(self, split):
        """Accuracy over the labelled positions ``>= train_length`` whose key's latest earlier
        copy lies at a distance (:func:`answer_distance`) ``< train_length`` (``"near"``),
        ``>= train_length`` (``"far"``) or any (``"all"``, equal to :meth:`accuracy`):
        ``(methods, multipliers, checkpoints, seeds)``."""
        keep = self._split_mask(split)
        return (self.correct_dist[..., keep].sum(axis=-1)
                / self.total_dist[:, keep].sum(axis=-1)[None, :, None, None])

    def scratch_split_accuracy(self, split):
        """The from-scratch model's accuracy on a split: ``(multipliers, seeds)``."""
        keep = self._split_mask(split)
        return (self.scratch_correct_dist[..., keep].sum(axis=-1)
                / self.total_dist[:, keep].sum(axis=-1)[:, None])

    def baseline_split_accuracy(self, name, split):
        """A baseline's expected accuracy on a split (``"blind"`` or ``"window"``):
        ``(multipliers,)``."""
        name = val.choice(name, "name", ("blind", "window"))
        keep = self._split_mask(split)
        return self.baseline_dist[name][:, keep].sum(axis=-1) / self.total_dist[:, keep].sum(-1)

    def split_arrays(self, split):
        """``(accuracy, from-scratch accuracy)`` on ``split``; a result without counts by
        distance has only ``"all"``."""
        if self.correct_dist is None:
            if split != "all":
                raise ValueError("split must be 'all' for a result without counts by distance")
            return self.accuracy(), self.scratch_accuracy()
        return self.split_accuracy(split), self.scratch_split_accuracy(split)

    def by_position(self, correct, k, width):
        """Mean over seeds of the accuracy in bins of ``width`` positions; bin starts and values.

        ``correct``: ``(seeds, longest length)`` counts at multiplier index ``k``.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) \
                or not 0 <= k < len(self.multipliers):
            raise ValueError(f"k must index the multipliers (0 .. {len(self.multipliers) - 1}), "
                             f"got {k!r:.60}")
        width = val.positive_int(width, "width")
        correct = val.numeric_array(correct, "correct")
        if correct.ndim != 2 or correct.shape[-1] < self.train_length * self.multipliers[k]:
            raise ValueError(f"correct must have shape (seeds, longest length), got "
                             f"{correct.shape}")
        n = self.train_length * self.multipliers[k]
        starts = np.arange(0, n, width)
        total = np.add.reduceat(self.total[k, :n], starts)
        hits = np.add.reduceat(correct[:, :n], starts, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            acc = np.where(total > 0, hits / np.maximum(total, 1), np.nan)
        return starts, acc.mean(axis=0)


SPLITS = ("all", "near", "far")
"""Scored queries (positions ``>= L``): all of them, those whose key's latest earlier copy lies
at a distance ``< L`` (distances seen in training) and those at ``>= L`` (the answer is the token
after that copy, one closer)."""


def answer_distance(task, tokens, mask):
    """How far back the answer of every labelled position lies, ``-1`` where there is no label.

    ``recall`` and ``recall_latest``: the distance ``i - j`` from the query key at ``i`` to the
    latest earlier copy ``j`` of the same key (its value sits at ``j + 1``, one token nearer);
    ``copy_back``: ``k``. ``tokens, mask``: ``(batch, length)`` as ``task.batch`` returns them.

    Returns
    -------
    int64 array ``(batch, length)``
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    tokens = val.numeric_array(tokens, "tokens", integer=True)
    mask = np.asarray(mask)
    if tokens.ndim != 2 or mask.shape != tokens.shape or mask.dtype != bool:
        raise ValueError(f"tokens and mask must be (batch, length) arrays, mask boolean, got "
                         f"{tokens.shape} and {mask.shape} {mask.dtype}")
    out = np.full(tokens.shape, -1, dtype=np.int64)
    if task.name == "copy_back":
        out[mask] = dict(task.settings)["k"]
        return out
    keys = tokens[:, 1::2]                       # key positions 1, 3, 5, ...
    n_pairs = keys.shape[1]
    same = np.tril(keys[:, :, None] == keys[:, None, :], k=-1)   # (batch, query, earlier)
    latest = n_pairs - 1 - np.argmax(same[:, :, ::-1], axis=-1)
    found = same.any(axis=-1)
    out[:, 1::2] = np.where(found, 2 * (np.arange(n_pairs) - latest), -1)
    if np.any(mask & (out < 0)):
        raise ValueError("mask marks a position whose key has no earlier copy")
    return np.where(mask, out, -1)


def position_blind_expected(task, tokens, labels, mask):
    """Expected correctness of a reader that finds the key's earlier copies by content but not
    their order: it outputs the value after one of them, uniformly at random.

    At a labelled key position ``i``: the share of earlier copies ``j`` of the key whose value
    ``tokens[j + 1]`` equals ``labels[i]`` (an exact expectation, not a sample). Defined for
    ``recall`` and ``recall_latest``; ``0`` where there is no label.

    Returns
    -------
    float array ``(batch, length)``
    """
    if not isinstance(task, Task) or task.name == "copy_back":
        raise ValueError("task must be a recall task (recall or recall_latest)")
    answer_distance(task, tokens, mask)  # validates the layout
    tokens = np.asarray(tokens)
    labels = val.numeric_array(labels, "labels", integer=True)
    if labels.shape != tokens.shape:
        raise ValueError(f"labels must have the shape of tokens {tokens.shape}, got "
                         f"{labels.shape}")
    keys, values = tokens[:, 1::2], tokens[:, 2::2]
    n_values = values.shape[1]            # the last key may lack its value
    n_pairs = keys.shape[1]
    same = np.tril(keys[:, :, None] == keys[:, None, :], k=-1)[:, :, :n_values]
    match = values[:, None, :] == labels[:, 1::2][:, :, None]
    copies = same.sum(axis=-1)
    out = np.zeros(tokens.shape)
    out[:, 1::2][:, :n_pairs] = np.where(copies > 0, (same & match).sum(axis=-1)
                                         / np.maximum(copies, 1), 0.0)
    return np.where(mask, out, 0.0)


def _test_batches(task, length, n_sequences, seed, batch):
    """The test sequences of :func:`~course_utils.lab.train.evaluate_by_position`, in its order."""
    rng = np.random.default_rng(val.positive_int(seed, "seed", allow_zero=True))
    for start in range(0, n_sequences, batch):
        yield task.batch(rng, min(batch, n_sequences - start), length)


def _by_distance(weights, distance, from_position, length):
    """Sum of ``weights`` over positions ``>= from_position``, by distance: ``(length,)``."""
    keep = (distance >= 0) & (np.arange(distance.shape[-1]) >= from_position)
    return np.bincount(distance[keep], weights=np.asarray(weights, dtype=float)[keep],
                       minlength=length)


def _dynamic_prefix(dynamic_prefix, config):
    """``None``, or the training length of YaRN's section 3.3 rule (checked)."""
    if dynamic_prefix is None:
        return None
    if config.scheme != "rope" or config.rope_scaling is not None:
        raise ValueError("config must have scheme='rope' and no rope_scaling with dynamic_prefix "
                         "(the rule sets the scaling at each prefix)")
    return val.positive_int(dynamic_prefix, "dynamic_prefix")


def prefix_forward(params, tokens, config, train_length):
    """Logits under YaRN's dynamic scaling read prefix by prefix (Peng et al. 2023, section 3.3).

    The prediction at position ``t`` comes from a pass over the prefix ``tokens[:, :t + 1]``
    alone, whose ``N = t + 1`` tokens are all rotated with NTK-aware frequencies for the factor
    ``s' = max(1, N / train_length)``, as in generation that recomputes every key at each new
    length (no cache of keys rotated at an earlier length). Positions ``t < train_length`` read
    the unchanged RoPE, and the last position of a sequence of ``s * train_length`` tokens
    reads NTK-aware with factor ``s``. ``config`` is the unscaled model. Returns the logits
    ``(batch, length, vocab)``; costs one pass per position past ``train_length``.
    """
    if not isinstance(config, ModelConfig) or config.scheme != "rope" or config.rope_scaling:
        raise ValueError("config must be a ModelConfig with scheme='rope' and no rope_scaling "
                         "(the rule sets the scaling at each prefix)")
    train_length = val.positive_int(train_length, "train_length")
    tokens = np.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be a 2-D array (batch, length), got shape {tokens.shape}")
    logits, _ = forward(params, tokens, config)     # causal: right for every t < train_length
    for n in range(train_length + 1, tokens.shape[1] + 1):
        scaled = method_config(config, "ntk", n / train_length, train_length)
        logits[:, n - 1] = forward(params, tokens[:, :n], scaled)[0][:, n - 1]
    return logits


def evaluate_by_distance(params, config, task, length, *, from_position, n_sequences=64,
                         seed=1234, batch=32, dynamic_prefix=None):
    """:func:`~course_utils.lab.train.evaluate_by_position` on the same test sequences, plus
    the counts at positions ``>= from_position`` by :func:`answer_distance`.

    ``dynamic_prefix``: a training length ``L``; the logits then come from
    :func:`prefix_forward` (YaRN's section 3.3 rule, prefix by prefix) on the unscaled
    ``config``.

    Returns
    -------
    correct, total : int64 ``(length,)`` by position; loss : float;
    correct_dist, total_dist : int64 ``(length,)`` by distance
    """
    if not isinstance(task, Task) or not isinstance(config, ModelConfig):
        raise TypeError("task must be a Task and config a ModelConfig")
    length = val.positive_int(length, "length")
    n_sequences = val.positive_int(n_sequences, "n_sequences")
    batch = val.positive_int(batch, "batch")
    from_position = val.positive_int(from_position, "from_position", allow_zero=True)
    dynamic_prefix = _dynamic_prefix(dynamic_prefix, config)
    correct, total = np.zeros(length, dtype=np.int64), np.zeros(length, dtype=np.int64)
    hits, counted = np.zeros(length, dtype=np.int64), np.zeros(length, dtype=np.int64)
    loss_sum = 0.0
    with _one_blas_thread():
        for tokens, labels, mask in _test_batches(task, length, n_sequences, seed, batch):
            logits = (forward(params, tokens, config)[0] if dynamic_prefix is None
                      else prefix_forward(params, tokens, config, dynamic_prefix))
            if mask.any():
                loss_sum += cross_entropy(logits, labels, mask)[0] * int(mask.sum())
            right = (np.argmax(logits, axis=-1) == labels) & mask
            correct += right.sum(axis=0)
            total += mask.sum(axis=0)
            distance = answer_distance(task, tokens, mask)
            hits += _by_distance(right, distance, from_position, length).astype(np.int64)
            counted += _by_distance(mask, distance, from_position, length).astype(np.int64)
    if total.sum() == 0:
        raise ValueError(f"no labelled positions at length {length}; use more sequences")
    return correct, total, loss_sum / int(total.sum()), hits, counted


def baselines_by_distance(task, length, *, from_position, window, n_sequences=64, seed=1234,
                          batch=32):
    """Expected correct predictions of two baselines on the test sequences of
    :func:`evaluate_by_distance`, at positions ``>= from_position``, by distance.

    * ``"blind"``: :func:`position_blind_expected` (content without order);
    * ``"window"``: an ideal reader of the last ``window`` tokens: right whenever the answer's key
      lies at a distance ``< window``; otherwise it sees no copy of the key and guesses (chance).

    Returns
    -------
    dict ``{"blind": float (length,), "window": float (length,), "total": int64 (length,)}``
    """
    if not isinstance(task, Task) or task.name == "copy_back":
        raise ValueError(f"task must be a recall task from make_task, got {task!r:.60}")
    length = val.positive_int(length, "length")
    n_sequences = val.positive_int(n_sequences, "n_sequences")
    batch = val.positive_int(batch, "batch")
    window = val.positive_int(window, "window")
    from_position = val.positive_int(from_position, "from_position", allow_zero=True)
    out = {"blind": np.zeros(length), "window": np.zeros(length),
           "total": np.zeros(length, dtype=np.int64)}
    for tokens, labels, mask in _test_batches(task, length, n_sequences, seed, batch):
        distance = answer_distance(task, tokens, mask)
        blind = position_blind_expected(task, tokens, labels, mask)
        seen = np.where(distance < window, 1.0, task.chance)
        out["blind"] += _by_distance(blind, distance, from_position, length)
        out["window"] += _by_distance(seen, distance, from_position, length)
        out["total"] += _by_distance(mask, distance, from_position, length).astype(np.int64)
    return out


PASSKEY_SEED = 4321
"""Seed of the passkey test sequences (:func:`evaluate_passkey`), apart from the recall test's."""


def evaluate_passkey(params, config, task, length, *, min_distance, n_sequences=128,
                     seed=PASSKEY_SEED, batch=32, dynamic_prefix=None):
    """Accuracy on :func:`~course_utils.lab.tasks.far_recall_batch` (one query per sequence,
    its key's only earlier copy ``min_distance`` or more tokens back) and the attention the
    query pays to the answer.

    The answer is the value token after the needle, the only earlier copy of the query's key,
    at ``q - d + 1`` for the query at ``q`` and the distance ``d`` of :func:`answer_distance`.
    ``needle`` is the attention weight from the query to that token, averaged over the
    sequences, for every layer and head: near 1 in a head that reads the needle, near
    ``1 / (q + 1)`` in one that spreads its attention evenly.

    Returns
    -------
    hits, total : int; needle : float array ``(n_layers, n_heads)``;
    blind, window : float, the expected hits of the baselines of :func:`baselines_by_distance`:
    the needle is the only earlier copy, so the position-blind reader is always right, and a
    reader of fewer than ``min_distance`` tokens never sees it and guesses

    ``dynamic_prefix``: a training length ``L``; the query then reads its prefix (the sequence
    up to it) with NTK-aware frequencies for ``max(1, N / L)``, ``N`` the prefix's length, as
    :func:`prefix_forward`.
    """
    if not isinstance(task, Task) or task.name != "recall_latest" \
            or not isinstance(config, ModelConfig):
        raise TypeError("task must be make_task('recall_latest', ...) and config a ModelConfig")
    length = val.positive_int(length, "length")
    n_sequences = val.positive_int(n_sequences, "n_sequences")
    batch = val.positive_int(batch, "batch")
    min_distance = val.positive_int(min_distance, "min_distance")
    dynamic_prefix = _dynamic_prefix(dynamic_prefix, config)
    settings = dict(task.settings)
    rng = np.random.default_rng(val.positive_int(seed, "seed", allow_zero=True))
    hits, needle, blind, window = 0, 0.0, 0.0, 0.0
    with _one_blas_thread():
        for start in range(0, n_sequences, batch):
            tokens, labels, mask = far_recall_batch(
                rng, min(batch, n_sequences - start), length, min_distance=min_distance,
                n_keys=settings["n_keys"], n_values=settings["n_values"])
            rows, query = np.nonzero(mask)
            seen, scaled = tokens, config
            if dynamic_prefix is not None:       # one query per sequence, at the same position
                if (query != query.max()).any():
                    raise ValueError("dynamic_prefix needs every passkey query at one position")
                seen = tokens[:, :query.max() + 1]
                scaled = method_config(config, "ntk", max(1.0, seen.shape[1] / dynamic_prefix),
                                       dynamic_prefix)
            logits, cache = forward(params, seen, scaled)
            hits += int((np.argmax(logits[rows, query], axis=-1) == labels[rows, query]).sum())
            answer = query - answer_distance(task, tokens, mask)[rows, query] + 1
            # (sequences, heads) per layer: advanced indices around a slice come first
            needle = needle + np.stack([c["weights"][rows, :, query, answer].sum(axis=0)
                                        for c in cache["layers"]])
            blind += position_blind_expected(task, tokens, labels, mask).sum()
            window += len(rows) * task.chance
    return hits, n_sequences, needle / n_sequences, float(blind), float(window)


def paired_bootstrap(diff, *, n_resamples=10_000, level=0.95, seed=0):
    """Mean of paired differences over seeds and its percentile bootstrap interval.

    Resamples the seeds with replacement ``n_resamples`` times (``numpy.random.default_rng(seed)``)
    and takes the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles of the resampled means
    (Efron and Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13).

    Parameters
    ----------
    diff : 1-D array, one paired difference per seed (the same seed's two runs)

    Returns
    -------
    mean, low, high : float
    """
    diff = val.numeric_array(diff, "diff")
    if diff.ndim != 1 or diff.size < 2:
        raise ValueError(f"diff must be a 1-D array of at least 2 paired differences, got shape "
                         f"{diff.shape}")
    n_resamples = val.positive_int(n_resamples, "n_resamples")
    level = val.real_float(level, "level")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(val.positive_int(seed, "seed", allow_zero=True))
    means = diff[rng.integers(0, diff.size, size=(n_resamples, diff.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(diff.mean()), float(low), float(high)


def t_interval(diff, *, level=0.95):
    """Mean of paired differences over seeds and its Student-t interval (``n - 1`` degrees of
    freedom): a second reading beside :func:`paired_bootstrap`, whose percentile interval runs
    narrower with few seeds. Returns ``mean, low, high``."""
    from scipy import stats

    diff = val.numeric_array(diff, "diff")
    if diff.ndim != 1 or diff.size < 2:
        raise ValueError(f"diff must be a 1-D array of at least 2 paired differences, got shape "
                         f"{diff.shape}")
    level = val.real_float(level, "level")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    half = stats.t.ppf((1 + level) / 2, diff.size - 1) * diff.std(ddof=1) / np.sqrt(diff.size)
    return float(diff.mean()), float(diff.mean() - half), float(diff.mean() + half)


def verdict(low, high):
    """``"agrees"`` when the interval lies above 0, ``"disagrees"`` below, else ``"unclear"``."""
    low, high = val.real_float(low, "low"), val.real_float(high, "high")
    if low > high:
        raise ValueError(f"low must be <= high, got {low} > {high}")
    return "agrees" if low > 0 else "disagrees" if high < 0 else "unclear"


def _test_seeds(settings):
    """The seeds of a run's recall test and passkey sequences: the defaults of
    :func:`evaluate_by_distance` and :func:`evaluate_passkey`, or, with a ``test_seed`` in
    ``settings`` (a fresh test set), ``test_seed`` and ``test_seed + 1``."""
    fresh = settings.get("test_seed")
    return (_RECALL_TEST_SEED, PASSKEY_SEED) if fresh is None else (fresh, fresh + 1)


_RECALL_TEST_SEED = 1234
"""Seed of the recall test sequences (the default of :func:`evaluate_by_distance`)."""


def _fresh_test_seed(test_seed):
    """``test_seed`` checked: ``None``, or an integer >= 0 whose sequences are not the default
    ones (neither ``test_seed`` the recall test's seed nor ``test_seed + 1`` the passkey's)."""
    if test_seed is None:
        return None
    test_seed = val.positive_int(test_seed, "test_seed", allow_zero=True)
    if test_seed in (_RECALL_TEST_SEED, PASSKEY_SEED - 1):
        raise ValueError(f"test_seed must draw a fresh test set, not the default recall "
                         f"({_RECALL_TEST_SEED}) or passkey ({PASSKEY_SEED}) sequences, got "
                         f"{test_seed}")
    return test_seed


def _job(job):
    """One job of :func:`run_context_extension`; module-level so worker processes can run it."""
    kind = job["kind"]
    task, s = job["task"], job["settings"]
    recall_seed, passkey_seed = _test_seeds(s)

    def scored(params, config, n):
        out = evaluate_by_distance(params, config, task, n, from_position=s["train_length"],
                                   n_sequences=s["n_test"], seed=recall_seed)
        if s["passkey"]:
            out += evaluate_passkey(params, config, task, n, min_distance=s["train_length"],
                                    n_sequences=s["n_test"], seed=passkey_seed)
        return out

    if kind in ("base", "scratch"):
        length = s["train_length"] * (1 if kind == "base" else max(s["multipliers"]))
        params, _ = train(task, job["config"],
                          steps=(s["steps"] if kind == "base" else job["steps"] if "steps" in job
                                 else s["scratch_steps"]),
                          batch=s["batch"] if kind == "base" else s["scratch_batch"], length=length,
                          lr=s["lr"] if kind == "base" else s["scratch_lr"], seed=job["seed"],
                          progress=False)
        if kind == "base":
            return params, [evaluate_by_position(params, job["config"], task, length,
                                                 n_sequences=s["n_test"], seed=recall_seed)], None
        return params, [scored(params, job["config"], s["train_length"] * m)
                        for m in s["multipliers"]], None
    config, params, length = job["config"], job["params"], job["length"]
    evals = [scored(params, config, length)]
    snapshots, losses = fine_tune(params, config, task, length=length,
                                  checkpoints=s["checkpoints"][1:], batch=s["tune_batch"],
                                  lr=s["tune_lr"], warmup=s["tune_warmup"], seed=job["seed"])
    evals += [scored(snapshots[k], config, length) for k in s["checkpoints"][1:]]
    return None, evals, losses


def _schedule(jobs_first, make_followers, workers, progress, description, n_total):
    """Run ``jobs_first``; when a job of kind "base" finishes, queue ``make_followers(job,
    result)``. Fine-tunes go first in the queue, so that long from-scratch runs overlap them.
    Returns ``{job id: result}``."""
    results = {}
    bar = _progress_bar(iter(range(n_total)), n_total, progress, description)
    bar_iter = iter(bar)
    if workers == 1:
        queue = list(jobs_first)
        while queue:
            job = queue.pop(0)
            results[job["id"]] = _job(job)
            next(bar_iter, None)
            if job["kind"] == "base":
                queue = make_followers(job, results[job["id"]]) + queue
        _close(bar)
        return results
    queue = list(jobs_first)
    running = {}
    with _process_pool(workers) as pool:
        while queue or running:
            while queue and len(running) < workers:
                job = queue.pop(0)
                running[pool.submit(_job, job)] = job
            done, _ = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
            for future in sorted(done, key=lambda f: running[f]["id"]):
                job = running.pop(future)
                results[job["id"]] = future.result()
                next(bar_iter, None)
                if job["kind"] == "base":
                    queue = make_followers(job, results[job["id"]]) + queue
    _close(bar)
    return results


def _close(bar):
    if hasattr(bar, "close"):
        bar.close()


def _ceiling_of(results, seeds, ceiling_steps, train_length):
    """``{steps: (far-split accuracy at the longest length, passkey accuracy)}``, per seed, from
    the results of the jobs ``("ceiling", seed, steps)``."""
    ceiling = {}
    for n in ceiling_steps:
        far, key_acc = [], []
        for s in seeds:
            _, _, _, hits_d, labelled_d, *key = results[("ceiling", s, n)][1][-1]
            far.append(hits_d[train_length:].sum() / labelled_d[train_length:].sum())
            key_acc.append(key[0] / key[1] if key else np.nan)
        ceiling[n] = (np.array(far), np.array(key_acc))
    return ceiling


def _unscaled_lab_arguments(task, config, multipliers, seeds, scaled=False):
    """``(multipliers, seeds)`` checked for :func:`ceiling_curve` and :func:`prefix_dynamic`:
    a RoPE ``config`` for ``task``'s vocabulary, unscaled unless ``scaled``, multipliers >= 2,
    seeds >= 0."""
    if not isinstance(config, ModelConfig) or config.scheme != "rope" or (
            config.rope_scaling and not scaled):
        raise TypeError("config must be a ModelConfig with scheme='rope'"
                        + ("" if scaled else " and no rope_scaling"))
    if config.vocab_size != task.vocab_size:
        raise ValueError(f"config.vocab_size must equal the task's vocabulary ({task.vocab_size})")
    for name, seq in (("multipliers", multipliers), ("seeds", seeds)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, (list, tuple)) or not seq:
            raise TypeError(f"{name} must be a non-empty list or tuple, got {seq!r:.60}")
    multipliers = tuple(val.positive_int(m, "multipliers") for m in multipliers)
    if min(multipliers) < 2:
        raise ValueError(f"multipliers must be integers >= 2, got {multipliers}")
    return multipliers, tuple(val.positive_int(s, "seeds", allow_zero=True) for s in seeds)


def ceiling_curve(task, config, *, ceiling_steps, train_length=16, multipliers=(2, 4),
                  seeds=(0, 1, 2), batch=8, lr=1e-2, n_test=128, passkey=True, workers=None,
                  progress=None):
    """Train the RoPE model of ``config`` from scratch at the longest length, once per seed and
    number of steps, as :func:`run_context_extension` trains its ceiling (the same jobs, seeds
    and test sequences, given its ``scratch_batch`` and ``scratch_lr`` as ``batch`` and
    ``lr``): ``{steps: (far-split accuracy, passkey accuracy)}``, arrays ``(seeds,)`` at
    ``max(multipliers) * train_length`` tokens. Extends a stored curve to more steps without
    rerunning the grid.

    ``config`` may carry a method's stretched RoPE for the longest length (from
    :func:`method_config` with ``factor = max(multipliers)`` and ``train_length``): the model is
    then trained from scratch with that method's frequencies, the ceiling of the method itself."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    if isinstance(ceiling_steps, (str, bytes)) or not isinstance(ceiling_steps, (list, tuple)) \
            or not ceiling_steps:
        raise TypeError(f"ceiling_steps must be a non-empty list or tuple, got "
                        f"{ceiling_steps!r:.60}")
    ceiling_steps = tuple(val.positive_int(n, "ceiling_steps") for n in ceiling_steps)
    multipliers, seeds = _unscaled_lab_arguments(task, config, multipliers, seeds, scaled=True)
    train_length, scaling = val.positive_int(train_length, "train_length"), config.rope_scaling
    if scaling and scaling.method == "dynamic":
        raise ValueError("config.rope_scaling must be a static rule (linear, ntk or yarn): "
                         "dynamic NTK trained at the long length is not its own frequencies")
    if scaling and (scaling.factor != max(multipliers)
                    or scaling.original_max_position_embeddings != train_length):
        raise ValueError(f"config.rope_scaling must stretch train_length ({train_length}) by "
                         f"max(multipliers) ({max(multipliers)}), got factor {scaling.factor} "
                         f"from {scaling.original_max_position_embeddings}")
    settings = {"train_length": train_length, "multipliers": multipliers,
                "scratch_batch": val.positive_int(batch, "batch"),
                "scratch_lr": val.positive_float(lr, "lr"),
                "n_test": val.positive_int(n_test, "n_test"),
                "passkey": val.boolean(passkey, "passkey")}
    if passkey and task.name != "recall_latest":
        raise ValueError(f"passkey needs the recall_latest task, got {task.name!r}")
    jobs = [{"id": ("ceiling", s, n), "kind": "scratch", "task": task, "config": config,
             "seed": s, "steps": n, "settings": settings}
            for n in sorted(ceiling_steps, reverse=True) for s in seeds]
    workers = val.positive_int(min(os.cpu_count() or 1, len(jobs)) if workers is None
                               else workers, "workers")
    progress = _interactive_progress() if progress is None else val.boolean(progress, "progress")
    results = _schedule(jobs, lambda job, result: [], workers, progress,
                        f"{task.name}: from scratch", len(jobs))
    return _ceiling_of(results, seeds, ceiling_steps, settings["train_length"])


def _prefix_job(job):
    """One seed of :func:`prefix_dynamic`: pre-train as :func:`run_context_extension` does, then
    score every length prefix by prefix and, for comparison, in one pass with NTK-aware."""
    task, config, s, L = job["task"], job["config"], job["settings"], job["settings"]["train_length"]
    recall_seed, passkey_seed = _test_seeds(s)
    params, _ = train(task, config, steps=s["steps"], batch=s["batch"], length=L, lr=s["lr"],
                      seed=job["seed"], progress=False)
    out = {"prefix": [], "ntk": [], "ntk_short": []}
    short = min(s["multipliers"])
    for m in s["multipliers"]:
        for name, scaled, rule in (("prefix", config, L),
                                   ("ntk", method_config(config, "ntk", m, L), None),
                                   ("ntk_short", method_config(config, "ntk", short, L), None)):
            *_, hits, counted = evaluate_by_distance(params, scaled, task, m * L, from_position=L,
                                                     n_sequences=s["n_test"], dynamic_prefix=rule,
                                                     seed=recall_seed)
            key = evaluate_passkey(params, scaled, task, m * L, min_distance=L,
                                   n_sequences=s["n_test"], dynamic_prefix=rule,
                                   seed=passkey_seed)
            out[name].append((hits, counted, key[0] / key[1]))
    return out


def prefix_dynamic(task, config, *, seeds=(0, 1, 2), train_length=16, multipliers=(2, 4),
                   steps=1000, batch=16, lr=1e-2, n_test=128, test_seed=None, workers=None):
    """The dynamic-scaling row of YaRN's section 3.3, scored prefix by prefix, with no fine-tune.

    Pre-trains the unchanged RoPE model per seed exactly as :func:`run_context_extension` does
    (same seeds and settings, so the same weights), then scores it at every multiplier with
    :func:`prefix_forward` on the test sequences of :func:`evaluate_by_distance` and on the
    passkey; again in one pass with NTK-aware frequencies for the multiplier (``"ntk"``: the
    grid's NTK-aware row at 0 steps, to check that the weights are the grid's); and in one pass
    with static NTK-aware set for the shortest multiplier (``"ntk_short"``: at longer lengths,
    a static factor read past the length it was set for, where section 3.3 expects it to break).
    ``test_seed`` scores a fresh test set, as in :func:`run_context_extension`.

    Returns
    -------
    dict ``{"prefix": {split: array (multipliers, seeds)}, "ntk": ..., "ntk_short": ...}``,
    splits :data:`SPLITS` and ``"passkey"``
    """
    if not isinstance(task, Task) or task.name != "recall_latest":
        raise TypeError("task must be make_task('recall_latest', ...)")
    multipliers, seeds = _unscaled_lab_arguments(task, config, multipliers, seeds)
    settings = {"train_length": val.positive_int(train_length, "train_length"),
                "multipliers": multipliers,
                "steps": val.positive_int(steps, "steps"), "batch": val.positive_int(batch, "batch"),
                "lr": val.positive_float(lr, "lr"), "n_test": val.positive_int(n_test, "n_test")}
    if test_seed is not None:
        settings["test_seed"] = _fresh_test_seed(test_seed)
        if {test_seed, test_seed + 1} & {t for s in seeds for t in (s, s + 1)}:
            raise ValueError(f"test_seed must not draw a stream pre-training reads (the seeds "
                             f"and each seed + 1), got {test_seed}")
    jobs = [{"task": task, "config": config, "seed": s, "settings": settings} for s in seeds]
    workers = val.positive_int(min(os.cpu_count() or 1, len(jobs)) if workers is None
                               else workers, "workers")
    if workers == 1:
        results = [_prefix_job(job) for job in jobs]
    else:
        with _process_pool(workers) as pool:
            results = list(pool.map(_prefix_job, jobs))
    out = {}
    for name in ("prefix", "ntk", "ntk_short"):
        out[name] = {split: np.empty((len(multipliers), len(seeds)))
                     for split in SPLITS + ("passkey",)}
        for j, result in enumerate(results):
            for k, (hits, counted, key) in enumerate(result[name]):
                distance = np.arange(len(counted))
                for split, keep in (("all", distance >= 0), ("near", distance < train_length),
                                    ("far", distance >= train_length)):
                    out[name][split][k, j] = hits[keep].sum() / counted[keep].sum()
                out[name]["passkey"][k, j] = key
    return out


def run_context_extension(task, config, *, train_length=16, multipliers=(2, 4),
                          methods=METHODS, checkpoints=(0, 25, 50, 100), seeds=(0, 1, 2),
                          steps=1000, batch=16, lr=1e-2, tune_batch=8, tune_lr=1e-3,
                          tune_warmup=10, n_test=128, yarn_params=(), scratch=True,
                          scratch_batch=None, scratch_steps=None, scratch_lr=None,
                          ceiling_steps=(), passkey=False, test_seed=None, workers=None,
                          progress=None):
    """Pre-train at ``train_length``, extend with every method, fine-tune, and train a ceiling.

    Parameters
    ----------
    task : Task
    config : ModelConfig with ``scheme="rope"`` and no ``rope_scaling``: the pre-trained model.
    multipliers : tuple of int > 1
        Test (and fine-tune) lengths ``m * train_length``; each method's factor is ``m``.
    methods : tuple from :data:`METHODS`
    checkpoints : tuple of int, the first 0
        Fine-tune step counts at which each method is evaluated; 0 is the stretched model
        with no fine-tune. One fine-tune per (method, multiplier, seed) is saved at each count.
    seeds : tuple of int
        One pre-trained model per seed, shared by every method.
    steps, batch, lr : pre-training (and from-scratch) settings, as :func:`train`.
    tune_batch, tune_lr, tune_warmup : fine-tune settings, as :func:`fine_tune`.
    n_test : int
        Test sequences per length (the same sequences for every model).
    yarn_params : tuple of ``(name, value)``
        YaRN's keywords (``beta_fast``, ``beta_slow``); empty: the defaults 32 and 1.
    scratch : bool
        Also train the ceiling: a model with the unchanged RoPE trained from scratch at
        ``max(multipliers) * train_length`` with the pre-training's steps, batch and learning
        rate, evaluated at every multiplier (a causal model trained at a length is trained on
        every shorter prefix too).
    scratch_batch, scratch_steps, scratch_lr : int, int, float or None
        The ceiling's batch, steps and peak learning rate (``None``: the pre-training's).
    ceiling_steps : tuple of int
        More models trained from scratch at the longest length, one per seed and step count
        (the ceiling's batch and learning rate), each evaluated like the ceiling: its curve
        against training steps shows whether the ceiling has flattened.
    passkey : bool
        Also evaluate every model on :func:`evaluate_passkey` (``min_distance`` = ``L``) at
        every length and checkpoint: accuracy and the attention the query pays to the answer.
    test_seed : int or None
        ``None`` scores every model on the default test sequences (those of
        :func:`evaluate_by_distance` and :func:`evaluate_passkey`); an integer draws a fresh
        test set from ``test_seed`` (recall) and ``test_seed + 1`` (passkey), baselines
        included, and is stored in the settings: the same seeds' models, on other sequences.
    workers : int or None
        Worker processes (``None``: one per CPU core).
    progress : bool or None
        A progress bar over the jobs; ``None``: in a terminal or a Jupyter kernel, but not when
        the ``CI`` environment variable is set or ``COURSE_PROGRESS=0``.

    Returns
    -------
    ContextExtension
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    if (not isinstance(config, ModelConfig) or config.scheme != "rope"
            or config.rope_scaling is not None):
        raise TypeError("config must be a ModelConfig with scheme='rope' and no rope_scaling")
    if config.vocab_size != task.vocab_size:
        raise ValueError(f"config.vocab_size must equal the task's vocabulary ({task.vocab_size})")
    train_length = val.positive_int(train_length, "train_length")
    for name, seq in (("multipliers", multipliers), ("methods", methods),
                      ("checkpoints", checkpoints), ("seeds", seeds), ("yarn_params", yarn_params)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, (list, tuple)):
            raise TypeError(f"{name} must be a list or tuple, got {seq!r:.60}")
    multipliers = tuple(val.positive_int(m, "multipliers") for m in multipliers)
    if not multipliers or min(multipliers) < 2:
        raise ValueError(f"multipliers must be integers >= 2, got {multipliers}")
    methods = tuple(val.choice(m, "methods", METHODS) for m in methods)
    checkpoints = tuple(val.positive_int(k, "checkpoints", allow_zero=True) for k in checkpoints)
    if (len(checkpoints) < 2 or checkpoints[0] != 0
            or list(checkpoints) != sorted(set(checkpoints))):
        raise ValueError(f"checkpoints must start at 0 and increase, got {checkpoints}")
    seeds = tuple(val.positive_int(s, "seeds", allow_zero=True) for s in seeds)
    if not seeds or not methods:
        raise ValueError("seeds and methods must each hold at least one value")
    settings = {"train_length": train_length, "multipliers": multipliers,
                "checkpoints": checkpoints, "steps": val.positive_int(steps, "steps"),
                "batch": val.positive_int(batch, "batch"), "lr": val.positive_float(lr, "lr"),
                "tune_batch": val.positive_int(tune_batch, "tune_batch"),
                "tune_lr": val.positive_float(tune_lr, "tune_lr"),
                "tune_warmup": val.positive_int(tune_warmup, "tune_warmup", allow_zero=True),
                "n_test": val.positive_int(n_test, "n_test"), "yarn_params": tuple(yarn_params),
                "seeds": seeds, "rope_base": config.rope_base,
                "scratch_batch": val.positive_int(scratch_batch or batch, "scratch_batch"),
                "scratch_steps": val.positive_int(scratch_steps or steps, "scratch_steps"),
                "scratch_lr": val.positive_float(scratch_lr or lr, "scratch_lr"),
                "passkey": val.boolean(passkey, "passkey")}
    if isinstance(ceiling_steps, (str, bytes)) or not isinstance(ceiling_steps, (list, tuple)):
        raise TypeError(f"ceiling_steps must be a list or tuple, got {ceiling_steps!r:.60}")
    ceiling_steps = tuple(val.positive_int(n, "ceiling_steps") for n in ceiling_steps)
    if passkey and task.name != "recall_latest":
        raise ValueError(f"passkey needs the recall_latest task, got {task.name!r}")
    settings["ceiling_steps"] = ceiling_steps
    if test_seed is not None:   # absent by default, so that stored runs keep their settings
        settings["test_seed"] = _fresh_test_seed(test_seed)
        # the streams training reads: initialisation, pre-training data, fine-tune data
        taken = {t for s in seeds for t in (s, s + 1, *(1000 * s + 10 * k
                                                        for k in range(len(multipliers))))}
        if {settings["test_seed"], settings["test_seed"] + 1} & taken:
            raise ValueError(f"test_seed must not draw a stream training reads (seeds "
                             f"{sorted(taken)}), got {test_seed}")
    scratch = val.boolean(scratch, "scratch")
    progress = _interactive_progress() if progress is None else val.boolean(progress, "progress")
    first = [{"id": ("base", s), "kind": "base", "task": task, "config": config, "seed": s,
              "settings": settings} for s in seeds]
    if scratch:
        first += [{"id": ("scratch", s), "kind": "scratch", "task": task, "config": config,
                   "seed": s, "settings": settings} for s in seeds]
    # the longest first, so that they overlap the fine-tunes
    first = [{"id": ("ceiling", s, n), "kind": "scratch", "task": task, "config": config,
              "seed": s, "steps": n, "settings": settings}
             for n in sorted(ceiling_steps, reverse=True) for s in seeds] + first

    def followers(job, result):
        return [{"id": ("tune", job["seed"], method, m), "kind": "tune", "task": task,
                 "config": method_config(config, method, m, train_length, yarn_params),
                 "params": result[0], "length": m * train_length,
                 # The same fine-tune data for every method (paired comparisons): the seed
                 # depends on the pre-training seed and the length, not on the method.
                 "seed": 1000 * job["seed"] + 10 * multipliers.index(m),
                 "settings": settings}
                for m in multipliers for method in methods]

    n_total = len(first) + len(seeds) * len(methods) * len(multipliers)
    if workers is None:
        workers = min(os.cpu_count() or 1, n_total)
    workers = val.positive_int(workers, "workers")
    results = _schedule(first, followers, workers, progress, f"{task.name}: jobs", n_total)

    longest = max(multipliers) * train_length
    shape = (len(methods), len(multipliers), len(checkpoints), len(seeds))
    correct = np.zeros(shape + (longest,), dtype=np.int64)
    correct_dist = np.zeros(shape + (longest,), dtype=np.int64)
    total = np.zeros((len(multipliers), longest), dtype=np.int64)
    total_dist = np.zeros((len(multipliers), longest), dtype=np.int64)
    loss = np.empty(shape)
    n_layers, n_heads = config.n_layers, config.n_heads
    pk = {"correct": np.zeros(shape, dtype=np.int64),
          "total": np.zeros(len(multipliers), dtype=np.int64),
          "needle": np.zeros(shape + (n_layers, n_heads)),
          "blind": np.zeros(len(multipliers)), "window": np.zeros(len(multipliers)),
          "scratch_correct": np.zeros((len(multipliers), len(seeds)), dtype=np.int64),
          "scratch_needle": np.zeros((len(multipliers), len(seeds), n_layers, n_heads))}
    tune_losses = np.empty((len(methods), len(multipliers), len(seeds), checkpoints[-1]))
    for a, method in enumerate(methods):
        for k, m in enumerate(multipliers):
            for j, s in enumerate(seeds):
                _, evals, curve = results[("tune", s, method, m)]
                tune_losses[a, k, j] = curve
                for c, (hits, labelled, test_loss, hits_d, labelled_d, *key) in enumerate(evals):
                    if key:
                        pk["correct"][a, k, c, j], pk["total"][k], pk["needle"][a, k, c, j], \
                            pk["blind"][k], pk["window"][k] = key
                    correct[a, k, c, j, :len(hits)] = hits
                    total[k, :len(labelled)] = labelled
                    correct_dist[a, k, c, j, :len(hits_d)] = hits_d
                    total_dist[k, :len(labelled_d)] = labelled_d
                    loss[a, k, c, j] = test_loss
    scratch_correct = np.zeros((len(multipliers), len(seeds), longest), dtype=np.int64)
    scratch_correct_dist = np.zeros((len(multipliers), len(seeds), longest), dtype=np.int64)
    scratch_loss = np.full((len(multipliers), len(seeds)), np.nan)
    if scratch:
        for j, s in enumerate(seeds):
            for k, (hits, _, test_loss, hits_d, _, *key) in enumerate(results[("scratch", s)][1]):
                if key:
                    pk["scratch_correct"][k, j], _, pk["scratch_needle"][k, j] = key[:3]
                scratch_correct[k, j, :len(hits)] = hits
                scratch_correct_dist[k, j, :len(hits_d)] = hits_d
                scratch_loss[k, j] = test_loss
    baseline_dist = {"blind": np.zeros((len(multipliers), longest)),
                     "window": np.zeros((len(multipliers), longest))}
    if task.name != "copy_back":
        for k, m in enumerate(multipliers):
            base = baselines_by_distance(task, m * train_length, from_position=train_length,
                                         window=train_length, n_sequences=settings["n_test"],
                                         seed=_test_seeds(settings)[0])
            for name in baseline_dist:
                baseline_dist[name][k, :m * train_length] = base[name]
    ceiling = _ceiling_of(results, seeds, ceiling_steps, train_length)
    base_accuracy = np.array([results[("base", s)][1][0][0].sum() / results[("base", s)][1][0][1].sum()
                              for s in seeds])
    base_models = tuple((config, results[("base", s)][0]) for s in seeds)
    settings = settings | {"scratch": scratch, "versions": versions()}
    return ContextExtension(task=task, train_length=train_length, multipliers=multipliers,
                            methods=methods, checkpoints=checkpoints, seeds=seeds,
                            settings=settings, correct=correct, total=total, loss=loss,
                            scratch_correct=scratch_correct, scratch_loss=scratch_loss,
                            base_accuracy=base_accuracy, base_models=base_models,
                            tune_losses=tune_losses, correct_dist=correct_dist,
                            total_dist=total_dist, scratch_correct_dist=scratch_correct_dist,
                            baseline_dist=baseline_dist, passkey=pk if passkey else None,
                            ceiling_curve=ceiling or None)


SHORT_LABELS = {"rope": "RoPE", "pi": "PI", "ntk": "NTK-aware", "dynamic": "dynamic NTK",
                "yarn": "YaRN", "yarn_no_t": "YaRN, no temp.", "scratch": "from scratch"}


def _cell(values, spread, decimals=2):
    values = np.asarray(values, dtype=float)
    if not spread or values.size == 1:
        return f"{values.mean():.{decimals}f}"
    return f"{values.mean():.{decimals}f} ({values.min():.{decimals}f}-{values.max():.{decimals}f})"


def table_rows(methods, checkpoints, multipliers, accuracy, ceiling=None, *, spread=True,
               decimals=2):
    """Header and rows of the accuracy table from arrays (also for results read from a file).

    ``accuracy``: ``(methods, multipliers, checkpoints, seeds)``; ``ceiling``:
    ``(multipliers, seeds)`` or ``None``. One column per (multiplier, checkpoint).
    """
    decimals = val.positive_int(decimals, "decimals")
    for name, seq in (("methods", methods), ("checkpoints", checkpoints),
                      ("multipliers", multipliers)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, (list, tuple)) or not seq:
            raise TypeError(f"{name} must be a non-empty list or tuple, got {seq!r:.60}")
    if any(m not in SHORT_LABELS for m in methods):
        raise ValueError(f"methods must be names from {tuple(SHORT_LABELS)}, got {methods!r:.60}")
    accuracy = val.numeric_array(accuracy, "accuracy")
    if accuracy.ndim != 4 or accuracy.shape[:3] != (len(methods), len(multipliers),
                                                    len(checkpoints)):
        raise ValueError("accuracy must have shape (methods, multipliers, checkpoints, seeds) = "
                         f"({len(methods)}, {len(multipliers)}, {len(checkpoints)}, seeds), "
                         f"got {accuracy.shape}")
    if ceiling is not None:
        ceiling = val.numeric_array(ceiling, "ceiling")
        if ceiling.ndim != 2 or ceiling.shape[0] != len(multipliers):
            raise ValueError(f"ceiling must have shape (multipliers, seeds), got {ceiling.shape}")
    headers = ["method"] + [f"{m}L {c}" for m in multipliers for c in checkpoints]
    rows = [[SHORT_LABELS[method]] + [_cell(accuracy[a][k][c], spread, decimals)
                                      for k in range(len(multipliers))
                                      for c in range(len(checkpoints))]
            for a, method in enumerate(methods)]
    if ceiling is not None:
        rows.append([SHORT_LABELS["scratch"]] + [_cell(ceiling[k], spread, decimals)
                                                 for k in range(len(multipliers))
                                                 for _ in checkpoints])
    return headers, rows


def format_table(headers, rows, *, markdown=False):
    """Aligned text (or a markdown table) from a header and rows of strings."""
    if not isinstance(headers, (list, tuple)) or not headers \
            or not all(isinstance(h, str) for h in headers):
        raise TypeError(f"headers must be a non-empty list of strings, got {headers!r:.60}")
    if not isinstance(rows, (list, tuple)) or not all(
            isinstance(r, (list, tuple)) and len(r) == len(headers)
            and all(isinstance(x, str) for x in r) for r in rows):
        raise TypeError(f"rows must be a list of rows of {len(headers)} strings, got "
                        f"{rows!r:.60}")
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(r[c]) for r in rows + [headers]) for c in range(len(headers))]

    def line(cells):
        return "  ".join(x.ljust(w) if c == 0 else x.rjust(w)
                         for c, (x, w) in enumerate(zip(cells, widths, strict=True)))

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def extension_table(result, *, multiplier=None, spread=True, markdown=False, split="all",
                    decimals=2):
    """Accuracy beyond the training length on ``split`` (:data:`SPLITS`): one row per method
    (and the model trained long), one column per fine-tune step count (``"4L 25"``: at 4L after
    25 steps), for one multiplier or all; mean over seeds and, with ``spread``, (worst-best
    seed). With counts by distance, the position-blind and window baselines close the table."""
    if not isinstance(result, ContextExtension):
        raise TypeError(f"result must be a ContextExtension, got {type(result).__name__}")
    split = val.choice(split, "split", SPLITS)
    ks = (range(len(result.multipliers)) if multiplier is None
          else [result.multipliers.index(multiplier)])
    by_distance = result.correct_dist is not None
    acc, ceiling = result.split_arrays(split)
    headers, rows = table_rows(result.methods, result.checkpoints,
                               [result.multipliers[k] for k in ks], acc[:, list(ks)],
                               ceiling[list(ks)] if result.settings.get("scratch", True)
                               else None, spread=spread, decimals=decimals)
    if by_distance and result.task.name != "copy_back":
        for name, label in (("blind", "position-blind"), ("window", "window < L")):
            values = result.baseline_split_accuracy(name, split)
            rows.append([label] + [f"{values[k]:.{decimals}f}" for k in ks
                                   for _ in result.checkpoints])
    return format_table(headers, rows, markdown=markdown)


def _style(method):
    return {"color": _COLORS[method], "linestyle": "--" if method == "yarn_no_t" else "-",
            "label": METHOD_LABELS[method]}


def plot_by_position(result, multiplier, *, width=4, axes=None):
    """Accuracy by position at ``multiplier * L``, one panel per method: before the fine-tune
    (thin) and after the longest one (thick), with the ceiling (black, dotted) in every panel.
    Returns the axes."""
    if not isinstance(result, ContextExtension):
        raise TypeError(f"result must be a ContextExtension, got {type(result).__name__}")
    if multiplier not in result.multipliers:
        raise ValueError(f"multiplier must be one of {result.multipliers}, got {multiplier!r:.60}")
    width = val.positive_int(width, "width")
    k = result.multipliers.index(multiplier)
    n_methods = len(result.methods)
    if axes is None:
        _, axes = plt.subplots(2, (n_methods + 1) // 2, figsize=(10, 5.2), sharex=True,
                               sharey=True)
    axes = np.ravel(axes)
    for a, method in enumerate(result.methods):
        ax = axes[a]
        for c, lw, alpha, what in ((0, 1.2, 0.7, "no fine-tune"),
                                   (len(result.checkpoints) - 1, 2.2, 1.0,
                                    f"{result.checkpoints[-1]} steps")):
            starts, acc = result.by_position(result.correct[a, k, c], k, width)
            ax.plot(starts + width / 2, acc, color=_COLORS[method], linewidth=lw, alpha=alpha,
                    linestyle="-" if c else ":", label=what)
        if result.settings.get("scratch", True):
            starts, acc = result.by_position(result.scratch_correct[k], k, width)
            ax.plot(starts + width / 2, acc, color="k", linewidth=1, linestyle="--",
                    label="trained long")
        ax.axvline(result.train_length, color="0.5", linewidth=0.8)
        ax.axhline(result.task.chance, color="0.5", linestyle=":", linewidth=0.8)
        ax.set_title(METHOD_LABELS[method], fontsize=10)
        ax.set_ylim(0, 1.04)
    for ax in axes[n_methods:]:
        ax.set_visible(False)
    # outside the panels, right of the first row: over the data it hides curves
    axes[(n_methods + 1) // 2 - 1].legend(fontsize=9, loc="upper left",
                                          bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    for ax in axes[-((n_methods + 1) // 2):]:
        ax.set_xlabel("position")
    for ax in axes[::(n_methods + 1) // 2]:
        ax.set_ylabel("accuracy")
    return axes


def plot_vs_steps(result, *, axes=None, split="all"):
    """Accuracy beyond ``L`` on ``split`` (:data:`SPLITS`) against fine-tune steps, one panel per
    multiplier, one line per method (mean over seeds, worst-best band), the model trained long
    as a dashed line and, with counts by distance, the position-blind baseline (dash-dotted).
    Returns the axes."""
    if not isinstance(result, ContextExtension):
        raise TypeError(f"result must be a ContextExtension, got {type(result).__name__}")
    split = val.choice(split, "split", SPLITS)
    if axes is None:
        _, axes = plt.subplots(1, len(result.multipliers), figsize=(10, 4), sharey=True)
    axes = np.ravel(axes)
    by_distance = result.correct_dist is not None
    acc, ceiling = result.split_arrays(split)
    steps = np.array(result.checkpoints)
    for k, m in enumerate(result.multipliers):
        ax = axes[k]
        for a, method in enumerate(result.methods):
            ax.plot(steps, acc[a, k].mean(axis=-1), marker="o", markersize=4, **_style(method))
            ax.fill_between(steps, acc[a, k].min(axis=-1), acc[a, k].max(axis=-1), alpha=0.1,
                            color=_COLORS[method], linewidth=0)
        if result.settings.get("scratch", True):
            ax.axhline(ceiling[k].mean(), color="k", linestyle="--", linewidth=1,
                       label=METHOD_LABELS["scratch"])
        if by_distance and result.task.name != "copy_back":
            ax.axhline(result.baseline_split_accuracy("blind", split)[k], color="0.3",
                       linestyle="-.", linewidth=1, label="position-blind")
        ax.axhline(result.task.chance, color="0.5", linestyle=":", linewidth=0.8)
        ax.set(title=f"{m}L = {m * result.train_length} tokens", xlabel="fine-tune steps")
        ax.set_ylim(0, 1.04)
    axes[0].set_ylabel(f"accuracy, positions >= {result.train_length}" if split == "all" else
                       f"accuracy, key {'>=' if split == 'far' else '<'} "
                       f"{result.train_length} back")
    # Outside the panels, right of the last: inside, it covered the curves it names.
    axes[-1].legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return axes


CLAIMS = (
    ("extrapolation fails (4L, 0 steps)", "Chen et al. 2023, abstract",
     ("scratch", 4, 0), ("rope", 4, 0)),
    ("extrapolation below blind (4L, 0 steps)", "Chen et al. 2023, abstract",
     ("blind", 4, 0), ("rope", 4, 0)),
    ("PI fine-tunes past RoPE (4L, 100 steps)", "Chen et al. 2023, introduction",
     ("pi", 4, 100), ("rope", 4, 100)),
    ("PI: fine-tune recovers (4L, 0 -> 100)", "Chen et al. 2023, abstract",
     ("pi", 4, 100), ("pi", 4, 0)),
    ("YaRN before PI (2L, 25 steps)", "Peng et al. 2023, abstract", ("yarn", 2, 25), ("pi", 2, 25)),
    ("YaRN before PI (2L, 50 steps)", "Peng et al. 2023, abstract", ("yarn", 2, 50), ("pi", 2, 50)),
    ("YaRN before PI (4L, 25 steps)", "Peng et al. 2023, abstract", ("yarn", 4, 25), ("pi", 4, 25)),
    ("YaRN before PI (4L, 50 steps)", "Peng et al. 2023, abstract", ("yarn", 4, 50), ("pi", 4, 50)),
    ("NTK-aware over PI (2L, 0 steps)", "bloc97 2023, title", ("ntk", 2, 0), ("pi", 2, 0)),
    ("NTK-aware over PI (4L, 0 steps)", "bloc97 2023, title", ("ntk", 4, 0), ("pi", 4, 0)),
    ("NTK-aware over blind (4L, 0 steps)", "bloc97 2023, title", ("ntk", 4, 0), ("blind", 4, 0)),
    ("temperature helps YaRN (4L, 25)", "Peng et al. 2023, section 3.4",
     ("yarn", 4, 25), ("yarn_no_t", 4, 25)),
    ("3.3 dynamic over RoPE (4L, 0 steps)", "Peng et al. 2023, section 3.3",
     ("dynamic_prefix", 4, 0), ("rope", 4, 0)),
    ("3.3 dynamic over blind (4L, 0 steps)", "Peng et al. 2023, introduction",
     ("dynamic_prefix", 4, 0), ("blind", 4, 0)),
    ("3.3 dynamic over NTK set for 2L (4L, 0)", "Peng et al. 2023, section 3.3",
     ("dynamic_prefix", 4, 0), ("ntk_short", 4, 0)),
    ("3.3 dynamic over NTK set for 4L (4L, 0)", "Peng et al. 2023, section 3.3",
     ("dynamic_prefix", 4, 0), ("ntk", 4, 0)),
)
"""Each claim as ``(name, where it is made, A, B)``: the toy agrees when ``A - B > 0`` on the far
split. ``A`` and ``B`` are ``(who, multiplier, fine-tune steps)``, ``who`` a method of
:data:`METHODS`, ``"scratch"`` (trained at the long length), ``"blind"``, ``"window"`` or
``"dynamic_prefix"`` (:func:`prefix_dynamic`, YaRN's section 3.3 rule scored prefix by prefix,
with no fine-tune) or ``"ntk_short"`` (static NTK-aware set for 2L, no fine-tune). Section 3.3
argues that a static factor costs accuracy below ``L`` and breaks past the length it is set
for; the second of its rows tests that, the third compares the two at the length the static
factor is set for, where the paper's argument does not apply."""

_PREFIX_ROWS = {"dynamic_prefix": "prefix", "ntk_short": "ntk_short"}
"""Who reads a row of :func:`prefix_dynamic`, and which."""

_PASSKEY_SAME = ("3.3 dynamic over NTK set for 4L",)
"""Claims left out on the passkey: its query is the sequence's last token, whose prefix is the
whole sequence, so the section 3.3 rule gives it NTK-aware's frequencies for ``s`` exactly."""


def summarise(result):
    """A :class:`ContextExtension` as plain lists (for JSON): per-seed accuracy on every split of
    :data:`SPLITS` (and ``"passkey"``, :func:`evaluate_passkey`, when the run has it), the
    from-scratch model's, the baselines', losses and settings. ``needle_attention``:
    ``(methods, multipliers, checkpoints, layers, seeds)``, each layer's largest head weight on
    the passkey's answer; ``ceiling_curve``: ``{steps: {"far", "passkey": per seed}}``."""
    if not isinstance(result, ContextExtension):
        raise TypeError(f"result must be a ContextExtension, got {type(result).__name__}")

    def stats(x):
        return {"mean": np.round(x.mean(axis=-1), 4).tolist(),
                "per_seed": np.round(x, 4).tolist()}

    out = {"methods": list(result.methods), "multipliers": list(result.multipliers),
           "checkpoints": list(result.checkpoints), "seeds": list(result.seeds),
           "accuracy": {split: stats(result.split_accuracy(split)) for split in SPLITS},
           "loss": stats(result.loss),
           "base_accuracy": np.round(result.base_accuracy, 4).tolist(),
           "baselines": {name: {split: np.round(result.baseline_split_accuracy(name, split),
                                                4).tolist() for split in SPLITS}
                         for name in ("blind", "window")},
           "settings": {k: (list(v) if isinstance(v, tuple) else v)
                        for k, v in result.settings.items()}}
    if result.settings["scratch"]:
        out["scratch_accuracy"] = {split: stats(result.scratch_split_accuracy(split))
                                   for split in SPLITS}
    pk = result.passkey
    if pk is not None:       # the passkey task, scored like a split
        total = pk["total"].astype(float)
        out["accuracy"]["passkey"] = stats(pk["correct"] / total[None, :, None, None])
        for name in ("blind", "window"):
            out["baselines"][name]["passkey"] = np.round(pk[name] / total, 4).tolist()
        # the head of each layer that pays the answer the most attention, per seed
        out["needle_attention"] = stats(pk["needle"].max(axis=-1).transpose(0, 1, 2, 4, 3))
        if result.settings["scratch"]:
            out["scratch_accuracy"]["passkey"] = stats(pk["scratch_correct"] / total[:, None])
            out["scratch_needle_attention"] = stats(
                pk["scratch_needle"].max(axis=-1).transpose(0, 2, 1))
    if result.ceiling_curve:
        out["ceiling_curve"] = {str(n): {"far": np.round(far, 4).tolist(),
                                         "passkey": np.round(key, 4).tolist()}
                                for n, (far, key) in sorted(result.ceiling_curve.items())}
    return out


def _record(run):
    keys = ("methods", "multipliers", "checkpoints", "seeds", "accuracy", "baselines")
    if not isinstance(run, dict) or not all(key in run for key in keys):
        raise TypeError(f"run must be a record from summarise (a dict with {keys}), got "
                        f"{run!r:.60}")
    return run


def cell_values(run, who, multiplier, steps, split="far"):
    """Per-seed accuracy of ``who`` at ``multiplier`` after ``steps`` fine-tune steps, from a
    :func:`summarise` record (``"scratch"``: the model trained long; ``"blind"``, ``"window"``:
    the baselines, the same on every seed; ``"dynamic_prefix"``, ``"ntk_short"``: the rows of
    :func:`prefix_dynamic` stored under ``"prefix_dynamic"``, at 0 steps only)."""
    run = _record(run)
    split = val.choice(split, "split", tuple(run["accuracy"]))
    if not isinstance(who, str):
        raise TypeError(f"who must be a method name, 'scratch', 'blind', 'window', "
                        f"'dynamic_prefix' or 'ntk_short', got {who!r:.60}")
    if multiplier not in run["multipliers"]:
        raise ValueError(f"multiplier must be one of {run['multipliers']}, got {multiplier!r}")
    k = run["multipliers"].index(multiplier)
    n_seeds = len(run["seeds"])
    if who in ("blind", "window"):
        return np.full(n_seeds, run["baselines"][who][split][k])
    if who == "scratch":
        return np.array(run["scratch_accuracy"][split]["per_seed"][k])
    if who in _PREFIX_ROWS:
        if "prefix_dynamic" not in run or steps != 0:
            raise ValueError(f"{who} needs a record with 'prefix_dynamic' and steps 0")
        return np.array(run["prefix_dynamic"][_PREFIX_ROWS[who]][split][k])
    if who not in run["methods"] or steps not in run["checkpoints"]:
        raise ValueError(f"who must be a method of {run['methods']} and steps one of "
                         f"{run['checkpoints']}, got {who!r}, {steps!r}")
    return np.array(run["accuracy"][split]["per_seed"][run["methods"].index(who)][k]
                    [run["checkpoints"].index(steps)])


def claim_differences(run, split="far", claims=CLAIMS):
    """``{claim name: per-seed A - B}`` for the claims whose cells ``run`` holds."""
    run = _record(run)
    if not isinstance(claims, (list, tuple)) or not all(
            isinstance(c, tuple) and len(c) == 4 and all(isinstance(x, tuple) and len(x) == 3
                                                         for x in c[2:]) for c in claims):
        raise TypeError(f"claims must be a tuple of (name, source, A, B) as CLAIMS, got "
                        f"{claims!r:.60}")
    out = {}
    for name, _, a, b in claims:
        if all(w in ("scratch", "blind", "window") or (w in run["methods"]
                                                       and st in run["checkpoints"])
               or (w in _PREFIX_ROWS and "prefix_dynamic" in run and st == 0)
               for w, _, st in (a, b)) and ("scratch_accuracy" in run or "scratch" not in
                                            (a[0], b[0])):
            out[name] = cell_values(run, *a, split) - cell_values(run, *b, split)
    return out


def claim_table(run, split="far", *, n_resamples=10_000, level=0.95):
    """``[(claim, mean, low, high, verdict)]``: :func:`paired_bootstrap` over seeds of every
    claim's difference on ``split``, and its :func:`verdict`."""
    rows = []
    n_resamples = val.positive_int(n_resamples, "n_resamples")
    for name, diff in claim_differences(run, split).items():
        mean, low, high = paired_bootstrap(diff, n_resamples=n_resamples, level=level)
        rows.append((name, mean, low, high, verdict(low, high)))
    return rows


def verdict_matrix(runs, split="far"):
    """Every claim against every run: ``{claim: {label: (mean, low, high, verdict, t_verdict)}}``
    (the interval and verdict of :func:`claim_table`, and the verdict of :func:`t_interval`).

    ``runs``: ``{label: record}`` of :func:`summarise` records (the main grid and its variants).
    A claim appears when at least one run holds its cells; on the ``"passkey"`` split the claims
    against the position-blind reader are left out, because that reader is always right there,
    and so are those of ``_PASSKEY_SAME`` (equal there by construction).
    """
    if not isinstance(runs, dict) or not runs:
        raise TypeError(f"runs must be a non-empty dict of summarise records, got {runs!r:.60}")
    tables = {}
    for label, run in runs.items():
        diffs = claim_differences(run, split)
        tables[label] = {row[0]: row[1:] + (verdict(*t_interval(diffs[row[0]])[1:]),)
                         for row in claim_table(run, split)
                         if not (split == "passkey" and ("blind" in row[0] or any(
                             row[0].startswith(same) for same in _PASSKEY_SAME)))}
    return {name: {label: table[name] for label, table in tables.items() if name in table}
            for name, *_ in CLAIMS if any(name in table for table in tables.values())}


def grid_runs(record):
    """``{label: run}`` of a grid record (``lab2_grid.json``, written by ``tools/lab2_grid.py``):
    the main grid, then its learning-rate, base and YaRN-beta variants, in that order."""
    if not isinstance(record, dict) or "main" not in record or "toy_base" not in record:
        raise TypeError(f"record must be a grid record (a dict with 'main' and 'toy_base'), got "
                        f"{record!r:.60}")
    main = _record(record["main"])
    if not isinstance(record["toy_base"], (int, float)) or isinstance(record["toy_base"], bool):
        raise TypeError(f"record['toy_base'] must be a number, got {record['toy_base']!r:.60}")
    out = {f"main (base {record['toy_base']:.2f}, lr {main['settings']['tune_lr']:g})": main}
    for lr, run in record.get("lr_variants", {}).items():
        out[f"lr {float(lr):g}"] = run
    for base, run in record.get("bases", {}).items():
        out[f"base {float(base):g}"] = run
    if "yarn_beta" in record:
        out["YaRN beta rescaled"] = record["yarn_beta"]["run"]
    return out


def run_fingerprint(run):
    """A short hash of a run's per-seed numbers (accuracies, baselines, the prefix-by-prefix
    rows): a rerun's comparison names the fingerprints it was made against, so that a run
    regenerated since is not judged by an older comparison."""
    import hashlib

    run = _record(run)
    numbers = {key: run.get(key) for key in ("seeds", "accuracy", "baselines", "prefix_dynamic")}
    return hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest()[:16]


_RERUN_SPLITS = ("far", "passkey")
"""The splits a rerun's comparison holds verdicts for."""


def _reruns_of(record):
    """``record["reruns"]`` checked: each entry holds the rerun's verdicts (``theirs``) for
    :data:`_RERUN_SPLITS`, made against the runs the record holds now."""
    runs = grid_runs(record)
    reruns = record.get("reruns", {})
    if not isinstance(reruns, dict):
        raise TypeError(f"record['reruns'] must be a dict {{where: comparison}}, got "
                        f"{type(reruns).__name__}")
    for where, diff in reruns.items():
        if not isinstance(diff, dict) or not all(
                isinstance(diff.get(split), dict) and "theirs" in diff[split]
                for split in _RERUN_SPLITS):
            raise ValueError(f"record['reruns'][{where!r}] holds no rerun verdicts ('theirs'); "
                             "compare the rerun again (tools/lab2_grid.py --compare)")
        if not isinstance(diff.get("fingerprints"), dict):
            raise ValueError(f"record['reruns'][{where!r}] names no fingerprints of the runs it "
                             "was compared with; compare the rerun again")
        for label, fingerprint in diff["fingerprints"].items():
            if label not in runs or run_fingerprint(runs[label]) != fingerprint:
                raise ValueError(f"record['reruns'][{where!r}] was compared with another run "
                                 f"{label!r} than the record holds now; compare it again")
    return reruns


def stated_verdicts(record, split="far"):
    """Every claim in every run of a grid record, over every floating-point path the grid was
    run on: ``{claim: {label: {"mean", "low", "high", "here", "t", "paths", "stated",
    "same_as"}}}``.

    ``mean``, ``low``, ``high``, ``here`` and ``t`` are the record's own (:func:`verdict_matrix`
    of :func:`grid_runs`); ``paths`` is ``{where: verdict}`` for each recorded rerun
    (``record["reruns"]``, written by ``tools/lab2_grid.py --compare``) that ran the
    measurement. Training is chaotic, so another order of floating-point additions gives other
    per-seed accuracies, and a verdict whose interval ends near 0 can change with it. The
    verdict stated is ``here`` when every path gives the same one, and ``"unclear"`` otherwise:
    a filter for verdicts that do not depend on the path, not a test with an error rate of its
    own. ``same_as`` names an earlier run whose cells of the claim are the same measurement
    (equal per-seed values: the no-fine-tune cells the learning-rate variants share with the
    main grid), ``None`` for the first; the paths of a measurement are pooled over its runs.
    """
    split = val.choice(split, "split", _RERUN_SPLITS)
    reruns = _reruns_of(record)
    runs = grid_runs(record)
    out = {}
    for claim, cells in verdict_matrix(runs, split).items():
        a, b = next((a, b) for name, _, a, b in CLAIMS if name == claim)
        values = {label: tuple(tuple(cell_values(runs[label], *who, split)) for who in (a, b))
                  for label in cells}    # the per-seed values of A and of B
        first = {}     # the same cells -> the first run that measured them
        for label in cells:
            first.setdefault(values[label], label)
        group = {label: first[values[label]] for label in cells}
        out[claim] = {}
        for label, (mean, low, high, here, t_word) in cells.items():
            paths = {}
            for where, diff in reruns.items():
                seen = {diff[split]["theirs"].get(claim, {}).get(other) for other in cells
                        if group[other] == group[label]} - {None}
                if seen:     # one word when the path gives one, else its words disagree
                    paths[where] = seen.pop() if len(seen) == 1 else "unclear"
            stated = here if all(v == here for v in paths.values()) else "unclear"
            out[claim][label] = {"mean": mean, "low": low, "high": high, "here": here,
                                 "t": t_word, "paths": paths, "stated": stated,
                                 "same_as": None if group[label] == label else group[label]}
    return out


def rerun_test(record, where, split="far"):
    """How the verdicts stated before the rerun ``where`` fare on it, for the measurements it
    ran, each counted once: ``(held, stated, changed)`` with ``stated`` the number of *agrees*
    and *disagrees* that :func:`stated_verdicts` gives from the record and the reruns recorded
    before ``where``, ``held`` how many of them ``where`` gives too, and ``changed`` the
    ``(claim, label, stated, theirs)`` of the others. A rerun made after the rule of
    :func:`stated_verdicts` was fixed tests it; for earlier ones the count is in-sample."""
    reruns = _reruns_of(record)
    if not isinstance(where, str) or where not in reruns:
        raise ValueError(f"where must be the name of a recorded rerun, one of {list(reruns)}, "
                         f"got {where!r:.60}")
    split = val.choice(split, "split", _RERUN_SPLITS)
    order = list(reruns)
    before = {**record, "reruns": {w: reruns[w] for w in order[:order.index(where)]}}
    return _count_held(stated_verdicts(before, split), reruns[where][split]["theirs"])


def _count_held(stated, theirs):
    """``(held, stated, changed)`` of :func:`rerun_test`: the stated verdicts of ``stated``
    (:func:`stated_verdicts`) that ``theirs`` (``{claim: {label: verdict}}``) measured, each
    measurement counted once, and how many it gives too."""
    held, n_stated, changed = 0, 0, []
    for claim, cells in stated.items():
        groups = {}     # one measurement: the first run that measured it and every run sharing it
        for label, cell in cells.items():
            groups.setdefault(cell["same_as"] or label, []).append(label)
        for first, labels in groups.items():
            words = {theirs.get(claim, {}).get(label) for label in labels} - {None}
            if cells[first]["stated"] == "unclear" or not words:    # not stated, or not rerun
                continue
            word = words.pop() if len(words) == 1 else "unclear"
            n_stated += 1
            if word == cells[first]["stated"]:
                held += 1
            else:
                changed.append((claim, first, cells[first]["stated"], word))
    return held, n_stated, changed


def test_set_check(record, split="far"):
    """How the verdicts stated from the record and its floating-point reruns
    (:func:`stated_verdicts`) fare on a fresh test set: the models retrained from the same
    seeds (on one machine a seeded run repeats, which the record does not show) scored on other
    sequences, stored in ``record["test_set"]`` by ``tools/lab2_grid.py --compare-test-set``.
    ``(held, stated, changed)`` as :func:`rerun_test`. Raises when the comparison was made against runs the
    record no longer holds."""
    fresh = record.get("test_set") if isinstance(record, dict) else None
    split = val.choice(split, "split", _RERUN_SPLITS)
    if not isinstance(fresh, dict) or not isinstance(fresh.get(split), dict) \
            or "theirs" not in fresh[split] or not fresh.get("fingerprints"):
        raise ValueError("record has no test-set comparison (tools/lab2_grid.py "
                         "--compare-test-set)")
    runs = grid_runs(record)
    stale = [label for label, print_ in fresh["fingerprints"].items()
             if label not in runs or run_fingerprint(runs[label]) != print_]
    if stale:
        raise ValueError(f"the test-set comparison was made against other runs than the "
                         f"record's: {stale}")
    return _count_held(stated_verdicts(record, split), fresh[split]["theirs"])


def _on_paths(record, reruns, label, measure):
    """``{"here": measure(run), where: measure(its run), ...}`` over the record's run ``label``
    and the same run of every rerun in ``reruns`` that ran it."""
    if not isinstance(reruns, dict) or not all(isinstance(r, dict) for r in reruns.values()):
        raise TypeError(f"reruns must be a dict {{where: {{label: run}}}}, got {reruns!r:.60}")
    recorded = _reruns_of(record)
    if set(reruns) != set(recorded):
        raise ValueError(f"reruns must be the runs of the record's reruns {list(recorded)}, got "
                         f"{list(reruns)}")
    runs = grid_runs(record)
    if label not in runs:
        raise ValueError(f"label must be a run of the record, one of {list(runs)}, got {label!r}")
    return {where: measure(run) for where, run in [("here", runs[label])]
            + [(w, r[label]) for w, r in reruns.items() if label in r]}


def path_verdicts(record, reruns, label, a, b, split="far"):
    """The verdict of ``A - B`` (cells as in :data:`CLAIMS`) in run ``label`` of a grid record
    on every floating-point path that ran it: ``{"here": (mean, low, high, verdict), where:
    ...}``, ``reruns`` being ``{where: {label: run}}`` (``lab2_reruns.json``, the runs each
    rerun of ``tools/lab2_grid.py --compare`` ran). For differences that are not claims of
    :data:`CLAIMS`, which :func:`stated_verdicts` covers."""
    def measure(run):
        mean, low, high = paired_bootstrap(cell_values(run, *a, split)
                                           - cell_values(run, *b, split))
        return mean, low, high, verdict(low, high)

    return _on_paths(record, reruns, label, measure)


def path_steps(record, reruns, label, multiplier, faster="yarn", slower="pi"):
    """:func:`steps_claim` ("``faster`` reaches the position-blind reader's far accuracy in
    fewer steps than ``slower``") in run ``label`` on every floating-point path that ran it,
    as :func:`path_verdicts`: ``{"here": (mean, low, high, verdict, never), where: ...}``."""
    return _on_paths(record, reruns, label,
                     lambda run: steps_claim(run, faster, slower, multiplier))


def own_ceiling(record, reruns, method, *, steps=200, ceiling_steps=2000, split="far"):
    """``method`` after ``steps`` fine-tune steps at the longest length (the main grid) minus the
    model trained from scratch there with ``method``'s own frequencies for ``ceiling_steps``
    steps (part ``long_methods`` of ``tools/lab2_grid.py``), seed-matched (the same seed's
    initialisation, other data), on every floating-point path that trained both: ``{"here":
    (mean, low, high, verdict), where: ...}``. A rerun's from-scratch curves are paired with the
    main grid that ``reruns`` (``lab2_reruns.json``) holds from the same CPU (the text of its
    name before the last comma; the latest, if that CPU ran it more than once)."""
    runs = grid_runs(record)
    if not isinstance(record.get("long_methods"), dict):
        raise ValueError("record has no part 'long_methods' (make lab2-ceiling)")
    if not isinstance(reruns, dict) or not all(isinstance(r, dict) for r in reruns.values()):
        raise TypeError(f"reruns must be a dict {{where: {{label: run}}}}, got {reruns!r:.60}")
    part, (label, main) = record["long_methods"], next(iter(runs.items()))
    method = val.choice(method, "method", tuple(part["curves"]))
    split = val.choice(split, "split", ("far", "passkey"))
    if str(ceiling_steps) not in part["curves"][method]:
        raise ValueError(f"ceiling_steps must be one of {list(part['curves'][method])}, got "
                         f"{ceiling_steps!r}")
    if part["seeds"] != main["seeds"]:
        raise ValueError("the long_methods models were trained on other seeds than the main grid")
    differ = [k for k in ("train_length", "multipliers", "n_test", "test_seed")
              if part.get("settings", {}).get(k) != main["settings"].get(k)]
    if differ:
        raise ValueError(f"the long_methods models were scored with other settings than the main "
                         f"grid: {differ}")

    def gap(run, curves):
        diff = (cell_values(run, method, max(run["multipliers"]), steps, split)
                - np.asarray(curves[method][str(ceiling_steps)][split], dtype=float))
        mean, low, high = paired_bootstrap(diff)
        return mean, low, high, verdict(low, high)

    out = {"here": gap(main, part["curves"])}
    for where, curves in part.get("reruns", {}).items():
        cpu = where.rsplit(", ", 1)[0]
        same = [w for w, r in reruns.items() if w.rsplit(", ", 1)[0] == cpu and label in r]
        if not same:
            raise ValueError(f"reruns must hold a main grid run from the CPU of {where!r}")
        out[where] = gap(reruns[same[-1]][label], curves)   # that CPU's latest
    return out


def stated_on_paths(paths):
    """The verdict stated from ``{path: (..., verdict, ...)}`` (:func:`path_verdicts`,
    :func:`path_steps`): the one every path gives, else ``"unclear"``, as
    :func:`stated_verdicts` states the claims."""
    if not isinstance(paths, dict) or not paths or not all(
            isinstance(v, tuple) and len(v) >= 4 and v[3] in ("agrees", "disagrees", "unclear")
            for v in paths.values()):
        raise TypeError(f"paths must be a non-empty dict {{path: (mean, low, high, verdict, "
                        f"...)}} as path_verdicts returns, got {paths!r:.60}")
    words = {cells[3] for cells in paths.values()}
    return words.pop() if len(words) == 1 else "unclear"


def steps_to_threshold(run, who, multiplier, threshold=None, split="far"):
    """Per seed, the first checkpoint at which ``who`` reaches ``threshold`` accuracy on
    ``split`` at ``multiplier``, from a :func:`summarise` record; ``inf`` where no checkpoint
    reaches it.

    ``threshold=None`` takes the position-blind reader's exact accuracy at that length and
    split (the floor a reader of far copies must pass), fixed by the test data and not by any
    model. Returns a float array, one entry per seed.
    """
    run = _record(run)
    if threshold is None:
        threshold = float(cell_values(run, "blind", multiplier, None, split)[0])
    threshold = val.real_float(threshold, "threshold")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be an accuracy in [0, 1], got {threshold}")
    acc = np.array([cell_values(run, who, multiplier, steps, split)
                    for steps in run["checkpoints"]])            # (checkpoints, seeds)
    reached = acc >= threshold
    steps = np.array(run["checkpoints"], dtype=float)
    return np.where(reached.any(axis=0), steps[reached.argmax(axis=0)], np.inf)


def steps_claim(run, faster, slower, multiplier, threshold=None, split="far", *,
                n_resamples=10_000, level=0.95):
    """``(mean, low, high, verdict, never)`` for "``faster`` reaches the threshold in fewer
    steps than ``slower``": :func:`paired_bootstrap` of ``steps(slower) - steps(faster)`` per
    seed. A seed that never reaches it counts as twice the last checkpoint (a lower bound, so
    the difference is bounded, not exact, on such seeds); ``never`` counts them per method."""
    a = steps_to_threshold(run, faster, multiplier, threshold, split)
    b = steps_to_threshold(run, slower, multiplier, threshold, split)
    never = (int(np.isinf(a).sum()), int(np.isinf(b).sum()))
    cap = 2.0 * max(run["checkpoints"])
    diff = np.minimum(b, cap) - np.minimum(a, cap)
    mean, low, high = paired_bootstrap(diff, n_resamples=n_resamples, level=level)
    return mean, low, high, verdict(low, high), never


# The core run of notebook 12, stored by tools/lab2_core.py (`make lab2-core`) and read there.
# The toy base turns the same share of RoPE's exponent range within L = 16 tokens as Llama 2's
# base 10^4 within 4096 tokens (notebook 12 derives it).
CONTEXT_LAB = {
    "task": {"name": "recall_latest", "n_keys": 4, "n_values": 8},
    "rope_base": (16 / (2 * np.pi)) ** (1 / (np.log(4096 / (2 * np.pi)) / np.log(1e4))),
    "settings": {"train_length": 16, "multipliers": (2, 4), "checkpoints": (0, 25, 50, 100),
                 "seeds": (0, 1, 2), "steps": 1000, "batch": 16, "lr": 1e-2, "tune_batch": 8,
                 "tune_lr": 1e-3, "tune_warmup": 10, "n_test": 128, "scratch_batch": 8},
}
_ARRAYS = ("correct", "total", "loss", "scratch_correct", "scratch_loss", "base_accuracy",
           "tune_losses", "correct_dist", "total_dist", "scratch_correct_dist")


def _config_record(config):
    """A ModelConfig without rope_scaling as a JSON-ready dict."""
    if not isinstance(config, ModelConfig) or config.rope_scaling is not None:
        raise TypeError(f"config must be a ModelConfig without rope_scaling, got {config!r:.60}")
    return {key: getattr(config, key) for key in config.__dataclass_fields__
            if key != "rope_scaling"}


def _as_tuples(value):
    """JSON lists read back as the tuples the run held."""
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list) else value


def write_extension(path, run, settings, *, meta=None):
    """Store a :class:`ContextExtension` in ``path`` (JSON) and ``path`` with suffix ``.npz``.

    ``settings`` are the keyword arguments given to :func:`run_context_extension` (stored, so
    that :func:`read_extension` can refuse a record made with others); ``meta`` (command,
    versions, time) goes into the JSON as it is. Every array field, the baselines and the
    pre-trained models' configs and parameters (float64, bit for bit) are stored.
    """
    path = val.path(path, "path")
    if not isinstance(run, ContextExtension):
        raise TypeError(f"run must be a ContextExtension, got {type(run).__name__}")
    if not isinstance(settings, dict):
        raise TypeError(f"settings must be the dict of run_context_extension's keywords, got "
                        f"{type(settings).__name__}")
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict or None, got {meta!r:.60}")
    if run.passkey is not None or run.ceiling_curve:
        raise ValueError("run must have no passkey scores and no ceiling curve: write_extension "
                         "stores the core run; store the grid's with summarise")
    record = dict(meta or {}) | {
        "settings": _settings_record(run.task, settings),
        "config": _config_record(run.base_models[0][0]),
        "run": {"train_length": run.train_length, "multipliers": run.multipliers,
                "methods": run.methods, "checkpoints": run.checkpoints, "seeds": run.seeds,
                "settings": run.settings, "baselines": sorted(run.baseline_dist)}}
    arrays = {name: getattr(run, name) for name in _ARRAYS}
    arrays.update({f"baseline/{name}": value for name, value in run.baseline_dist.items()})
    for j, (_, params) in enumerate(run.base_models):
        arrays.update({f"base/{j}/{key}": value for key, value in params.items()})
    path.write_text(json.dumps(record, indent=1) + "\n")
    np.savez_compressed(path.with_suffix(".npz"), **arrays)


def read_extension(path, task, config=None, settings=None):
    """The :class:`ContextExtension` that :func:`write_extension` stored in ``path`` (+ ``.npz``).

    Raises ``ValueError`` naming the first difference if the record was made for another task,
    or (when given) another pre-training ``config`` or other ``settings`` (the keywords one
    would give :func:`run_context_extension`).
    """
    path, record = _open_record(path, task, "lab2-core", "lab2_core.json")
    if not isinstance(record, dict) or "run" not in record:
        raise ValueError(f"path {path.name!r} holds no record made by write_extension")
    stored = record["settings"]
    wanted = {"task": {"name": task.name, **dict(task.settings)}}
    if config is not None:
        stored, wanted = stored | {"config": record["config"]}, wanted | {
            "config": _config_record(config)}
    if settings is not None:
        if not isinstance(settings, dict):
            raise TypeError(f"settings must be a dict or None, got {settings!r:.60}")
        wanted |= _settings_record(task, settings)
    for key in wanted:
        if not _json_equal(wanted[key], stored.get(key)):
            name = f"settings[{key!r}]" if key in (settings or {}) else key
            raise ValueError(f"{name} = {wanted[key]!r:.120} differs from the stored record's "
                             f"{stored.get(key)!r:.120}: rerun `make lab2-core`")
    run = record["run"]
    base_config = ModelConfig(**record["config"])
    with np.load(path.with_suffix(".npz")) as data:
        arrays = {key: data[key] for key in data.files}
    base_models = tuple((base_config, {key.split("/", 2)[2]: value
                                       for key, value in arrays.items()
                                       if key.startswith(f"base/{j}/")})
                        for j in range(len(run["seeds"])))
    return ContextExtension(
        task=task, **{key: _as_tuples(run[key]) for key in
                      ("train_length", "multipliers", "methods", "checkpoints", "seeds")},
        settings={key: _as_tuples(value) for key, value in run["settings"].items()},
        base_models=base_models, **{name: arrays[name] for name in _ARRAYS},
        baseline_dist={name: arrays[f"baseline/{name}"] for name in run["baselines"]})


__all__ += ["CONTEXT_LAB", "write_extension", "read_extension"]
