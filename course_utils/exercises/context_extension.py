"""Checkers for the exercises of notebook 12 (the context-extension lab).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
The expected answers come from a route other than the one the exercise asks for: the pairs YaRN
leaves alone from the frequencies :func:`course_utils.scaling.rope_scaling` returns (compared
with the unscaled ones), the angle overshoot from the explicit list of angles at every position.
"""

from __future__ import annotations

import math

import numpy as np

from ..rope import rope_inv_freq
from ..scaling import rope_scaling, rotations_in_context, yarn_paper_ramp
from . import answer_of, grade
from ._dtypes import as_float64, grade_by_precision, is_low_precision

__all__ = ["check_yarn_untouched", "check_angle_overshoot"]

# Exercise 12.1: (head_dim, base, train_length) configurations: the toy of notebook 12, Llama 2,
# a toy with a larger base, and one where beta_fast falls inside the pairs.
_YARN_SETTINGS = ((8, 3.776, 16), (128, 1e4, 4096), (8, 10.0, 64), (16, 100.0, 2048),
                  (32, 50.0, 512))

# Exercise 12.2: (head_dim, base, train_length, factor) for the frequencies compared.
# The last setting puts pair 3 between (L - 1) theta = 6.0 < 2 pi and L theta = 6.4 >= 2 pi, so
# the rule "rho < 1" (L theta < 2 pi) in place of "(L - 1) theta < 2 pi" fails there.
_OVERSHOOT_SETTINGS = ((8, 3.776, 16, 4), (8, 3.776, 16, 2), (16, 30.0, 32, 4), (8, 1e4, 16, 4),
                       (8, 3.393, 16, 4))


def _untouched(head_dim, base, train_length):
    """Pairs whose YaRN frequency equals the original one (factor 4: any factor > 1 would do)."""
    theta = rope_inv_freq(head_dim, base=base)
    scaled, _ = rope_scaling("yarn", head_dim, base=base, factor=4.0,
                             original_max_position_embeddings=train_length)
    return np.isclose(scaled, theta, rtol=1e-12, atol=0.0)


def _paper_untouched(head_dim, base, train_length):
    rho = rotations_in_context(head_dim, base=base, original_max_position_embeddings=train_length)
    return yarn_paper_ramp(rho) == 1.0


def _turned(head_dim, base, train_length, minimum):
    rho = rotations_in_context(head_dim, base=base, original_max_position_embeddings=train_length)
    return rho >= minimum


