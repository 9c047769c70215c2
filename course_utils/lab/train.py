"""Training with Adam, evaluation at longer lengths, and the whole train-short-test-long experiment.

Everything is seeded: the same seeds give bit-identical losses and accuracies on the same machine.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from .. import _validate as val
from .model import SCHEMES, ModelConfig, init_params, loss_and_grads, predict
from .tasks import Task

__all__ = ["adam_step", "train", "evaluate", "Experiment", "run_experiment"]


def _check_adam_arguments(params, grads, state):
    for arg, mapping in (("params", params), ("grads", grads)):
        if not isinstance(mapping, dict) or not all(
                isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.floating)
                for v in mapping.values()):
            raise TypeError(f"{arg} must be a dict of floating-point numpy arrays, got "
                            f"{type(mapping).__name__}")
    for name, g in grads.items():
        if name not in params or g.shape != params[name].shape:
            raise ValueError(f"grads[{name!r}] must match a parameter of the same shape; params "
                             f"has {params[name].shape if name in params else 'no such entry'}")
        val.numeric_array(g, f"grads[{name!r}]")  # rejects NaN and inf
    if state is not None and not (
            isinstance(state, dict) and isinstance(state.get("t"), int)
            and all(isinstance(state.get(k), dict) and set(grads) <= set(state[k])
                    for k in ("m", "v"))):
        raise TypeError("state must be None (first step) or the dict a previous adam_step "
                        "returned, with 't', 'm' and 'v' for every parameter")


def adam_step(params, grads, state, *, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    """One Adam update (Kingma and Ba 2015), in place on ``params``; returns the new ``state``.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``W -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``. ``state`` is ``None`` at
    the first step. The betas and eps are those of Vaswani et al. 2017, section 5.3.

    References
    ----------
    Kingma and Ba 2015, Algorithm 1; PyTorch ``torch/optim/adam.py`` (``_single_tensor_adam``).
    """
    _check_adam_arguments(params, grads, state)
    lr = val.positive_float(lr, "lr")
    for name, beta in (("beta1", beta1), ("beta2", beta2)):
        if not 0.0 <= val.real_float(beta, name) < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {beta!r}")
    eps = val.positive_float(eps, "eps")
    if state is None:
        state = {"t": 0, "m": {k: np.zeros_like(v) for k, v in params.items()},
                 "v": {k: np.zeros_like(v) for k, v in params.items()}}
    state["t"] += 1
    t = state["t"]
    for name, g in grads.items():
        m, v = state["m"][name], state["v"][name]
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        m_hat = m / (1 - beta1 ** t)
        v_hat = v / (1 - beta2 ** t)
        params[name] -= lr * m_hat / (np.sqrt(v_hat) + eps)
    return state


def _progress_bar(iterable, total, enabled, description):
    if not enabled:
        return iterable
    from tqdm import tqdm  # optional dependency (the "notebooks" extra); text bar, no widgets needed

    return tqdm(iterable, total=total, desc=description, leave=False)


def _default_progress():
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def train(task, config, *, steps, batch=16, length=16, lr=1e-2, seed=0, progress=None,
          clip=1.0):
    """Train a fresh model on ``task`` at sequences of ``length`` tokens.

    Each step draws a new batch (``numpy.random.default_rng(seed + 1)``), computes the loss and
    gradients with the hand-written backward pass, clips the global gradient norm to ``clip``
    and takes an Adam step. The learning rate warms up linearly over the first 10% of steps,
    then decays linearly to 0. Parameters are initialised with ``init_params(config, seed)``.

    Because the model is causal, training at ``length`` trains every shorter prefix too: the
    output at position ``i`` sees only positions ``0 .. i``.

    Parameters
    ----------
    task : Task
    config : ModelConfig
    steps, batch, length : int
    lr : float
        Peak learning rate.
    seed : int
    progress : bool or None
        Show a tqdm progress bar. ``None``: only when stderr is an interactive terminal.
    clip : float
        Largest global gradient norm.

    Returns
    -------
    params : dict of arrays; losses : float64 array ``(steps,)``, the training loss at each step.
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    if config.vocab_size != task.vocab_size:
        raise ValueError(f"config.vocab_size must equal the task's vocabulary "
                         f"({task.vocab_size}), got {config.vocab_size}")
    steps = val.positive_int(steps, "steps")
    batch = val.positive_int(batch, "batch")
    length = val.positive_int(length, "length")
    lr = val.positive_float(lr, "lr")
    seed = val.positive_int(seed, "seed", allow_zero=True)
    clip = val.positive_float(clip, "clip")
    progress = _default_progress() if progress is None else val.boolean(progress, "progress")
    if config.scheme == "learned" and length > config.max_len:
        raise ValueError(f"length must be <= config.max_len ({config.max_len}) for the learned "
                         f"table, got {length}")
    params = init_params(config, seed)
    data_rng = np.random.default_rng(seed + 1)
    warmup = max(1, steps // 10)
    losses = np.empty(steps)
    state = None
    steps_iter = _progress_bar(range(steps), steps, progress,
                               f"{task.name}, {config.scheme}, seed {seed}")
    for step in steps_iter:
        tokens, labels, mask = task.batch(data_rng, batch, length)
        if not mask.any():
            tokens, labels, mask = task.batch(data_rng, batch, length)
        losses[step], grads = loss_and_grads(params, config, tokens, labels, mask)
        norm = np.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
        if norm > clip:
            for g in grads.values():
                g *= clip / norm
        rate = lr * min((step + 1) / warmup, (steps - step) / (steps - warmup + 1))
        state = adam_step(params, grads, state, lr=rate)
    return params, losses


def evaluate(params, config, task, length, *, n_sequences=64, seed=1234, batch=32,
             scored="second_half"):
    """Accuracy on fresh sequences of ``length`` tokens, or NaN when the model cannot read them.

    Parameters
    ----------
    params, config : a trained model
    task : Task
    length : int
    n_sequences : int
        Test sequences, generated with ``numpy.random.default_rng(seed)`` (the same for every
        model, so every scheme is scored on identical data).
    scored : {"second_half", "all"}
        Which labelled positions count: those at positions ``>= length // 2`` (so that at 2x the
        training length and beyond every scored position lies beyond the training length), or all.

    Returns
    -------
    float : fraction of scored positions predicted correctly; ``nan`` if ``scheme="learned"`` and
    ``length > config.max_len`` (the table has no row there, so there is no output to score).
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    length = val.positive_int(length, "length")
    n_sequences = val.positive_int(n_sequences, "n_sequences")
    batch = val.positive_int(batch, "batch")
    scored = val.choice(scored, "scored", ("second_half", "all"))
    if config.scheme == "learned" and length > config.max_len:
        # The table has no row for these positions (forward raises IndexError): no output exists.
        return float("nan")
    rng = np.random.default_rng(val.positive_int(seed, "seed", allow_zero=True))
    correct = total = 0
    for start in range(0, n_sequences, batch):
        tokens, labels, mask = task.batch(rng, min(batch, n_sequences - start), length)
        if scored == "second_half":
            mask = mask & (np.arange(length) >= length // 2)
        predicted = predict(params, tokens, config)
        correct += int(np.sum((predicted == labels) & mask))
        total += int(mask.sum())
    if total == 0:
        raise ValueError(f"no scored positions at length {length}; use more sequences or 'all'")
    return correct / total


@dataclass
class Experiment:
    """Results of :func:`run_experiment`.

    Attributes
    ----------
    task : Task
    schemes : tuple of str
    lengths : tuple of int
        Test lengths in tokens (``multipliers`` times ``train_length``).
    seeds : tuple of int
    train_length : int
    accuracy : float64 array ``(len(schemes), len(lengths), len(seeds))``
        NaN where the model cannot read the input (a learned table beyond its ``max_len``).
    losses : float64 array ``(len(schemes), len(seeds), steps)``: the training curves.
    models : dict mapping each scheme to ``(config, params)`` of the model trained with the
        first seed, for inspection.
    """

    task: Task
    schemes: tuple
    lengths: tuple
    seeds: tuple
    train_length: int
    accuracy: np.ndarray
    losses: np.ndarray
    models: dict = field(repr=False)

    def __post_init__(self):
        if not isinstance(self.task, Task):
            raise TypeError(f"task must be a Task, got {type(self.task).__name__}")
        for name in ("schemes", "lengths", "seeds"):
            if not isinstance(getattr(self, name), tuple) or not getattr(self, name):
                raise TypeError(f"{name} must be a non-empty tuple, got {getattr(self, name)!r:.60}")
        val.positive_int(self.train_length, "train_length")
        shape = (len(self.schemes), len(self.lengths), len(self.seeds))
        accuracy = self.accuracy
        if (not isinstance(accuracy, np.ndarray) or accuracy.dtype.kind != "f"
                or accuracy.shape != shape):
            raise ValueError(f"accuracy must be a float array of shape (schemes, lengths, seeds) "
                             f"= {shape}, got {type(accuracy).__name__} "
                             f"{getattr(accuracy, 'shape', '')}")
        scored = accuracy[~np.isnan(accuracy)]
        if ((scored < 0) | (scored > 1)).any():
            raise ValueError("accuracy must hold fractions in [0, 1] (or NaN where unscored)")
        if not isinstance(self.losses, np.ndarray) or not isinstance(self.models, dict):
            raise TypeError("losses must be a numpy array and models a dict")

    def mean_accuracy(self):
        """Mean over seeds, ``(len(schemes), len(lengths))``; NaN stays NaN."""
        return self.accuracy.mean(axis=-1)


def run_experiment(task, *, schemes=SCHEMES, train_length=16, multipliers=(1, 2, 4, 8),
                   seeds=(0,), steps=1000, batch=16, lr=1e-2, n_test=64, progress=None,
                   **model_kwargs):
    """Train every scheme on ``task`` at ``train_length`` and test at ``multipliers`` times it.

    Every scheme gets the same model shape (``ModelConfig`` defaults, overridden by
    ``model_kwargs``), the same training batches (same seed), the same number of steps, and the
    same test sequences. The learned table gets ``max_len = train_length``.

    Returns
    -------
    Experiment
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    train_length = val.positive_int(train_length, "train_length")
    schemes = tuple(val.choice(scheme, "schemes", SCHEMES) for scheme in schemes)
    lengths = tuple(train_length * val.positive_int(m, "multipliers") for m in multipliers)
    seeds = tuple(val.positive_int(seed, "seeds", allow_zero=True) for seed in seeds)
    steps = val.positive_int(steps, "steps")
    if not schemes or not lengths or not seeds:
        raise ValueError("schemes, multipliers and seeds must each hold at least one value")
    accuracy = np.full((len(schemes), len(lengths), len(seeds)), np.nan)
    losses = np.empty((len(schemes), len(seeds), steps))
    models = {}
    for a, scheme in enumerate(schemes):
        config = ModelConfig(scheme=scheme, vocab_size=task.vocab_size, max_len=train_length,
                             **model_kwargs)
        for s, seed in enumerate(seeds):
            params, losses[a, s] = train(task, config, steps=steps, batch=batch,
                                         length=train_length, lr=lr, seed=seed, progress=progress)
            for m, length in enumerate(lengths):
                accuracy[a, m, s] = evaluate(params, config, task, length, n_sequences=n_test)
            if s == 0:
                models[scheme] = (config, params)
    return Experiment(task=task, schemes=schemes, lengths=lengths, seeds=seeds,
                      train_length=train_length, accuracy=accuracy, losses=losses, models=models)
