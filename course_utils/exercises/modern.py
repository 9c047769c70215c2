"""Checkers for the exercises of notebook 11 (positions in modern models).

Each checker prints NOT ATTEMPTED, PASS or TRY AGAIN with a hint, and returns True only for PASS.
Each calls the learner's function on several configurations, so an answer typed in for one of them
cannot pass. Expected answers come from :mod:`course_utils.modern`, whose agreement with
transformers the tests check; the hints come from plausible mistakes built here.
"""

from __future__ import annotations

import numpy as np

from ..modern import deepseek_softmax_scale, llama4_attn_scales, no_rope_layers, partial_rotary_dim
from ..scaling import rope_scaling
from . import answer_of, grade
from ._dtypes import answer_rtol, as_float64, flatten_answers, grade_by_precision

__all__ = ["check_nope_layer_indices", "check_rotated_channels", "check_attn_scales",
           "check_deepseek_yarn_scales"]

# Exercise 11.1: (num_hidden_layers, no_rope_layer_interval); the first two are Llama 4 Scout's
# and SmolLM3's.
_LAYER_CONFIGS = [(48, 4), (36, 4), (26, 6), (10, 3), (7, 2)]

# Exercise 11.2: (head_dim, partial_rotary_factor): GPT-NeoX-20B, Phi-1, Qwen3-Next, and others.
_ROTARY_CONFIGS = [(96, 0.25), (64, 0.5), (256, 0.25), (80, 0.4), (128, 1.0), (120, 0.3)]

# Exercise 11.3: positions and (floor_scale, attn_scale).
_SCALE_POSITIONS = np.array([0, 1, 8190, 8191, 8192, 16382, 16383, 65535, 131071, 10**7 - 1])
_SCALE_CONFIGS = [(8192, 0.1), (4096, 0.2), (100, 0.05)]


def _concat_ints(func, configs, arg_names):
    """Call ``func`` per configuration; a list of int arrays joined with a -1 between them."""
    parts = []
    for config in configs:
        answer = as_float64(answer_of(func, *config))
        if answer.ndim != 1:
            raise ValueError(f"for {dict(zip(arg_names, config, strict=True))} the answer should be "
                             f"a 1-D list of layer indices, got shape {answer.shape}")
        parts += [answer, np.array([-1.0])]
    return np.concatenate(parts)


def check_nope_layer_indices(func):
    """Exercise 11.1: the 0-based indices of the layers that skip RoPE.

    ``func(num_hidden_layers, no_rope_layer_interval)`` returns the indices, in increasing order,
    of the layers whose ``no_rope_layers`` flag is 0 in Llama 4's and SmolLM3's configs.
    """
    def joined(make):
        return np.concatenate([np.append(make(n, k).astype(np.float64), -1.0)
                               for n, k in _LAYER_CONFIGS])

    expected = joined(lambda n, k: np.flatnonzero(no_rope_layers(n, k) == 0))
    hints = [
        (joined(lambda n, k: np.flatnonzero(no_rope_layers(n, k) == 1)),
         "those are the layers that KEEP RoPE: in no_rope_layers a 1 means the layer uses RoPE "
         "(self.use_rope = config.no_rope_layers[layer_idx])"),
        (joined(lambda n, k: np.arange(0, n, k)),
         "off by one: the flag is (layer_idx + 1) % interval != 0, so the first NoPE layer is "
         "layer interval - 1, not layer 0"),
        (joined(lambda n, k: np.arange(k, n + 1, k)),
         "these are 1-based layer numbers; give 0-based indices, as layer_idx in the code"),
        (joined(lambda n, k: np.arange(k, n, k)),
         "off by one: layer interval - 1 (0-based) is the first NoPE layer"),
    ]
    return grade("Exercise 11.1: NoPE layer indices",
                 lambda: _concat_ints(func, _LAYER_CONFIGS, ("num_hidden_layers", "interval")),
                 expected, hints=hints, rtol=0, atol=1e-9)


