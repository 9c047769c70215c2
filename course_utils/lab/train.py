"""Training with Adam, evaluation at longer lengths, and the whole train-short-test-long experiment.

Everything is seeded: the same seeds give bit-identical losses and accuracies on the same machine.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import sys
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from .. import _validate as val
from .model import (
    SCHEMES,
    ModelConfig,
    cross_entropy,
    forward,
    init_params,
    loss_and_grads,
    predict,
)
from .tasks import Task

__all__ = ["adam_step", "train", "fine_tune", "evaluate", "evaluate_by_position", "Experiment",
           "run_experiment"]


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


def _interactive_progress():
    """A bar in a terminal or a Jupyter kernel, none when ``CI`` is set (CI logs) or when
    ``COURSE_PROGRESS=0`` (used when executing notebooks whose outputs are committed)."""
    if os.environ.get("CI") or os.environ.get("COURSE_PROGRESS", "1") == "0":
        return False
    return _default_progress() or "ipykernel" in sys.modules


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
    # One flat vector holds every parameter, and params holds views into it, so that gradient
    # clipping and Adam run as a few whole-vector operations instead of one set per array.
    flat = np.concatenate([value.reshape(-1) for value in params.values()])
    offsets = np.cumsum([0] + [value.size for value in params.values()])
    params = {name: flat[offsets[k]:offsets[k + 1]].reshape(value.shape)
              for k, (name, value) in enumerate(params.items())}
    data_rng = np.random.default_rng(seed + 1)
    losses = np.empty(steps)
    steps_iter = _progress_bar(range(steps), steps, progress,
                               f"{task.name}, {config.scheme}, seed {seed}")
    with _one_blas_thread():
        _steps(task, config, params, flat, steps_iter, data_rng, losses,
               batch=batch, length=length, lr=lr, clip=clip)
    params = {name: value.copy() for name, value in params.items()}  # own arrays, not views
    return params, losses


def _one_blas_thread():
    """The model's matrix products are tiny: splitting them over BLAS threads costs more than it
    saves, and threads that wait for each other on a busy machine cost far more. Parallelism
    comes from training several models in separate processes (:func:`run_experiment`)."""
    return threadpool_limits(limits=1, user_api="blas")


def _clipped_gradient(params, names, config, task, data_rng, *, batch, length, clip):
    """Loss and the clipped, flattened gradient on one fresh batch (a second draw if the first
    holds no scored token)."""
    tokens, labels, mask = task.batch(data_rng, batch, length)
    if not mask.any():
        tokens, labels, mask = task.batch(data_rng, batch, length)
    loss, grads = loss_and_grads(params, config, tokens, labels, mask)
    grad = np.concatenate([grads[name].reshape(-1) for name in names])
    norm = np.sqrt(np.dot(grad, grad))
    if norm > clip:
        grad *= clip / norm
    return loss, grad


def _steps(task, config, params, flat, steps_iter, data_rng, losses, *, batch, length, lr, clip):
    steps = len(losses)
    warmup = max(1, steps // 10)
    state = None
    for step in steps_iter:
        losses[step], grad = _clipped_gradient(params, list(params), config, task, data_rng,
                                               batch=batch, length=length, clip=clip)
        rate = lr * min((step + 1) / warmup, (steps - step) / (steps - warmup + 1))
        state = adam_step({"all": flat}, {"all": grad}, state, lr=rate)


def _check_params_dict(params):
    if not isinstance(params, dict) or not all(isinstance(v, np.ndarray) for v in params.values()):
        raise TypeError(f"params must be a dict of numpy arrays, got {type(params).__name__}")


def fine_tune(params, config, task, *, length, checkpoints, batch=8, lr=1e-3, warmup=10,
              seed=0, clip=1.0):
    """Continue training ``params`` at ``length`` tokens; a copy of the weights at each checkpoint.

    One run of ``max(checkpoints)`` Adam steps (fresh optimizer state), with the learning rate
    rising linearly over the first ``warmup`` steps and then constant, so that the weights
    after ``k`` steps are those a run stopped at ``k`` would give. Gradients are clipped to a
    global norm of ``clip``. Batches come from ``numpy.random.default_rng(SeedSequence([seed,
    2]))``, a stream the pre-training of :func:`train` never draws from.

    Parameters
    ----------
    params : dict of arrays (not modified)
    config : ModelConfig
        The model to tune, for example the pre-trained config with a ``rope_scaling``.
    task : Task
    length : int
    checkpoints : sequence of positive int
    batch, warmup : int
    lr, clip : float
    seed : int

    Returns
    -------
    snapshots : dict mapping each checkpoint to a dict of arrays
    losses : float64 array ``(max(checkpoints),)``

    References
    ----------
    Chen et al. 2023 (Position Interpolation), section 3.1: fine-tuning with a constant learning
    rate after a linear warm-up.
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    _check_params_dict(params)
    length = val.positive_int(length, "length")
    batch = val.positive_int(batch, "batch")
    lr = val.positive_float(lr, "lr")
    warmup = val.positive_int(warmup, "warmup", allow_zero=True)
    seed = val.positive_int(seed, "seed", allow_zero=True)
    clip = val.positive_float(clip, "clip")
    if isinstance(checkpoints, (str, bytes)) or not hasattr(checkpoints, "__iter__"):
        raise TypeError(f"checkpoints must be a sequence of positive ints, got {checkpoints!r}")
    checkpoints = sorted({val.positive_int(k, "checkpoints") for k in checkpoints})
    if not checkpoints:
        raise ValueError("checkpoints must hold at least one step count")
    names = list(params)
    flat = np.concatenate([params[name].reshape(-1) for name in names]).astype(np.float64)
    offsets = np.cumsum([0] + [params[name].size for name in names])
    views = {name: flat[offsets[k]:offsets[k + 1]].reshape(params[name].shape)
             for k, name in enumerate(names)}
    data_rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    steps = checkpoints[-1]
    losses = np.empty(steps)
    snapshots = {}
    state = None
    with _one_blas_thread():
        for step in range(steps):
            losses[step], grad = _clipped_gradient(views, names, config, task, data_rng,
                                                   batch=batch, length=length, clip=clip)
            rate = lr * min(1.0, (step + 1) / warmup) if warmup else lr
            state = adam_step({"all": flat}, {"all": grad}, state, lr=rate)
            if step + 1 in checkpoints:
                snapshots[step + 1] = {name: value.copy() for name, value in views.items()}
    return snapshots, losses