def _unclamped(head_dim, base, train_length):
    """The ramp's lower bound before clamping at 0: negative bounds keep no pair."""
    low = math.floor(head_dim * math.log(train_length / (32 * 2 * math.pi))
                     / (2 * math.log(base)))
    return np.arange(head_dim // 2) <= low


def check_yarn_untouched(func):
    """Exercise 12.1: ``func(head_dim, base, train_length)`` returns a boolean array, one entry per
    pair: True where YaRN (Hugging Face's code, ``beta_fast=32``, ``beta_slow=1``) leaves the
    frequency unchanged.

    Expected: the pairs where :func:`course_utils.scaling.rope_scaling` ``("yarn", ...)`` returns
    exactly ``theta_i``, on several configurations including the notebook's toy and Llama 2.
    """
    expected = [_untouched(*s) for s in _YARN_SETTINGS]

    def flat(masks):
        return np.concatenate([np.asarray(m, dtype=np.float64).reshape(-1) for m in masks])

    hints = [
        (flat(_paper_untouched(*s) for s in _YARN_SETTINGS),
         "that is the paper's ramp (keep only pairs with more than beta = 32 turns); the code ramps "
         "in the pair index between floor(dim(32)) and ceil(dim(1)), clamped to 0"),
        (flat(_turned(*s, 1.0) for s in _YARN_SETTINGS),
         "pairs with at least one turn are not all kept: only those at or below the lower bound "
         "floor(dim(beta_fast)) of the ramp"),
        (flat(_unclamped(*s) for s in _YARN_SETTINGS),
         "the lower bound is clamped to 0 (max(low, 0)), so pair 0 is always kept"),
        (flat(~m for m in expected), "True should mark the pairs that are kept, not the changed ones"),
    ]

    def compute():
        answers = [answer_of(func, *s) for s in _YARN_SETTINGS]
        low = any(is_low_precision(a) for a in answers)
        for answer, s in zip(answers, _YARN_SETTINGS, strict=True):
            if as_float64(answer).shape != (s[0] // 2,):
                raise ValueError(f"for head_dim={s[0]} the answer must have shape ({s[0] // 2},), "
                                 f"got {as_float64(answer).shape}")
        return low, flat(as_float64(a) for a in answers)

    return grade_by_precision("Exercise 12.1: the pairs YaRN leaves alone", compute, flat(expected),
                              hints=hints)


def _overshoot_by_positions(theta, theta_new, train_length, test_length):
    """Per pair: how far the test angles m theta_new (m < test_length) go past the arc of
    training angles m theta (m < train_length), for pairs whose training angles do not go all
    the way round; 0 for the others. Computed from the explicit lists of angles."""
    out = np.zeros(len(theta))
    for i, (old, new) in enumerate(zip(theta, theta_new, strict=True)):
        seen = [m * old for m in range(train_length)]
        if seen[-1] >= 2 * np.pi:
            continue
        reached = [m * new for m in range(test_length)]
        out[i] = max(0.0, max(reached) - max(seen))
    return out


def _settings_frequencies(head_dim, base, train_length, factor):
    """The original, PI's and dynamic NTK's frequencies at ``factor * train_length`` tokens."""
    theta = rope_inv_freq(head_dim, base=base)
    pi, _ = rope_scaling("linear", head_dim, base=base, factor=factor,
                         original_max_position_embeddings=train_length)
    dynamic, _ = rope_scaling("dynamic", head_dim, base=base, factor=factor,
                              original_max_position_embeddings=train_length,
                              seq_len=factor * train_length)
    return theta, pi, dynamic


def check_angle_overshoot(func):
    """Exercise 12.2: ``func(theta, theta_new, train_length, test_length)`` returns, per pair, how
    many radians the largest test angle ``(N - 1) theta_new_i`` exceeds the largest training angle
    ``(L - 1) theta_i``, for the pairs whose training angles never completed a turn
    (``(L - 1) theta_i < 2 pi``); 0 for the other pairs and where there is no excess.

    Expected: from the explicit list of angles at every position, for the original, PI's and
    dynamic NTK's frequencies of several configurations.
    """
    cases = []
    for head_dim, base, length, factor in _OVERSHOOT_SETTINGS:
        theta, pi, dynamic = _settings_frequencies(head_dim, base, length, factor)
        cases += [(theta, new, length, factor * length) for new in (pi, theta, dynamic)]
    expected = np.concatenate([_overshoot_by_positions(*c) for c in cases])

    def wrong(fn):
        return np.concatenate([fn(*c) for c in cases])

    hints = [
        (wrong(lambda t, tn, L, N: np.where(L * t < 2 * np.pi, np.maximum(0, N * tn - L * t), 0)),
         "positions run from 0 to L - 1 and 0 to N - 1: the largest angles are (L - 1) theta "
         "and (N - 1) theta_new"),
        (wrong(lambda t, tn, L, N: np.maximum(0, (N - 1) * tn - (L - 1) * t)),
         "a pair whose training angles went all the way round has seen every angle: its "
         "overshoot is 0"),
        (wrong(lambda t, tn, L, N: np.where((L - 1) * t < 2 * np.pi, (N - 1) * tn - (L - 1) * t,
                                            0)),
         "where the test angles stay inside the training arc the overshoot is 0, not negative"),
        (wrong(lambda t, tn, L, N: np.where((L - 1) * t < 2 * np.pi,
                                            np.maximum(0, (N - 1) * tn - (L - 1) * tn), 0)),
         "the training angles were made with the original theta, not with theta_new"),
    ]

    def compute():
        answers = [answer_of(func, c[0].copy(), c[1].copy(), c[2], c[3]) for c in cases]
        low = any(is_low_precision(a) for a in answers)
        for answer, c in zip(answers, cases, strict=True):
            if as_float64(answer).shape != c[0].shape:
                raise ValueError(f"the answer must have one entry per pair, shape {c[0].shape}, "
                                 f"got {as_float64(answer).shape}")
        return low, np.concatenate([as_float64(a) for a in answers])

    return grade_by_precision("Exercise 12.2: how far past the trained angles", compute, expected,
                              hints=hints, tol32=(1e-5, 1e-5))


# Exercise 12.3: the claim the experiment tests, "YaRN before PI (4L, 50 steps)", and the
# learning rates it may use (the grid's three and everything between).
_VARIANT = {"methods": ("pi", "yarn"), "multiplier": 4, "steps": 50, "lr": (1e-4, 1e-2)}
_VERDICT_CODES = {"agrees": 1.0, "unclear": 0.0, "disagrees": -1.0}


def _variant_accuracy(core, method, lr):
    """Far and all-split accuracy of each stored pre-trained model of ``core`` after
    ``_VARIANT["steps"]`` fine-tune steps at ``lr``, on the core run's fine-tune data."""
    from ..lab.extension import evaluate_by_distance, method_config
    from ..lab.train import fine_tune

    m, steps = _VARIANT["multiplier"], _VARIANT["steps"]
    length, k = m * core.train_length, core.multipliers.index(m)
    far, every = [], []
    for seed, (config, params) in zip(core.seeds, core.base_models, strict=True):
        tuned = method_config(config, method, m, core.train_length)
        snapshots, _ = fine_tune(params, tuned, core.task, length=length, checkpoints=(steps,),
                                 batch=8, lr=lr, warmup=10, seed=1000 * seed + 10 * k)
        _, _, _, hits, total = evaluate_by_distance(snapshots[steps], tuned, core.task, length,
                                                    from_position=core.train_length,
                                                    n_sequences=128)
        far.append(hits[core.train_length:].sum() / total[core.train_length:].sum())
        every.append(hits.sum() / total.sum())
    return np.array(far), np.array(every)


def check_variant_experiment(far, core, *, lr, verdict):
    """Exercise 12.3: ``far`` maps ``"pi"`` and ``"yarn"`` to the far-split accuracy, one per
    pre-trained model of ``core`` (``core.base_models``), at 4L after 50 fine-tune steps at
    ``lr`` on the core run's fine-tune data; ``verdict`` is the learner's reading of "YaRN before
    PI (4L, 50 steps)" from those numbers: ``"agrees"``, ``"disagrees"`` or ``"unclear"``.

    Expected: the same fine-tunes run here through the lab's functions, and the verdict of the
    paired percentile bootstrap interval of YaRN - PI over the seeds
    (:func:`course_utils.lab.extension.paired_bootstrap`) of the learner's numbers.
    """
    from ..lab.extension import ContextExtension, paired_bootstrap
    from ..lab.extension import verdict as verdict_of

    name = "Exercise 12.3: an experiment and its verdict"
    if not isinstance(core, ContextExtension) or _VARIANT["multiplier"] not in core.multipliers:
        raise TypeError("core must be the ContextExtension notebook 12 reads (with 4L)")
    low, high = _VARIANT["lr"]
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not low <= lr <= high:
        raise ValueError(f"lr must be a learning rate in [{low:g}, {high:g}], got {lr!r:.60}")
    if verdict is not ... and verdict not in _VERDICT_CODES:
        raise ValueError(f"verdict must be one of {tuple(_VERDICT_CODES)}, got {verdict!r:.60}")

    def learner():
        if far is ... or verdict is ...:
            answer_of(...)           # not attempted
        if not isinstance(far, dict) or set(far) != set(_VARIANT["methods"]):
            raise ValueError(f"far must be a dict with the keys {_VARIANT['methods']}")
        numbers = {m: as_float64(answer_of(far[m])) for m in _VARIANT["methods"]}
        for m, values in numbers.items():
            if values.shape != (len(core.seeds),):
                raise ValueError(f"far[{m!r}] must hold one accuracy per seed, shape "
                                 f"({len(core.seeds)},), got {values.shape}")
        return numbers

    try:
        numbers = learner()
    except Exception:                # NOT ATTEMPTED, or the learner's error, as grade says them
        return grade(name, learner, np.zeros(1))

    def code(pi, yarn):
        _, lo, hi = paired_bootstrap(np.asarray(yarn) - np.asarray(pi))
        return _VERDICT_CODES[verdict_of(lo, hi)]

    def vector(pi, yarn, word_code):
        return np.concatenate([pi, yarn, [word_code]])

    expected = {m: _variant_accuracy(core, m, lr) for m in _VARIANT["methods"]}
    right = vector(expected["pi"][0], expected["yarn"][0], code(expected["pi"][0],
                                                                expected["yarn"][0]))
    hints = [(vector(expected["pi"][0], expected["yarn"][0], c),
              "your accuracies are right, but the verdict is not what their paired interval "
              "says: take paired_bootstrap of YaRN - PI per seed, then verdict(low, high)")
             for c in _VERDICT_CODES.values() if c != right[-1]]
    hints.append((vector(expected["pi"][1], expected["yarn"][1], code(expected["pi"][1],
                                                                      expected["yarn"][1])),
                  "that is the accuracy over every scored query; count only the far ones "
                  "(answer train_length or more tokens back: the fourth output of "
                  "evaluate_by_distance, from index train_length on)"))
    diff = numbers["yarn"] - numbers["pi"]
    _, lo, hi = paired_bootstrap(diff)
    print(f"your numbers, YaRN - PI per seed: {np.round(diff, 3).tolist()}\n"
          f"their interval: [{lo:+.3f}, {hi:+.3f}] over {len(core.seeds)} seeds, "
          f"{verdict_of(lo, hi)}")
    return grade(name, lambda: vector(numbers["pi"], numbers["yarn"], _VERDICT_CODES[verdict]),
                 right, hints=hints, rtol=0, atol=1e-12)


__all__ += ["check_variant_experiment"]