def check_rotated_channels(func):
    """Exercise 11.2: how many channels of a head partial RoPE rotates.

    ``func(head_dim, partial_rotary_factor)`` returns one integer per call.
    """
    def values(make):
        return np.array([make(d, f) for d, f in _ROTARY_CONFIGS], dtype=np.float64)

    expected = values(partial_rotary_dim)
    hints = [
        (values(lambda d, f: d - partial_rotary_dim(d, f)),
         "that is the number of channels that pass through unrotated; the rotated ones are the "
         "first int(head_dim * partial_rotary_factor)"),
        (values(lambda d, f: partial_rotary_dim(d, f) // 2),
         "that is the number of rotated PAIRS; the question asks for channels (twice as many)"),
        (values(lambda d, f: d),
         "not every channel is rotated: only the first int(head_dim * partial_rotary_factor)"),
    ]

    def compute():
        out = []
        for d, f in _ROTARY_CONFIGS:
            answer = as_float64(answer_of(func, d, f))
            if answer.shape != ():
                raise ValueError(f"for head_dim={d}, partial_rotary_factor={f} the answer should be "
                                 f"one number, got shape {answer.shape}")
            out.append(float(answer))
        return np.array(out)

    return grade("Exercise 11.2: rotated channels", compute, expected, hints=hints,
                 rtol=0, atol=1e-9)


def check_attn_scales(func):
    """Exercise 11.3: Llama 4's query scale at absolute positions.

    ``func(positions, floor_scale, attn_scale)`` receives an int64 array of positions and returns
    the factor for each, ``1 + attn_scale * ln(1 + floor((m + 1) / floor_scale))``.
    """
    m = _SCALE_POSITIONS

    def values(make):
        return np.concatenate([make(m, f, a) for f, a in _SCALE_CONFIGS])

    expected = values(lambda m_, f, a: llama4_attn_scales(m_, floor_scale=f, attn_scale=a))
    hints = [
        (values(lambda m_, f, a: 1 + a * np.log1p(np.floor(m_ / f))),
         "off by one: the code divides m + 1 (the number of tokens up to the query), not m"),
        (values(lambda m_, f, a: 1 + a * np.log1p((m_ + 1.0) / f)),
         "the code rounds (m + 1) / floor_scale down before the logarithm: the factor changes "
         "in steps of floor_scale positions"),
        (values(lambda m_, f, a: 1 + a * np.log(np.maximum(np.floor((m_ + 1.0) / f), 1.0))),
         "the code takes log1p, ln(1 + x), so the factor is 1 + attn_scale ln 2 after the first "
         "step, not 1"),
        (values(lambda m_, f, a: (1 + a * np.log1p(np.floor((m_ + 1.0) / f))) ** 2),
         "the factor multiplies the query only, so the score grows by the factor itself, not "
         "its square"),
    ]
    state = {}

    def compute():
        out = []
        for f, a in _SCALE_CONFIGS:
            answer = answer_of(func, m.copy(), f, a)
            values_ = as_float64(answer)
            if values_.shape != m.shape:
                raise ValueError(f"for {m.size} positions the answer should have shape {m.shape}, "
                                 f"got {values_.shape}")
            state["rtol"] = max(state.get("rtol", 0.0), answer_rtol(answer))
            out.append(values_)
        return np.concatenate(out)

    try:
        answer = compute()
    except Exception:  # not attempted or a learner's bug: grade reports it
        return grade("Exercise 11.3: attention temperature", compute, expected, hints=hints)
    return grade("Exercise 11.3: attention temperature", lambda: answer, expected, hints=hints,
                 rtol=state["rtol"], atol=0)


# Exercise 11.4: (factor, mscale, mscale_all_dim, qk_head_dim); 0.0 stands for a field the
# config leaves out. The first is DeepSeek-V3's config.json (rope_scaling) with its 128 + 64
# query-key channels.
_YARN_CONFIGS = [(40.0, 1.0, 1.0, 192), (40.0, 0.707, 0.707, 192), (4.0, 1.0, 0.0, 192),
                 (16.0, 1.0, 0.5, 96), (32.0, 0.0, 0.0, 128), (1.0, 1.0, 1.0, 192),
                 (8.0, 0.707, 0.0, 192)]


def _yarn_pairs(make):
    return np.concatenate([np.asarray(make(*c), dtype=np.float64) for c in _YARN_CONFIGS])


def _mscale(s, m=1.0):
    return 1.0 if s <= 1 else 0.1 * m * np.log(s) + 1.0


def _rope(factor, mscale, mscale_all_dim):
    return {"rope_type": "yarn", "factor": factor, "mscale": mscale,
            "mscale_all_dim": mscale_all_dim}


def check_deepseek_yarn_scales(func):
    """Exercise 11.4: the two numbers DeepSeek-V3's YaRN changes, as transformers runs it.

    ``func(factor, mscale, mscale_all_dim, qk_head_dim)`` returns ``(cos_sin_factor,
    softmax_scale)``: the ``attention_factor`` that multiplies cos and sin
    (``_compute_yarn_parameters``) and the scale ``DeepseekV3Attention`` multiplies the scores by
    (``yarn_apply_mscale``). ``0.0`` stands for a field the config does not set.
    """
    def right(s, m, m_all, width):
        _, cos_sin = rope_scaling("yarn", 64, base=1e4, factor=s,
                                  original_max_position_embeddings=4096, mscale=m or None,
                                  mscale_all_dim=m_all or None)
        return cos_sin, deepseek_softmax_scale(width, _rope(s, m, m_all))

    expected = _yarn_pairs(right)
    hints = [
        (_yarn_pairs(lambda s, m, m_all, w: (_mscale(s), right(s, m, m_all, w)[1])),
         "cos and sin: when both mscale and mscale_all_dim are set, _compute_yarn_parameters "
         "uses the ratio mscale(s, mscale) / mscale(s, mscale_all_dim), not 0.1 ln s + 1"),
        (_yarn_pairs(lambda s, m, m_all, w: (_mscale(s, m or 1.0), right(s, m, m_all, w)[1])),
         "cos and sin: with mscale_all_dim unset, _compute_yarn_parameters ignores mscale and "
         "takes 0.1 ln s + 1; mscale counts only in the ratio, when both fields are set"),
        (_yarn_pairs(lambda s, m, m_all, w: (right(s, m, m_all, w)[0],
                                             w ** -0.5 * (_mscale(s, m_all) if m_all else 1.0))),
         "the softmax scale: yarn_apply_mscale multiplies it by mscale(s, mscale_all_dim) "
         "twice (scaling * mscale * mscale), once for the query and once for the key"),
        (_yarn_pairs(lambda s, m, m_all, w: (right(s, m, m_all, w)[0], w ** -0.5)),
         "the softmax scale is not the plain qk_head_dim^-1/2: yarn_apply_mscale multiplies it "
         "by mscale(s, mscale_all_dim)^2 whenever mscale_all_dim is set"),
        (_yarn_pairs(lambda s, m, m_all, w: (right(s, m, m_all, w)[0],
                                             w ** -0.5 * _mscale(s, m) ** 2)),
         "the softmax scale reads mscale_all_dim, not mscale (DeepSeek's own inference code "
         "has only one field, called mscale); with mscale_all_dim unset it is left alone"),
        (_yarn_pairs(lambda s, m, m_all, w: (right(s, m, m_all, w)[0],
                                             right(s, m, m_all, w)[1] * w ** -0.5)),
         "the softmax scale is qk_head_dim^-1/2 (a square root), times the mscale factor"),
        (_yarn_pairs(lambda s, m, m_all, w: right(s, m, m_all, w)[::-1]),
         "the order: return (cos_sin_factor, softmax_scale)"),
    ]

    def compute():
        answers = [answer_of(func, *c) for c in _YARN_CONFIGS]
        return flatten_answers(answers, [(2,)] * len(_YARN_CONFIGS))

    return grade_by_precision("Exercise 11.4: DeepSeek-V3's YaRN scales", compute, expected,
                              hints=hints)