def _evaluation_arguments(task, config, length, n_sequences, batch):
    """The validated ``length, n_sequences, batch`` of an evaluation (task and config checked)."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    return (val.positive_int(length, "length"), val.positive_int(n_sequences, "n_sequences"),
            val.positive_int(batch, "batch"))


def evaluate_by_position(params, config, task, length, *, n_sequences=64, seed=1234, batch=32):
    """Correct predictions and labelled positions at each position, and the mean test loss.

    Test sequences come from ``numpy.random.default_rng(seed)``, as in :func:`evaluate`; every
    labelled position counts.

    Returns
    -------
    correct, total : int64 arrays ``(length,)``: correct predictions and labels at each position
    loss : float, the cross-entropy averaged over every labelled position
    """
    length, n_sequences, batch = _evaluation_arguments(task, config, length, n_sequences, batch)
    rng = np.random.default_rng(val.positive_int(seed, "seed", allow_zero=True))
    correct = np.zeros(length, dtype=np.int64)
    total = np.zeros(length, dtype=np.int64)
    loss_sum = 0.0
    with _one_blas_thread():
        for start in range(0, n_sequences, batch):
            tokens, labels, mask = task.batch(rng, min(batch, n_sequences - start), length)
            logits, _ = forward(params, tokens, config)
            if mask.any():
                loss_sum += cross_entropy(logits, labels, mask)[0] * int(mask.sum())
            correct += np.sum((np.argmax(logits, axis=-1) == labels) & mask, axis=0)
            total += mask.sum(axis=0)
    if total.sum() == 0:
        raise ValueError(f"no labelled positions at length {length}; use more sequences")
    return correct, total, loss_sum / int(total.sum())


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
    length, n_sequences, batch = _evaluation_arguments(task, config, length, n_sequences, batch)
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
        Row names: the schemes of :data:`~course_utils.lab.model.SCHEMES` that were run, then the
        names of any ``variants``.
    lengths : tuple of int
        Test lengths in tokens (``multipliers`` times ``train_length``).
    seeds : tuple of int
    train_length : int
    accuracy : float64 array ``(len(schemes), len(lengths), len(seeds))``
        NaN where the model cannot read the input (a learned table beyond its ``max_len``).
    losses : float64 array ``(len(schemes), len(seeds), steps)``: the training curves.
    models : dict mapping each row name to ``(config, params)`` of the model trained with the
        first seed, for inspection.
    trained : dict mapping each row name to a tuple of ``(config, params)``, one per seed.
    """

    task: Task
    schemes: tuple
    lengths: tuple
    seeds: tuple
    train_length: int
    accuracy: np.ndarray
    losses: np.ndarray
    models: dict = field(repr=False)
    trained: dict = field(default_factory=dict, repr=False)

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

    def seed_range(self):
        """Smallest and largest accuracy over seeds, each ``(len(schemes), len(lengths))``."""
        return self.accuracy.min(axis=-1), self.accuracy.max(axis=-1)


def _train_and_evaluate(job):
    """One (model, seed) of :func:`run_experiment`: train, then evaluate at every length.

    A module-level function, so that worker processes can run it.
    """
    task, config, seed, lengths, settings = job
    params, losses = train(task, config, steps=settings["steps"], batch=settings["batch"],
                           length=settings["train_length"], lr=settings["lr"], seed=seed,
                           progress=False)
    with _one_blas_thread():
        accuracy = [evaluate(params, config, task, length, n_sequences=settings["n_test"])
                    for length in lengths]
    return params, losses, accuracy


def _run_jobs(jobs, workers, progress, description):
    if workers == 1 or len(jobs) == 1:
        return list(_progress_bar(map(_train_and_evaluate, jobs), len(jobs), progress, description))
    # "spawn" starts clean interpreters on every operating system (forking a process that runs
    # BLAS threads is unsafe); each job is seeded, so results do not depend on which worker ran it.
    with _process_pool(workers) as pool:
        results = pool.map(_train_and_evaluate, jobs)
        return list(_progress_bar(results, len(jobs), progress, description))


def _process_pool(workers):
    context = multiprocessing.get_context("spawn")
    return concurrent.futures.ProcessPoolExecutor(workers, mp_context=context)


def run_experiment(task, *, schemes=SCHEMES, train_length=16, multipliers=(1, 2, 4, 8),
                   seeds=(0,), steps=1000, batch=16, lr=1e-2, n_test=64, variants=None,
                   workers=None, progress=None, **model_kwargs):
    """Train every scheme on ``task`` at ``train_length`` and test at ``multipliers`` times it.

    Every model gets the same shape (``ModelConfig`` defaults, overridden by ``model_kwargs``),
    the same training batches for a given seed, the same number of steps, and the same test
    sequences. The learned table gets ``max_len = train_length``.

    Parameters
    ----------
    task : Task
    schemes : tuple of str
        Schemes from :data:`~course_utils.lab.model.SCHEMES`.
    variants : dict or None
        Extra rows: ``{name: overrides}``, where ``overrides`` is a dict of ``ModelConfig``
        fields that includes ``"scheme"``, for example
        ``{"RoPE, base 3.5": {"scheme": "rope", "rope_base": 3.5}}``.
    workers : int or None
        Processes that train models side by side (``None``: one per CPU core, at most one per
        model). Every (model, seed) is seeded on its own, so the results are the same for any
        number of workers.
    progress : bool or None
        A progress bar over the trained models; ``None``: only when stderr is a terminal.

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
    settings = {"steps": val.positive_int(steps, "steps"), "batch": val.positive_int(batch, "batch"),
                "lr": val.positive_float(lr, "lr"), "train_length": train_length,
                "n_test": val.positive_int(n_test, "n_test")}
    progress = _default_progress() if progress is None else val.boolean(progress, "progress")
    variants = {} if variants is None else variants
    if not isinstance(variants, dict) or not all(
            isinstance(name, str) and isinstance(overrides, dict) and "scheme" in overrides
            for name, overrides in variants.items()):
        raise TypeError("variants must be a dict {name: ModelConfig fields including 'scheme'}, "
                        f"got {variants!r:.80}")
    clash = set(variants) & set(schemes)
    if clash:
        raise ValueError(f"variants must not reuse a scheme's name as a row name, got {sorted(clash)}")
    if not (schemes or variants) or not lengths or not seeds:
        raise ValueError("schemes (or variants), multipliers and seeds must each hold at least "
                         "one value")
    base = {"vocab_size": task.vocab_size, "max_len": train_length, **model_kwargs}
    configs = {scheme: ModelConfig(scheme=scheme, **base) for scheme in schemes}
    configs.update({name: ModelConfig(**(base | overrides)) for name, overrides in variants.items()})
    names = tuple(configs)
    jobs = [(task, configs[name], seed, lengths, settings) for name in names for seed in seeds]
    if workers is None:
        workers = min(os.cpu_count() or 1, len(jobs))
    workers = val.positive_int(workers, "workers")
    results = _run_jobs(jobs, workers, progress, f"{task.name}: models trained")
    accuracy = np.full((len(names), len(lengths), len(seeds)), np.nan)
    losses = np.empty((len(names), len(seeds), settings["steps"]))
    trained = {name: [] for name in names}
    for index, (params, curve, acc) in enumerate(results):
        a, s = divmod(index, len(seeds))
        accuracy[a, :, s] = acc
        losses[a, s] = curve
        trained[names[a]].append((configs[names[a]], params))
    trained = {name: tuple(models) for name, models in trained.items()}
    return Experiment(task=task, schemes=names, lengths=lengths, seeds=seeds,
                      train_length=train_length, accuracy=accuracy, losses=losses,
                      models={name: models[0] for name, models in trained.items()},
                      trained=trained)


# The length-generalisation lab's experiment (notebook 09), in one place: the notebook trains it
# live or reads the stored record that ``tools/lab1_results.py`` makes from these same settings.
LENGTH_LAB = {
    "tasks": {"copy_back": {"k": 3, "n_symbols": 16}, "recall": {"n_keys": 8, "n_values": 8}},
    "train_length": 16,
    "multipliers": (1, 2, 4, 8),
    "seeds": (0, 1, 2),
    "steps": 1000,
    # RoPE with the base at which the same share of pairs turns within L = 16 tokens as in
    # Llama 2 at 4096: b = (L / 2 pi)^(d_head / (d_head - 2)), d_head = 8 (notebook 09).
    "variants": {"RoPE, base 3.5": {"scheme": "rope", "rope_base": (16 / (2 * np.pi)) ** (8 / 6)}},
}


def _settings_record(task, experiment_settings):
    """The JSON-comparable form of a task and the keyword settings of :func:`run_experiment`."""
    record = {"task": {"name": task.name, **dict(task.settings)}}
    for key, value in experiment_settings.items():
        if key in ("progress", "workers"):
            continue  # how it ran, not what it computed
        record[key] = ({name: dict(over) for name, over in value.items()} if key == "variants"
                       else list(value) if isinstance(value, tuple) else value)
    return record


def experiment_record(experiment, settings, *, with_params=True):
    """An :class:`Experiment` as a JSON-ready dict and a dict of arrays (for ``numpy.savez``).

    ``settings`` are the keyword arguments given to :func:`run_experiment` (stored, so that
    :func:`experiment_from_record` can refuse a record made with other settings). The dict holds
    the accuracies (``null`` where NaN) and each row's ``ModelConfig``; the arrays hold the
    training losses and, with ``with_params``, every trained parameter (float64, bit for bit),
    named ``"<row index>/<seed index>/<parameter>"``.
    """
    if not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must be an Experiment, got {type(experiment).__name__}")
    if not isinstance(settings, dict):
        raise TypeError(f"settings must be the dict of run_experiment's keywords, got "
                        f"{type(settings).__name__}")
    configs = {}
    for name in experiment.schemes:
        config = experiment.models[name][0]
        if config.rope_scaling is not None:
            raise ValueError(f"row {name!r}: a stretched RoPE (rope_scaling) cannot be stored")
        configs[name] = {key: getattr(config, key) for key in config.__dataclass_fields__
                         if key != "rope_scaling"}
    record = {
        "settings": _settings_record(experiment.task, settings),
        "schemes": list(experiment.schemes), "lengths": list(experiment.lengths),
        "seeds": list(experiment.seeds), "train_length": experiment.train_length,
        "configs": configs,
        "accuracy": [[[None if np.isnan(a) else float(a) for a in by_seed] for by_seed in by_len]
                     for by_len in experiment.accuracy],
        "params_stored": bool(with_params),
    }
    arrays = {"losses": experiment.losses}
    if with_params:
        for a, name in enumerate(experiment.schemes):
            for s, (_, params) in enumerate(experiment.trained[name]):
                arrays.update({f"{a}/{s}/{key}": value for key, value in params.items()})
    return record, arrays


def experiment_from_record(record, arrays, task, settings=None):
    """The :class:`Experiment` that :func:`experiment_record` stored, for ``task``.

    ``arrays`` maps names to arrays, as :func:`experiment_record` returned them.
    With ``settings`` (the keywords one would give :func:`run_experiment`), raises
    ``ValueError`` naming the first difference if the record was made with other settings or
    another task. Without stored parameters, ``models`` and ``trained`` hold the configs with
    ``params = None``.
    """
    if not isinstance(record, dict) or "accuracy" not in record:
        raise TypeError("record must be a dict made by experiment_record")
    stored = record["settings"]
    if stored["task"] != {"name": task.name, **dict(task.settings)}:
        raise ValueError(f"the record was made for task {stored['task']}, not "
                         f"{ {'name': task.name, **dict(task.settings)} }")
    if settings is not None:
        wanted = _settings_record(task, settings)
        for key in sorted(set(wanted) | set(stored)):
            if not _json_equal(wanted.get(key), stored.get(key)):
                raise ValueError(f"settings[{key!r}] = {wanted.get(key)!r} differs from the "
                                 f"stored record's {stored.get(key)!r}: rerun the tool that "
                                 "made the record")
    schemes = tuple(record["schemes"])
    trained = {}
    for a, name in enumerate(schemes):
        config = ModelConfig(**record["configs"][name])
        models = []
        for s in range(len(record["seeds"])):
            prefix = f"{a}/{s}/"
            params = ({key[len(prefix):]: np.asarray(arrays[key]) for key in arrays
                       if key.startswith(prefix)} if record["params_stored"] else None)
            models.append((config, params))
        trained[name] = tuple(models)
    accuracy = np.array([[[np.nan if a is None else a for a in by_seed] for by_seed in by_len]
                         for by_len in record["accuracy"]], dtype=np.float64)
    return Experiment(task=task, schemes=schemes, lengths=tuple(record["lengths"]),
                      seeds=tuple(record["seeds"]), train_length=record["train_length"],
                      accuracy=accuracy, losses=np.asarray(arrays["losses"], dtype=np.float64),
                      models={name: models[0] for name, models in trained.items()},
                      trained=trained)


def _json_equal(a, b):
    """Whether two JSON-like values are equal after a JSON round trip (tuples read as lists)."""
    return json.loads(json.dumps(a)) == json.loads(json.dumps(b))


def write_experiments(path, experiments, *, meta=None, params_of=()):
    """Store several experiments in ``path`` (JSON) and ``path`` with suffix ``.npz`` (arrays).

    ``experiments`` maps each task name to ``(experiment, settings)``; ``params_of`` names the
    tasks whose trained parameters are stored too; ``meta`` (command, versions, time) goes into
    the JSON as it is. Read back with :func:`read_experiment`.
    """
    path = val.path(path, "path")
    if not isinstance(experiments, dict) or not experiments or not all(
            isinstance(name, str) and isinstance(pair, tuple) and len(pair) == 2
            and isinstance(pair[0], Experiment) for name, pair in experiments.items()):
        raise TypeError("experiments must be a non-empty dict {task name: (Experiment, "
                        f"settings)}}, got {experiments!r:.60}")
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict or None, got {meta!r:.60}")
    if isinstance(params_of, str) or not all(isinstance(n, str) for n in params_of):
        raise TypeError(f"params_of must be a collection of task names, got {params_of!r:.60}")
    document, arrays = dict(meta or {}), {}
    document["experiments"] = {}
    for name, (experiment, settings) in experiments.items():
        record, own = experiment_record(experiment, settings, with_params=name in params_of)
        document["experiments"][name] = record
        arrays.update({f"{name}:{key}": value for key, value in own.items()})
    path.write_text(json.dumps(document, indent=1) + "\n")
    np.savez_compressed(path.with_suffix(".npz"), **arrays)


def _open_record(path, task, target, name):
    """``(path, parsed JSON)`` of a stored record, after checking ``path`` and ``task``;
    ``make <target>`` writes ``course_utils/data/records/<name>`` (said when it is missing)."""
    path = val.path(path, "path")
    if not path.is_file():
        raise ValueError(f"path {str(path)!r:.80} is not a stored record (make {target} "
                         f"writes course_utils/data/records/{name})")
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task from make_task, got {type(task).__name__}")
    return path, json.loads(path.read_text())


def read_experiment(path, task, settings=None):
    """The experiment on ``task`` stored by :func:`write_experiments` in ``path`` (+ ``.npz``).

    With ``settings`` it raises ``ValueError`` if the record was made with other settings.
    """
    path, document = _open_record(path, task, "lab1-results", "lab1_results.json")
    if task.name not in document.get("experiments", {}):
        raise ValueError(f"{path.name} holds no experiment on task {task.name!r}; it holds "
                         f"{sorted(document.get('experiments', {}))}")
    prefix = f"{task.name}:"
    with np.load(path.with_suffix(".npz")) as data:
        arrays = {key[len(prefix):]: data[key] for key in data.files if key.startswith(prefix)}
    return experiment_from_record(document["experiments"][task.name], arrays, task, settings)


__all__ += ["LENGTH_LAB", "experiment_record", "experiment_from_record", "write_experiments",
            "read_experiment"]
