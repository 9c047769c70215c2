"""Plant plausible bugs in course_utils one at a time and record which notebook checks notice.

    python tools/mutants.py --list                  # the catalogue, by module
    python tools/mutants.py [--only NAME ...] [--module MODULE ...] [--jobs 2] [--write]
    python tools/mutants.py --report                # benchmarks/MUTANTS.md from mutants.json

A check earns its place by failing when the function it tests has a plausible bug. Each entry of
:data:`CATALOGUE` is one such bug: a small named patch (module file, exact old text, new text), of a
kind (off-by-one, sign, layout, base or exponent, axis, rounding, scale, default, mask,
transpose). For each mutant the runner

1. copies the committed repository (``git archive HEAD``) into a temporary directory, never
   touching the working tree, and applies the patch there;
2. executes, with nbclient, the notebooks that import the mutated module (directly or through
   another course_utils module) and whose unmutated run executes one of the patched lines (a
   notebook that never runs the line cannot behave differently: its coverage comes from one
   unmutated run per notebook, cached). The chapters that import the module themselves run
   first, quickest first, and the runner stops after the first notebook in which a check fails
   (``--every-notebook`` runs them all). In the copy, ``course_utils/checks.py`` prints a failed
   check as ``FAILED <name>: ...`` and goes on instead of raising (environment variable
   ``COURSE_MUTANTS_RECORD=1``), so every check of a notebook gives its verdict;
3. runs the unit tests that import the module (``pytest -x -q``; not tests/test_fuzz.py, which
   takes minutes and checks error messages) when no notebook check killed the mutant
   (``--tests always`` for every mutant).

A mutant is *killed by a notebook check* when a check (or an exercise checker's ``TRY AGAIN``)
fails in some notebook; *killed by an error* when no check fails but a cell raises; *killed only
by unit tests*; or it *survived* (its printed output may still differ: the table says so).

Results are cached in ``benchmarks/mutants.json`` per mutant, keyed by the patch and the git blob
hashes of course_utils and of the notebooks and tests it ran, so a full run can be split and
resumed (``--only``, ``--module``, or simply run again after an interruption). ``--write`` also
writes ``benchmarks/MUTANTS.md``. At most ``--jobs`` mutants run at a time (default 2), each
in its own copy.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import datetime
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "mutants.json"
REPORT = ROOT / "benchmarks" / "MUTANTS.md"
RECORD_VARIABLE = "COURSE_MUTANTS_RECORD"
NOTEBOOK_TIMEOUT = 1200  # seconds for one notebook under a mutant
#: Left out of the unit tests run per mutant: they feed random arguments to every public function
#: to check the error messages (minutes per run), and say nothing about a formula.
SLOW_TESTS = ("tests/test_fuzz.py",)
TEST_TIMEOUT = 900

KINDS = ("off-by-one", "sign", "layout", "base/exponent", "axis", "rounding", "scale", "default",
         "mask", "transpose", "formula")


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One plausible bug: replace ``old`` (which occurs exactly once) by ``new`` in ``path``."""

    name: str
    path: str  # relative to the repository root
    old: str
    new: str
    kind: str
    description: str

    @property
    def module(self) -> str:
        """``course_utils/lab/model.py`` -> ``lab.model``."""
        return self.path.removeprefix("course_utils/").removesuffix(".py").replace("/", ".")

    def key(self) -> str:
        text = json.dumps([self.path, self.old, self.new], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _m(name, module, old, new, kind, description):
    return Mutant(name, f"course_utils/{module.replace('.', '/')}.py", old, new, kind, description)


CATALOGUE: tuple[Mutant, ...] = (
    # --- sinusoidal -----------------------------------------------------------------------------
    _m("sin_exponent_without_2", "sinusoidal",
       "return base ** (-2.0 * i / d_model)", "return base ** (-i / d_model)",
       "base/exponent", "frequencies base^(-i/d) instead of base^(-2i/d)"),
    _m("sin_concat_spacing", "sinusoidal",
       "np.log(base) / (d_model // 2 - 1))", "np.log(base) / (d_model // 2))",
       "off-by-one", "concat layout divides the exponent by d/2 instead of d/2 - 1"),
    _m("sin_cos_swapped", "sinusoidal",
       "sin_view, cos_view = flat[:, 0::2], flat[:, 1::2]",
       "cos_view, sin_view = flat[:, 0::2], flat[:, 1::2]",
       "layout", "interleaved layout puts cos in even channels, sin in odd"),
    _m("sin_concat_as_interleaved", "sinusoidal",
       "sin_view, cos_view = flat[:, : d_model // 2], flat[:, d_model // 2 :]",
       "sin_view, cos_view = flat[:, 0::2], flat[:, 1::2]",
       "layout", "concat layout writes the interleaved layout"),
    _m("sin_start_plus_one", "sinusoidal",
       "positions = np.arange(start, start + n_positions, dtype=np.float64)",
       "positions = np.arange(start + 1, start + n_positions + 1, dtype=np.float64)",
       "off-by-one", "positions counted from 1"),
    _m("sin_shift_matrix_transposed", "sinusoidal",
       "m[sin_ch, cos_ch] = s\n    m[cos_ch, sin_ch] = -s",
       "m[sin_ch, cos_ch] = -s\n    m[cos_ch, sin_ch] = s",
       "transpose", "shift matrix M_k returned transposed (shifts by -k)"),
    _m("sin_similarity_mean", "sinusoidal",
       "return np.cos(np.multiply.outer(offsets, freqs)).sum(axis=-1)",
       "return np.cos(np.multiply.outer(offsets, freqs)).mean(axis=-1)",
       "scale", "dot product of two encodings averaged over pairs instead of summed"),
    _m("sin_angles_rounded_late", "sinusoidal",
       "return np.multiply.outer(positions.astype(dtype), freqs)",
       "return np.multiply.outer(positions, freqs).astype(dtype)",
       "rounding", "low-precision angles formed in float64, rounded once at the end"),
    _m("sin_default_base", "sinusoidal",
       "def sinusoidal_frequencies(d_model, *, base=10000.0, layout=\"interleaved\"):",
       "def sinusoidal_frequencies(d_model, *, base=1000.0, layout=\"interleaved\"):",
       "default", "default base 1000 instead of 10000"),
    # --- rope -----------------------------------------------------------------------------------
    _m("rope_theta_without_2", "rope",
       "return 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)",
       "return 1.0 / base ** (np.arange(head_dim // 2, dtype=np.float64) / head_dim)",
       "base/exponent", "theta_i = base^(-i/d) instead of base^(-2i/d)"),
    _m("rope_theta_d_minus_2", "rope",
       "return 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)",
       "return 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float64) / (head_dim - 2))",
       "base/exponent", "theta_i = base^(-2i/(d-2)): the slowest pair at exactly 1/base"),
    _m("rope_half_sign", "rope",
       "np.stack([-sin, sin], axis=-2)", "np.stack([sin, -sin], axis=-2)",
       "sign", "half layout rotates by -m theta (R_m^T)"),
    _m("rope_interleaved_sign", "rope",
       "out[..., 0::2] -= x[..., 1::2] * sin\n        out[..., 1::2] += x[..., 0::2] * sin",
       "out[..., 0::2] += x[..., 1::2] * sin\n        out[..., 1::2] -= x[..., 0::2] * sin",
       "sign", "interleaved layout rotates by -m theta (R_m^T)"),
    _m("rope_interleaved_tile", "rope",
       "np.multiply(x, np.repeat(cos, 2, axis=-1), out=out)",
       "np.multiply(x, np.tile(cos, 2), out=out)",
       "layout", "interleaved layout multiplies by cos in the half layout's channel order"),
    _m("rope_partial_freqs_from_head_dim", "rope",
       "inv_freq = rope_inv_freq(rotary_dim, base=base)",
       "inv_freq = rope_inv_freq(head_dim, base=base)[:n_pairs]",
       "base/exponent", "partial rotary: frequencies of the whole head_dim, truncated"),
    _m("rope_pass_through_zeroed", "rope",
       "out[..., rotary_dim:] = x[..., rotary_dim:]", "out[..., rotary_dim:] = 0.0",
       "mask", "partial rotary: the channels past rotary_dim are zeroed, not passed through"),
    _m("rope_matrix_transposed", "rope",
       "inv_freq=inv_freq).T", "inv_freq=inv_freq)",
       "transpose", "rope_rotation_matrix returns R_m^T"),
    _m("rope_permutation_swapped", "rope",
       "return np.concatenate([np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)])",
       "return np.concatenate([np.arange(1, head_dim, 2), np.arange(0, head_dim, 2)])",
       "layout", "interleaved-to-half permutation takes the odd channels first"),
    _m("rope_weight_inverse_permutation", "rope",
       "perm = interleaved_to_half_permutation(head_dim)",
       "perm = np.argsort(interleaved_to_half_permutation(head_dim))",
       "layout", "q/k weight rows permuted by the inverse permutation"),
    _m("rope_decay_sum", "rope",
       "return np.mean(np.abs(partial_sums), axis=-1)",
       "return np.sum(np.abs(partial_sums), axis=-1)",
       "scale", "RoFormer's bound summed instead of averaged over d/2"),
    _m("rope_bf16_truncate", "rope",
       "rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000)", "rounded = (bits & 0xFFFF0000)",
       "rounding", "bfloat16 by truncation instead of round-to-nearest-even"),
    _m("rope_bf16_ties_away", "rope",
       "rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000)", "rounded = ((bits + 0x8000) & 0xFFFF0000)",
       "rounding", "bfloat16 rounding ties away from zero instead of to even"),
    _m("rope_angles_position_unrounded", "rope",
       "product = _round_to(positions, precision)[..., None] * _round_to(inv_freq, precision)",
       "product = positions[..., None] * _round_to(inv_freq, precision)",
       "rounding", "low-precision angles: the position is not rounded to the precision"),
    _m("rope_angles_product_unrounded", "rope",
       "angles = _round_to(product, precision)", "angles = product",
       "rounding", "low-precision angles: the product is not rounded to the precision"),
    # --- attention ------------------------------------------------------------------------------
    _m("attn_no_scale", "attention",
       "scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])",
       "scores = np.matmul(q, np.swapaxes(k, -1, -2))",
       "scale", "attention without the 1/sqrt(d) scale"),
    _m("attn_scale_by_d", "attention",
       "scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])",
       "scores = np.matmul(q, np.swapaxes(k, -1, -2)) / q.shape[-1]",
       "scale", "scores divided by d instead of sqrt(d)"),
    _m("attn_bias_scaled", "attention",
       "scores = scores + bias\n", "scores = scores + bias / np.sqrt(q.shape[-1])\n",
       "scale", "the positional bias is scaled with the scores"),
    _m("attn_causal_strict", "attention",
       "return np.arange(n_keys)[None, :] <= query_pos", "return np.arange(n_keys)[None, :] < query_pos",
       "off-by-one", "causal mask hides the query's own key"),
    _m("attn_causal_no_offset", "attention",
       "query_pos = np.arange(n_keys - n_queries, n_keys)[:, None]",
       "query_pos = np.arange(n_queries)[:, None]",
       "off-by-one", "causal mask ignores cached keys (queries numbered from 0)"),
    _m("attn_causal_ignored", "attention",
       "scores = np.where(mask, scores, -np.inf)", "scores = np.where(mask | True, scores, -np.inf)",
       "mask", "causal=True ignored"),
    _m("attn_softmax_axis", "attention",
       "weights = softmax(scores, axis=-1)", "weights = softmax(scores, axis=-2)",
       "axis", "softmax over queries instead of keys"),
    _m("attn_entropy_bits", "attention",
       "p_log_p = np.where(positive, p * np.log(np.where(positive, p, 1.0)), 0.0)",
       "p_log_p = np.where(positive, p * np.log2(np.where(positive, p, 1.0)), 0.0)",
       "base/exponent", "attention entropy in bits instead of nats"),
    # --- learned --------------------------------------------------------------------------------
    _m("learned_resize_no_corners", "learned",
       "src = np.arange(new_max_len) * (self.max_len - 1) / (new_max_len - 1)",
       "src = np.arange(new_max_len) * self.max_len / new_max_len",
       "off-by-one", "resized table does not keep the first and last rows (align_corners=False)"),
    _m("learned_resize_round", "learned",
       "lo = np.floor(src).astype(np.int64)", "lo = np.round(src).astype(np.int64)",
       "rounding", "interpolation's lower row by rounding instead of floor"),
    _m("learned_resize_weights_swapped", "learned",
       "weight = (1.0 - frac) * self.weight[lo] + frac * self.weight[hi]",
       "weight = frac * self.weight[lo] + (1.0 - frac) * self.weight[hi]",
       "formula", "linear interpolation weights swapped"),
    _m("learned_fairseq_padding_counted", "learned",
       "return np.cumsum(mask, axis=-1) * mask + padding_idx",
       "return np.cumsum(mask, axis=-1) + padding_idx",
       "mask", "fairseq position ids: padding tokens get positions too"),
    _m("learned_fairseq_from_zero", "learned",
       "return np.cumsum(mask, axis=-1) * mask + padding_idx",
       "return (np.cumsum(mask, axis=-1) - 1) * mask + padding_idx",
       "off-by-one", "fairseq position ids start at padding_idx instead of padding_idx + 1"),
    # --- relative -------------------------------------------------------------------------------
    _m("rel_sign", "relative",
       "return np.arange(n_keys)[None, :] - query_pos[:, None]",
       "return query_pos[:, None] - np.arange(n_keys)[None, :]",
       "sign", "relative position i - j instead of j - i"),
    _m("rel_no_offset", "relative",
       "query_pos = np.arange(n_keys - n_queries, n_keys)\n",
       "query_pos = np.arange(n_queries)\n",
       "off-by-one", "relative positions ignore cached keys (queries numbered from 0)"),
    _m("shaw_clip_minus_one", "relative",
       "np.clip(rel, -max_distance, max_distance)",
       "np.clip(rel, -(max_distance - 1), max_distance - 1)",
       "off-by-one", "Shaw's clip at +-(k - 1) instead of +-k"),
    _m("shaw_clip_abs", "relative",
       "np.clip(rel, -max_distance, max_distance)", "np.minimum(np.abs(rel), max_distance)",
       "sign", "Shaw's clip loses the sign (one embedding per distance)"),
    _m("txl_u_with_query", "relative",
       "\"c\": np.broadcast_to((k @ u)[..., None, :], a.shape).copy()",
       "\"c\": np.broadcast_to((q @ u)[..., :, None], a.shape).copy()",
       "transpose", "Transformer-XL term (c) pairs u with the query instead of the key"),
    _m("txl_v_swapped_for_u", "relative",
       "\"d\": g @ v,", "\"d\": g @ u,",
       "formula", "Transformer-XL term (d) uses u instead of v"),
    _m("t5_direction_sign", "relative",
       "buckets += (rel > 0).astype(np.int64) * half", "buckets += (rel < 0).astype(np.int64) * half",
       "sign", "T5 bidirectional: past keys in the upper half of the buckets"),
    _m("t5_exact_le", "relative",
       "is_small = distance < max_exact", "is_small = distance <= max_exact",
       "off-by-one", "T5: one more exact bucket than max_exact"),
    _m("t5_causal_future", "relative",
       "distance = -np.minimum(rel, 0)", "distance = np.maximum(rel, 0)",
       "sign", "T5 unidirectional counts distances to future keys"),
    _m("t5_log_round", "relative",
       "if_large = max_exact + scaled.astype(np.int64)",
       "if_large = max_exact + np.round(scaled).astype(np.int64)",
       "rounding", "T5 log buckets rounded instead of truncated"),
    _m("t5_clamp_half", "relative",
       "if_large = np.minimum(if_large, half - 1)", "if_large = np.minimum(if_large, half)",
       "off-by-one", "T5 log buckets clamped at half instead of half - 1"),
    _m("t5_default_max_distance", "relative",
       "num_buckets=32,\n                                max_distance=128):",
       "num_buckets=32,\n                                max_distance=256):",
       "default", "T5 default max_distance 256 instead of 128"),
    _m("t5_bias_transposed", "relative",
       "return np.moveaxis(table[buckets], -1, 0)", "return np.moveaxis(table[buckets.T], -1, 0)",
       "transpose", "T5 bias matrix transposed (keys as rows)"),
    # --- alibi ----------------------------------------------------------------------------------
    _m("alibi_slopes_from_zero", "alibi",
       "return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)", "return 2.0 ** (-8.0 * np.arange(n) / n)",
       "off-by-one", "ALiBi slopes start at 2^0 instead of 2^(-8/n)"),
    _m("alibi_extra_odd", "alibi",
       "extra = _power_of_two_slopes(2 * closest)[0::2][: n_heads - closest]",
       "extra = _power_of_two_slopes(2 * closest)[1::2][: n_heads - closest]",
       "off-by-one", "non-power-of-two heads take the odd slopes of 2n instead of the even"),
    _m("alibi_closest_ceil", "alibi",
       "closest = 2 ** int(math.floor(math.log2(n_heads)))",
       "closest = 2 ** int(math.ceil(math.log2(n_heads)))",
       "rounding", "closest power of two rounded up"),
    _m("alibi_bias_sign", "alibi",
       "return np.multiply.outer(-slopes, distance)", "return np.multiply.outer(slopes, distance)",
       "sign", "ALiBi bias +m|i-j| instead of -m|i-j|"),
    _m("alibi_distance_plus_one", "alibi",
       "distance = np.subtract.outer(query_pos, np.arange(n_keys, dtype=np.float64))",
       "distance = np.subtract.outer(query_pos + 1, np.arange(n_keys, dtype=np.float64))",
       "off-by-one", "ALiBi distance m - n + 1"),
    _m("alibi_mask_self", "alibi",
       "np.copyto(distance, np.inf, where=distance < 0)",
       "np.copyto(distance, np.inf, where=distance <= 0)",
       "mask", "ALiBi causal mask hides the query's own key"),
    _m("alibi_no_offset", "alibi",
       "query_pos = np.arange(n_keys - n_queries, n_keys, dtype=np.float64)",
       "query_pos = np.arange(n_queries, dtype=np.float64)",
       "off-by-one", "ALiBi ignores cached keys (queries numbered from 0)"),
    _m("bloom_ignores_padding", "alibi",
       "key_index = (np.cumsum(mask, axis=-1) - 1) * mask",
       "key_index = np.arange(n_keys)[None, :] * mask",
       "mask", "BLOOM's ALiBi counts key positions without the padding mask"),
    _m("bloom_index_from_one", "alibi",
       "key_index = (np.cumsum(mask, axis=-1) - 1) * mask",
       "key_index = np.cumsum(mask, axis=-1) * mask",
       "off-by-one", "BLOOM's key index counted from 1"),
    # --- scaling --------------------------------------------------------------------------------
    _m("ntk_exponent_one", "scaling",
       "exponent = head_dim / (head_dim - 2) if head_dim > 2 else None",
       "exponent = 1.0 if head_dim > 2 else None",
       "base/exponent", "NTK-aware base * s instead of base * s^(d/(d-2))"),
    _m("ntk_exponent_d_over_d_plus_2", "scaling",
       "exponent = head_dim / (head_dim - 2) if head_dim > 2 else None",
       "exponent = head_dim / (head_dim + 2) if head_dim > 2 else None",
       "base/exponent", "NTK-aware exponent d/(d+2)"),
    _m("dynamic_no_floor", "scaling",
       "current = length if seq_len is None else max(seq_len, length)",
       "current = length if seq_len is None else seq_len",
       "mask", "dynamic NTK without its floor at the trained length"),
    _m("dynamic_without_minus", "scaling",
       "new_base = _scaled_base(base, factor * current / length - (factor - 1), exponent,\n"
       "                                    \"factor and seq_len\")",
       "new_base = _scaled_base(base, factor * current / length, exponent,\n"
       "                                    \"factor and seq_len\")",
       "formula", "dynamic NTK multiplier s L'/L instead of s L'/L - (s - 1)"),
    _m("yarn_ramp_reversed", "scaling",
       "inv_freq = theta * (1.0 - ramp) + (theta / factor) * ramp",
       "inv_freq = theta * ramp + (theta / factor) * (1.0 - ramp)",
       "formula", "YaRN interpolates the fast pairs and keeps the slow ones"),
    _m("yarn_mscale_log2", "scaling",
       "return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0",
       "return 1.0 if scale <= 1 else 0.1 * mscale * math.log2(scale) + 1.0",
       "base/exponent", "YaRN temperature with log2 instead of ln"),
    _m("yarn_range_no_2pi", "scaling",
       "return head_dim * math.log(length / (rotations * 2 * math.pi)) / (2 * math.log(base))",
       "return head_dim * math.log(length / (rotations * math.pi)) / (2 * math.log(base))",
       "formula", "YaRN correction dimension with pi instead of 2 pi"),
    _m("yarn_range_round", "scaling",
       "low, high = math.floor(low), math.ceil(high)", "low, high = round(low), round(high)",
       "rounding", "YaRN correction range rounded instead of floor/ceil"),
    _m("llama3_smooth_swapped", "scaling",
       "smoothed = (1 - smooth) * divided / factor + smooth * divided",
       "smoothed = smooth * divided / factor + (1 - smooth) * divided",
       "formula", "Llama 3 smoothing weights swapped"),
    _m("longrope_at_length", "scaling",
       "ext = long_ if (seq_len is not None and seq_len > length) else short",
       "ext = long_ if (seq_len is not None and seq_len >= length) else short",
       "off-by-one", "LongRoPE switches to long factors at seq_len = L"),
    _m("longrope_no_sqrt", "scaling",
       "attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(length))",
       "attention = 1.0 if factor <= 1 else 1 + math.log(factor) / math.log(length)",
       "formula", "LongRoPE attention factor without the square root"),
    _m("linear_multiplies", "scaling",
       "return theta / factor, 1.0", "return theta * factor, 1.0",
       "sign", "Position Interpolation multiplies the frequencies by s"),
    _m("yarn_paper_ramp_over_beta", "scaling",
       "return np.clip((r - alpha) / (beta - alpha), 0.0, 1.0)",
       "return np.clip((r - alpha) / beta, 0.0, 1.0)",
       "formula", "YaRN paper ramp divided by beta instead of beta - alpha"),
    _m("yarn_paper_gamma_swapped", "scaling",
       "return (1.0 - gamma) * theta / factor + gamma * theta",
       "return gamma * theta / factor + (1.0 - gamma) * theta",
       "formula", "YaRN paper: gamma weights swapped"),
    _m("rotations_without_2", "scaling",
       "return length * rope_inv_freq(head_dim, base=base) / (2 * np.pi)",
       "return length * rope_inv_freq(head_dim, base=base) / np.pi",
       "formula", "rotations in context L theta / pi instead of L theta / (2 pi)"),
    _m("dynamic_paper_no_floor", "scaling",
       "return _scaled_base(base, max(1.0, seq_len / length), exponent, \"seq_len\")",
       "return _scaled_base(base, seq_len / length, exponent, \"seq_len\")",
       "mask", "dynamic NTK (YaRN paper convention) without its floor at 1"),
    _m("ridge_formula", "scaling",
       "scale = sing / (sing**2 + ridge)", "scale = 1.0 / (sing + ridge)",
       "formula", "ridge regression shrinks 1/(s + lambda) instead of s/(s^2 + lambda)"),
    # --- practice -------------------------------------------------------------------------------
    _m("pos_ids_from_one", "practice",
       "np.where(mask == 1, np.cumsum(mask, axis=-1) - 1, pad_position)",
       "np.where(mask == 1, np.cumsum(mask, axis=-1), pad_position)",
       "off-by-one", "position ids from the attention mask start at 1"),
    _m("pos_ids_ignore_left_padding", "practice",
       "np.where(mask == 1, np.cumsum(mask, axis=-1) - 1, pad_position)",
       "np.where(mask == 1, np.arange(mask.shape[-1]), pad_position)",
       "mask", "position ids ignore left padding"),
    _m("packed_ids_from_one", "practice",
       "starts = np.cumsum(lengths) - lengths", "starts = np.cumsum(lengths) - lengths - 1",
       "off-by-one", "packed position ids restart at 1"),
    _m("block_diag_strict", "practice",
       "allowed &= np.arange(doc.size)[None, :] <= np.arange(doc.size)[:, None]",
       "allowed &= np.arange(doc.size)[None, :] < np.arange(doc.size)[:, None]",
       "off-by-one", "packed causal mask hides each token's own key"),
    _m("block_diag_leaks", "practice",
       "allowed = doc[:, None] == doc[None, :]", "allowed = doc[:, None] >= doc[None, :]",
       "mask", "packed mask lets a document attend to earlier documents"),
    _m("doc_starts_miss_first", "practice",
       "starts = np.flatnonzero(ids == ids.min())", "starts = np.flatnonzero(np.diff(ids) < 0) + 1",
       "off-by-one", "document starts from position ids miss the first document"),
    _m("padding_mask_on_queries", "practice",
       "allowed = causal[None] & mask[:, None, :]", "allowed = causal[None] & mask[:, :, None]",
       "axis", "padding mask applied to queries instead of keys"),
    _m("padding_empty_rows", "practice",
       "return allowed | (empty & own[None])", "return allowed",
       "mask", "fully padded query rows left with no key at all"),
    _m("kv_cache_prepends", "practice",
       "self.keys = np.concatenate([self.keys, keys], axis=-2)",
       "self.keys = np.concatenate([keys, self.keys], axis=-2)",
       "axis", "KV cache puts new keys before the old ones (values appended)"),
    _m("mask_to_bias_inverted", "practice",
       "return np.where(allowed, 0.0, -np.inf)", "return np.where(allowed, -np.inf, 0.0)",
       "sign", "boolean mask to additive bias inverted"),
    # --- multimodal -----------------------------------------------------------------------------
    _m("grid_by_height", "multimodal",
       "return p // width, p % width", "return p // height, p % height",
       "axis", "patch row/column from the height instead of the width"),
    _m("sincos2d_halves_swapped", "multimodal",
       "halves = [by_row, by_col] if first_axis == \"row\" else [by_col, by_row]",
       "halves = [by_col, by_row] if first_axis == \"row\" else [by_row, by_col]",
       "layout", "2-D sin-cos table puts the column half first"),
    _m("sincos2d_interleaved", "multimodal",
       "by_row = sinusoidal_encoding_at(rows, dim // 2, base=base)[:, sines_first]\n"
       "    by_col = sinusoidal_encoding_at(cols, dim // 2, base=base)[:, sines_first]",
       "by_row = sinusoidal_encoding_at(rows, dim // 2, base=base)\n"
       "    by_col = sinusoidal_encoding_at(cols, dim // 2, base=base)",
       "layout", "2-D sin-cos table interleaves sin and cos instead of sines first"),
    _m("cubic_kernel_typo", "multimodal",
       "near = ((a + 2) * t - (a + 3)) * t * t + 1", "near = ((a + 2) * t - (a + 2)) * t * t + 1",
       "formula", "Keys' cubic kernel with (a + 2) for (a + 3)"),
    _m("bicubic_no_half_pixel", "multimodal",
       "src = (np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5",
       "src = np.arange(out_size) * (in_size / out_size)",
       "off-by-one", "bicubic resize without the half-pixel centres"),
    _m("bicubic_default_a", "multimodal",
       "def bicubic_weights(in_size, out_size, *, a=-0.75):",
       "def bicubic_weights(in_size, out_size, *, a=-0.5):",
       "default", "bicubic a = -0.5 (PIL) instead of torch's -0.75"),
    _m("linear_corners_ratio", "multimodal",
       "ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0",
       "ratio = in_size / out_size if out_size > 1 else 0.0",
       "off-by-one", "align-corners resize with in/out instead of (in-1)/(out-1)"),
    _m("antialias_not_widened", "multimodal",
       "widen = max(scale, 1.0)", "widen = 1.0",
       "scale", "antialiased downsampling does not widen the kernel"),
    _m("pos_table_reshape_transposed", "multimodal",
       "patches = table[num_prefix_tokens:].reshape(height, width, -1)",
       "patches = table[num_prefix_tokens:].reshape(width, height, -1)",
       "transpose", "position table reshaped (width, height)"),
    _m("axial_theta_full_dim", "multimodal",
       "theta = rope_inv_freq(head_dim // 2, base=base)",
       "theta = rope_inv_freq(head_dim, base=base)[: head_dim // 4]",
       "base/exponent", "axial RoPE frequencies of the whole head, truncated"),
    _m("axial_default_base", "multimodal",
       "def axial_rope_frequencies(head_dim, *, base=100.0, first_axis=\"row\"):",
       "def axial_rope_frequencies(head_dim, *, base=10000.0, first_axis=\"row\"):",
       "default", "axial RoPE default base 10000 instead of 100"),
    _m("mixed_rows_swapped", "multimodal",
       "return mag * np.sin(direction), mag * np.cos(direction)",
       "return mag * np.cos(direction), mag * np.sin(direction)",
       "layout", "RoPE-Mixed row and column frequencies swapped"),
    _m("rope2d_col_uses_row_freq", "multimodal",
       "return apply_rope(by_row, cols, layout=layout, inv_freq=freq_col)",
       "return apply_rope(by_row, cols, layout=layout, inv_freq=freq_row)",
       "formula", "2-D RoPE rotates columns with the row frequencies"),
    _m("mrope_section_reversed", "multimodal",
       "return np.repeat(np.arange(3), section)", "return np.repeat(np.arange(3), section[::-1])",
       "layout", "M-RoPE section split read backwards"),
    _m("mrope_interleaved_hw_swapped", "multimodal",
       "axes[1:3 * section[1]:3] = 1\n    axes[2:3 * section[2]:3] = 2",
       "axes[1:3 * section[1]:3] = 2\n    axes[2:3 * section[2]:3] = 1",
       "layout", "interleaved M-RoPE swaps height and width pairs"),
    _m("mrope_channels_interleaved", "multimodal",
       "channels = np.concatenate([pairs, pairs + head_dim // 2])",
       "channels = np.concatenate([2 * pairs, 2 * pairs + 1])",
       "layout", "M-RoPE picks pair channels in the interleaved layout"),
    _m("mrope_text_resumes_by_count", "multimodal",
       "current = current + max(h, w) if text_resumes_at",
       "current = current + h * w if text_resumes_at",
       "formula", "text after an image resumes after h*w ids instead of max(h, w)"),
    _m("mrope_temporal_round", "multimodal",
       "temporal = np.floor(np.arange(t) * step).astype(np.int64)",
       "temporal = np.round(np.arange(t) * step).astype(np.int64)",
       "rounding", "video temporal ids rounded instead of floored"),
    # --- modern ---------------------------------------------------------------------------------
    _m("nope_layers_offset", "modern",
       "return ((np.arange(n) + 1) % interval != 0).astype(np.int64)",
       "return (np.arange(n) % interval != 0).astype(np.int64)",
       "off-by-one", "NoPE every 4th layer counted from layer 0"),
    _m("llama4_types_swapped", "modern",
       "\"chunked_attention\" if f else \"full_attention\"",
       "\"full_attention\" if f else \"chunked_attention\"",
       "formula", "Llama 4 layer types read the flag backwards"),
    _m("smollm3_sliding_on_rope", "modern",
       "\"sliding_attention\" if sliding and not f else \"full_attention\"",
       "\"sliding_attention\" if sliding and f else \"full_attention\"",
       "formula", "SmolLM3 slides on RoPE layers instead of NoPE layers"),
    _m("sliding_pattern_offset", "modern",
       "\"sliding_attention\" if (layer + 1) % pattern else \"full_attention\"",
       "\"sliding_attention\" if layer % pattern else \"full_attention\"",
       "off-by-one", "sliding-window pattern counted from layer 0"),
    _m("llama4_scale_offset", "modern",
       "np.log1p(np.floor((m + 1.0) / floor_scale))", "np.log1p(np.floor(m / floor_scale))",
       "off-by-one", "Llama 4 attention temperature floor(m / s) instead of floor((m + 1) / s)"),
    _m("sliding_window_le", "modern",
       "return (distance >= 0) & (distance < window)", "return (distance >= 0) & (distance <= window)",
       "off-by-one", "sliding window of window + 1 keys"),
    _m("chunked_as_sliding", "modern",
       "return (n <= m) & (n // chunk_size == m // chunk_size)",
       "return (n <= m) & (m - n < chunk_size)",
       "mask", "chunked attention as a sliding window"),
    _m("turns_without_2", "modern",
       "return span * inv_freq / (2 * np.pi)", "return span * inv_freq / np.pi",
       "formula", "turns within a span without the 2 of 2 pi"),
    _m("deepseek_no_permutation", "modern",
       "return out[..., interleaved_to_half_permutation(out.shape[-1])]", "return out",
       "layout", "DeepSeek interleaved RoPE not permuted to the half layout"),
    _m("deepseek_mscale_once", "modern",
       "return scale * mscale * mscale", "return scale * mscale",
       "scale", "DeepSeek softmax scale times mscale once instead of squared"),
    _m("mla_position_unscaled", "modern",
       "return scale * (content + position)", "return scale * content + position",
       "scale", "MLA: the RoPE part of the score is not scaled"),
    _m("sinks_wrong_slice", "modern",
       "axis=-1), axis=-1)[..., :-1]", "axis=-1), axis=-1)[..., 1:]",
       "off-by-one", "attention sinks: the first key's weight dropped instead of the sink's"),
    _m("sinks_no_scale", "modern",
       "scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[2])",
       "scores = q @ np.swapaxes(k, -1, -2)",
       "scale", "attention with sinks without 1/sqrt(d)"),
    _m("streaming_window_short", "modern",
       "np.arange(n_tokens - window, n_tokens)])", "np.arange(n_tokens - window + 1, n_tokens)])",
       "off-by-one", "streaming cache keeps window - 1 recent tokens"),
    _m("streaming_reassign_swapped", "modern",
       "positions = np.arange(kept.size) if reassign else kept.copy()",
       "positions = kept.copy() if reassign else np.arange(kept.size)",
       "formula", "streaming cache: reassign flag read backwards"),
    # --- lab ------------------------------------------------------------------------------------
    _m("adam_no_bias_correction", "lab.train",
       "m_hat = m / (1 - beta1 ** t)\n        v_hat = v / (1 - beta2 ** t)",
       "m_hat = m\n        v_hat = v",
       "formula", "Adam without bias correction"),
    _m("adam_eps_inside_sqrt", "lab.train",
       "params[name] -= lr * m_hat / (np.sqrt(v_hat) + eps)",
       "params[name] -= lr * m_hat / np.sqrt(v_hat + eps)",
       "formula", "Adam with eps inside the square root"),
    _m("eval_first_half", "lab.train",
       "mask = mask & (np.arange(length) >= length // 2)",
       "mask = mask & (np.arange(length) < length // 2)",
       "mask", "evaluation scores the first half instead of the second"),
    _m("lab_causal_mask_removed", "lab.model",
       "masked = np.where(causal_mask(n), 0.0, -np.inf)[None]", "masked = np.zeros((1, n, n))",
       "mask", "the lab model without its causal mask"),
    _m("lab_alibi_not_causal", "lab.model",
       "return alibi_bias(config.n_heads, n), None",
       "return alibi_bias(config.n_heads, n, causal=False), None",
       "mask", "the lab's ALiBi model attends to future keys"),
    _m("lab_forward_scale_d_model", "lab.model",
       "    scale = 1.0 / np.sqrt(config.head_dim)\n    if logit_scale != 1.0:\n"
       "        scale = scale * logit_scale\n    layers = []",
       "    scale = 1.0 / np.sqrt(config.d_model)\n    if logit_scale != 1.0:\n"
       "        scale = scale * logit_scale\n    layers = []",
       "scale", "forward pass scales by 1/sqrt(d_model) instead of 1/sqrt(head_dim)"),
    _m("lab_rope_queries_only", "lab.model",
       "q, k = apply_rope(np.stack([q, k]), positions, layout=\"half\", **rope_kwargs)",
       "q = apply_rope(q, positions, layout=\"half\", **rope_kwargs)",
       "formula", "the lab's RoPE rotates queries but not keys"),
    _m("lab_backward_rope_sign", "lab.model",
       "apply_rope(np.stack([dq, dk]), -positions,", "apply_rope(np.stack([dq, dk]), positions,",
       "sign", "backward pass rotates the gradients by +m instead of -m"),
    _m("lab_temperature_not_squared", "lab.model",
       "return inv_freq, (attention_factor ** 2 if self.temperature else 1.0)",
       "return inv_freq, (attention_factor if self.temperature else 1.0)",
       "scale", "YaRN temperature applied to the logits once instead of squared"),
    _m("lab_offset_plus_one", "lab.model",
       "c[\"weights\"][:, :, queries, queries - offset]",
       "c[\"weights\"][:, :, queries, queries - offset + 1]",
       "off-by-one", "attention to offset k reads the key at k - 1"),
    _m("lab_beyond_strict", "lab.model",
       "far = np.arange(n)[None, :] <= queries[:, None] - min_distance",
       "far = np.arange(n)[None, :] < queries[:, None] - min_distance",
       "off-by-one", "attention beyond d counts keys beyond d + 1"),
    _m("lab_ce_grad_ignores_mask", "lab.model",
       "dlogits *= mask[..., None] / count", "dlogits /= count",
       "mask", "cross-entropy gradient flows from unscored positions"),
    _m("copy_back_k_minus_one", "lab.tasks",
       "labels[:, k:] = tokens[:, :-k]", "labels[:, k - 1:] = tokens[:, :-k + 1]",
       "off-by-one", "copy_back labels copy k - 1 tokens back"),
    _m("copy_back_mask_from_k", "lab.tasks",
       "mask[:, k + 1:] = True", "mask[:, k:] = True",
       "off-by-one", "copy_back scores the position whose answer is BOS"),
    _m("recall_seen_counts_itself", "lab.tasks",
       "seen = np.tril(same, k=-1).any(axis=-1)", "seen = np.tril(same, k=0).any(axis=-1)",
       "off-by-one", "recall scores keys never seen before"),
    _m("recall_latest_earliest", "lab.tasks",
       "n_pairs - 1 - np.argmax(same[:, :, ::-1], axis=-1), -1)",
       "np.argmax(same, axis=-1), -1)",
       "formula", "recall_latest answers with the earliest value, not the latest"),
    _m("extension_beyond_strict", "lab.extension",
       "return (positions >= self.train_length) & (positions < n)",
       "return (positions > self.train_length) & (positions < n)",
       "off-by-one", "positions beyond L scored from L + 1"),
    _m("extension_beyond_early", "lab.extension",
       "return (positions >= self.train_length) & (positions < n)",
       "return (positions >= self.train_length - 1) & (positions < n)",
       "off-by-one", "positions beyond L scored from L - 1"),
    _m("answer_distance_in_pairs", "lab.extension",
       "np.where(found, 2 * (np.arange(n_pairs) - latest), -1)",
       "np.where(found, np.arange(n_pairs) - latest, -1)",
       "scale", "answer distance counted in pairs instead of tokens"),
    _m("yarn_no_t_keeps_temperature", "lab.extension",
       "\"yarn_no_t\": (\"yarn\", False)}", "\"yarn_no_t\": (\"yarn\", True)}",
       "default", "YaRN without temperature keeps its temperature"),
    _m("passkey_attention_on_key", "lab.extension",
       "answer = query - answer_distance(task, tokens, mask)[rows, query] + 1",
       "answer = query - answer_distance(task, tokens, mask)[rows, query]",
       "off-by-one", "passkey attention read on the needle's key, not on its value"),
    _m("bootstrap_ninety_percent", "lab.extension",
       "low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])",
       "low, high = np.quantile(means, [1 - level, level])",
       "formula", "percentile bootstrap takes one-sided quantiles (a 90 % interval)"),
    _m("t_interval_population_std", "lab.extension",
       "* diff.std(ddof=1) / np.sqrt(diff.size)", "* diff.std() / np.sqrt(diff.size)",
       "formula", "Student-t interval with the population standard deviation"),
    _m("verdict_on_high_end", "lab.extension",
       "return \"agrees\" if low > 0 else", "return \"agrees\" if high > 0 else",
       "sign", "a claim agrees when its interval's upper end is above 0"),
    _m("stated_ignores_reruns", "lab.extension",
       "stated = here if all(v == here for v in paths.values()) else \"unclear\"",
       "stated = here",
       "formula", "a verdict is stated from one floating-point path, whatever the reruns give"),
    _m("stated_unrun_as_unclear", "lab.extension",
       "if seen:     # one word when the path gives one",
       "if True:     # one word when the path gives one",
       "mask", "a rerun that did not run a measurement counts as a path that finds it unclear"),
    _m("rerun_test_every_other_rerun", "lab.extension",
       "{w: reruns[w] for w in order[:order.index(where)]}",
       "{w: reruns[w] for w in order if w != where}",
       "mask", "a rerun is tested against the verdicts of every other rerun, later ones too"),
    _m("rerun_test_counts_unrun", "lab.extension",
       "if cells[first][\"stated\"] == \"unclear\" or not words:",
       "if cells[first][\"stated\"] == \"unclear\":",
       "mask", "a measurement the rerun did not run counts as one it changed"),
    _m("own_ceiling_local_main", "lab.extension",
       "out[where] = gap(reruns[same[-1]][label], curves)",
       "out[where] = gap(main, curves)",
       "layout", "a rerun's own-frequency ceilings are paired with this path's fine-tunes"),
    _m("fresh_passkey_seed_ignored", "lab.extension",
       "else (fresh, fresh + 1)",
       "else (fresh, PASSKEY_SEED)",
       "default", "a fresh test set redraws the recall sequences but not the passkey's"),
    _m("own_ceiling_scored_unstretched", "lab.extension",
       "return params, [scored(params, job[\"config\"], s[\"train_length\"] * m)",
       "return params, [scored(params, replace(job[\"config\"], rope_scaling=None),\n"
       "                        s[\"train_length\"] * m)",
       "formula", "a model trained with a method's frequencies is scored without them"),
    _m("test_set_one_path", "lab.extension",
       "return _count_held(stated_verdicts(record, split), fresh[split][\"theirs\"])",
       "return _count_held(stated_verdicts({**record, \"reruns\": {}}, split),\n"
       "                   fresh[split][\"theirs\"])",
       "mask", "the fresh test set is counted against the verdicts of this path alone"),
    _m("fine_tune_unpaired", "lab.extension",
       "\"seed\": 1000 * job[\"seed\"] + 10 * multipliers.index(m),",
       "\"seed\": 1000 * job[\"seed\"] + 10 * multipliers.index(m) + METHODS.index(method),",
       "default", "each method fine-tunes on its own data (comparisons unpaired)"),
    _m("prefix_rule_one_short", "lab.extension",
       "scaled = method_config(config, \"ntk\", n / train_length, train_length)",
       "scaled = method_config(config, \"ntk\", max(1.0, (n - 1) / train_length), train_length)",
       "off-by-one", "section 3.3 rule reads the factor of a prefix one token shorter"),
    _m("variant_checker_all_split", "exercises.context_extension",
       "far.append(hits[core.train_length:].sum() / total[core.train_length:].sum())",
       "far.append(hits.sum() / total.sum())",
       "mask", "Exercise 12.3 grades accuracy over all scored queries, not the far ones"),
    # --- real_model -----------------------------------------------------------------------------
    _m("rms_norm_centred", "real_model.model",
       "variance = np.mean(np.square(x), axis=-1, keepdims=True, dtype=np.float32)",
       "variance = np.var(x, axis=-1, keepdims=True, dtype=np.float32)",
       "formula", "RMSNorm centres x (LayerNorm's variance)"),
    _m("gguf_not_permuted", "real_model.model",
       "if self.layout == \"half\":\n                q = permute_qk_weight_for_half_layout",
       "if self.layout == \"interleaved\":\n                q = permute_qk_weight_for_half_layout",
       "layout", "GGUF q/k weights not permuted for the half layout"),
    _m("real_scale_d_model", "real_model.model",
       "scale = np.float32(1.0 / np.sqrt(d))", "scale = np.float32(1.0 / np.sqrt(cfg.d_model))",
       "scale", "released model's scores scaled by 1/sqrt(d_model)"),
    _m("real_attention_factor_once", "real_model.model",
       "q, k = q * np.float32(factor), k * np.float32(factor)", "q = q * np.float32(factor)",
       "scale", "attention factor applied to queries only (once instead of squared)"),
    _m("real_window_plus_one", "real_model.model",
       "seen &= (keys[None, :] > rows - window) | (keys[None, :] < n_sink)",
       "seen &= (keys[None, :] >= rows - window) | (keys[None, :] < n_sink)",
       "off-by-one", "released model's window of window + 1 keys"),
    _m("real_gqa_modulo", "real_model.model",
       "qg = q.reshape(G, group, T, d)", "qg = q.reshape(group, G, T, d).transpose(1, 0, 2, 3)",
       "layout", "grouped-query attention pairs head h with kv head h mod G"),
    _m("real_loss_current_token", "real_model.model",
       "ids[start + 1:stop + 1])",
       "ids[start:stop])",
       "off-by-one", "loss of predicting the current token instead of the next"),
    _m("pair_norms_interleaved", "real_model.measures",
       "np.sqrt(x[..., :half] ** 2 + x[..., half:] ** 2)",
       "np.sqrt(x[..., 0::2] ** 2 + x[..., 1::2] ** 2)",
       "layout", "pair norms of the interleaved layout on half-layout queries and keys"),
)


#: Bugs a reviewer found that survived the notebooks once: they run first.
FIRST = ("attn_no_scale", "shaw_clip_minus_one", "rope_matrix_transposed", "alibi_bias_sign",
         "alibi_distance_plus_one", "ntk_exponent_one", "ntk_exponent_d_over_d_plus_2",
         "dynamic_no_floor", "yarn_paper_ramp_over_beta", "bloom_ignores_padding",
         "adam_no_bias_correction", "lab_causal_mask_removed")


#: The chapter that teaches each module: it runs first, so the table says whether it notices.
TEACHES = {"attention": "01", "sinusoidal": "02", "learned": "03", "relative": "04", "rope": "05",
           "alibi": "06", "scaling": "07", "practice": "08", "lab.model": "09", "lab.train": "09",
           "lab.tasks": "09", "lab.extension": "12", "multimodal": "10", "modern": "11",
           "real_model.model": "13", "real_model.measures": "13",
           "exercises.context_extension": "12"}


# --- which notebooks and tests a module reaches ----------------------------------------------------

def _resolve(module: str, level: int, target: str | None) -> str:
    """Absolute dotted name of a relative import in ``module`` (a module, not a package)."""
    if level == 0:
        return target or ""
    parts = module.split(".")[:-level]
    return ".".join(parts + ([target] if target else []))


def _imports_of_source(source: str, module: str = "__main__") -> set[str]:
    """Dotted course_utils modules a piece of code imports (a ``from x import y`` adds x.y too)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(re.findall(r"\b(course_utils(?:\.\w+)*)", source))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node.level, node.module)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    result = set()
    for name in found:
        if name == "course_utils" or name.startswith("course_utils."):
            parts = name.split(".")
            result.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return result


def _module_files(root: pathlib.Path) -> dict[str, pathlib.Path]:
    out = {}
    for path in (root / "course_utils").rglob("*.py"):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_closure(root: pathlib.Path) -> dict[str, set[str]]:
    """Module -> every course_utils module importing it loads (itself included)."""
    return import_graph(root)[1]


def import_graph(root: pathlib.Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> modules it imports itself, module -> every module importing it loads)."""
    files = _module_files(root)
    direct = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        own = name + ".__init__" if is_package else name
        direct[name] = {m for m in _imports_of_source(path.read_text(), own) if m in files}
        parent = name.rpartition(".")[0]
        if parent:
            direct[name].add(parent)
    closure = {}
    for name in files:
        seen, todo = {name}, [name]
        while todo:
            for dep in direct[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        closure[name] = seen
    return direct, closure


def _notebook_source(path: pathlib.Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    code = []
    for cell in cells:
        if cell["cell_type"] == "code":
            text = "".join(cell["source"])
            code.append("\n".join(line for line in text.splitlines()
                                  if not line.lstrip().startswith(("%", "!"))))
    return "\n".join(code)


def users(root: pathlib.Path, files: list[str], closure: dict[str, set[str]], module: str,
          *, transitive: bool, direct: dict[str, set[str]] | None = None) -> list[str]:
    """The files (notebooks or tests) that import ``course_utils.<module>``.

    ``transitive``: also through other course_utils modules. Otherwise only by name, or through
    a package's ``__init__`` (``from course_utils.real_model import load_model``) if ``direct``
    (each module's own imports) is given.
    """
    target = f"course_utils.{module}"
    out = []
    for rel in files:
        path = root / rel
        source = _notebook_source(path) if rel.endswith(".ipynb") else path.read_text()
        imported = {m for m in _imports_of_source(source) if m in closure}
        if transitive:
            imported = set().union(*(closure[m] for m in imported)) if imported else set()
        elif direct is not None:
            packages = {m for m in imported if (root / m.replace(".", "/") / "__init__.py").exists()
                        and m != "course_utils"}
            imported = imported.union(*(direct[p] for p in packages))
        if target in imported:
            out.append(rel)
    return out


# --- the temporary copy ---------------------------------------------------------------------------

RECORDING = '''

# Added by tools/mutants.py in a temporary copy only: with COURSE_MUTANTS_RECORD=1 a failed
# check prints its FAILED line and the notebook goes on, so every check gives its verdict.
if __import__("os").environ.get("COURSE_MUTANTS_RECORD") == "1":
    def _recorded(check):
        def recorded(*args, **kwargs):
            try:
                return check(*args, **kwargs)
            except AssertionError as exc:
                if not str(exc).startswith("FAILED "):
                    raise
                print(str(exc).splitlines()[0][:300])
                return None
        recorded.__name__, recorded.__doc__ = check.__name__, check.__doc__
        return recorded

    check_close, check_true, check_raises = (
        _recorded(check_close), _recorded(check_true), _recorded(check_raises))
'''


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def make_copy(commit: str, where: pathlib.Path) -> pathlib.Path:
    """The committed tree at ``commit`` in ``where``, checks recording instead of raising."""
    where.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    checks = where / "course_utils" / "checks.py"
    checks.write_text(checks.read_text() + RECORDING)
    return where


def environment(copy: pathlib.Path, *, record: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", COURSE_PROGRESS="0",
               PYTHONHASHSEED="0", MPLBACKEND="Agg")
    env.pop("COVERAGE_PROCESS_START", None)
    if record:
        env[RECORD_VARIABLE] = "1"
    else:
        env.pop(RECORD_VARIABLE, None)
    return env


# --- running one notebook ------------------------------------------------------------------------

_PASS = re.compile(r"^PASS  (.+?)(?:  \[.*)?$")
_FAILED = re.compile(r"^FAILED (.+?: .*)$")
_TRY_AGAIN = re.compile(r"^TRY AGAIN  (.+?):(?: |$)")


def execute_notebook(copy: pathlib.Path, notebook: str, out: pathlib.Path,
                     coverage_rc: pathlib.Path | None = None) -> None:
    """Run ``notebook`` of ``copy`` with every check recording; write its verdicts to ``out``."""
    env = environment(copy, record=True)
    if coverage_rc is not None:
        env["COVERAGE_PROCESS_START"] = str(coverage_rc)
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "_execute", str(copy), notebook,
           str(out)]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=NOTEBOOK_TIMEOUT)
        failed = proc.returncode != 0 and not out.exists()
        message = proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        failed, message = True, f"timeout after {NOTEBOOK_TIMEOUT} s"
    if failed:
        out.write_text(json.dumps({"crashed": message, "cells": [],
                                   "seconds": time.monotonic() - start}))


def _execute_main(copy: str, notebook: str, out: str) -> int:
    """Child process: execute the notebook with nbclient (errors allowed), save what it printed."""
    import nbclient
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import Float

    class PatientKernelManager(AsyncKernelManager):
        # time for a kernel to save its coverage data at exit before it is killed
        shutdown_wait_time = Float(300.0)

    path = pathlib.Path(copy) / notebook
    nb = nbformat.read(path, as_version=4)
    start = time.monotonic()
    client = nbclient.NotebookClient(nb, timeout=NOTEBOOK_TIMEOUT, kernel_name="python3",
                                     allow_errors=True, kernel_manager_class=PatientKernelManager,
                                     resources={"metadata": {"path": str(path.parent)}})
    crashed = None
    try:
        client.execute()
    except Exception as exc:  # a dead kernel or a timeout: keep what ran
        crashed = f"{type(exc).__name__}: {str(exc)[:500]}"
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        text, error = [], None
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and output.name == "stdout":
                text.append(output.text)
            elif output.output_type in ("execute_result", "display_data"):
                text.append(output.get("data", {}).get("text/plain", "") + "\n"
                            if "image/png" not in output.get("data", {}) else "")
            elif output.output_type == "error":
                error = f"{output.ename}: {output.evalue}"[:300]
        cells.append({"index": index, "text": "".join(text), "error": error})
    pathlib.Path(out).write_text(json.dumps({"cells": cells, "crashed": crashed,
                                             "seconds": round(time.monotonic() - start, 1)}))
    return 0


def verdicts(run: dict) -> dict:
    """Checks passed and failed, exercise hints, cell errors of one notebook run."""
    passed, failed, errors = [], [], []
    for cell in run["cells"]:
        for line in cell["text"].splitlines():
            if (m := _PASS.match(line)):
                passed.append(m.group(1))
            elif (m := _FAILED.match(line)):
                failed.append(m.group(1)[:160])  # "<name>: <evidence>", split by compare()
            elif (m := _TRY_AGAIN.match(line)):
                failed.append(f"exercise {m.group(1)} (TRY AGAIN)")
        if cell["error"]:
            errors.append(f"cell {cell['index']}: {cell['error']}")
    return {"passed": passed, "failed": failed, "errors": errors}


def summarise(run: dict) -> dict:
    """A notebook run as stored: its verdicts and a hash of each code cell's printed text."""
    return {"verdicts": verdicts(run), "crashed": run.get("crashed"), "seconds": run.get("seconds"),
            "hashes": {str(c["index"]): hashlib.sha1(c["text"].encode()).hexdigest()[:12]
                       for c in run["cells"]}}


def compare(baseline: dict, run: dict) -> dict:
    """What a mutant changed in one notebook (both runs as :func:`summarise` gives them)."""
    if run.get("crashed") and not run["hashes"]:
        return {"checks": [], "errors": [f"notebook did not run: {run['crashed'][:200]}"],
                "missing": 0, "output_changed": True, "seconds": run.get("seconds")}
    base, now = baseline["verdicts"], run["verdicts"]
    names = sorted(set(base["passed"]), key=len, reverse=True)

    def name_of(failed):  # a check's name may itself contain ": "
        if failed.startswith("exercise "):
            return failed
        return next((n for n in names if failed.startswith(n + ": ")), failed.split(": ")[0])

    checks = [name_of(f) for f in now["failed"]
              if name_of(f) not in {name_of(g) for g in base["failed"]}]
    errors = [e for e in now["errors"] if e not in base["errors"]]
    if run.get("crashed"):
        errors.append(f"kernel: {run['crashed'][:200]}")
    missing = len(set(base["passed"]) - set(now["passed"]) - set(now["failed"]))
    changed = any(baseline["hashes"].get(i) != h for i, h in run["hashes"].items())
    return {"checks": list(dict.fromkeys(checks)), "errors": errors, "missing": missing,
            "output_changed": changed, "seconds": run.get("seconds")}


# --- coverage of the unmutated runs ----------------------------------------------------------------

def _coverage_rc(copy: pathlib.Path, data: pathlib.Path) -> pathlib.Path:
    rc = data.parent.parent / f"{data.parent.name}.coveragerc"
    rc.write_text(f"[run]\ndata_file = {data}\nparallel = true\nsource = {copy / 'course_utils'}\n")
    return rc


def _covered_lines(copy: pathlib.Path, data: pathlib.Path) -> dict[str, list[int]] | None:
    """course_utils file -> lines the run executed; None without coverage (then run them all)."""
    try:
        import coverage  # installed with nbval (the "test" extra)
    except ImportError:
        return None

    cov = coverage.Coverage(data_file=str(data))
    cov.combine([str(data.parent)], strict=False, keep=False)
    cov.load()
    measured = cov.get_data()
    out = {}
    for filename in measured.measured_files():
        try:
            rel = pathlib.Path(filename).resolve().relative_to(copy.resolve()).as_posix()
        except ValueError:
            continue
        out[rel] = sorted(measured.lines(filename) or [])
    return out


def kernel_measured(baseline: dict, wrapper_line: int) -> bool:
    """Whether the kernel's own coverage was saved (not only its worker processes').

    Every notebook calls a check in its kernel, and in the copy a check goes through the
    recording wrapper appended to checks.py: its ``return check(...)`` line must be covered.
    """
    lines = (baseline.get("coverage") or {}).get("course_utils/checks.py", [])
    return wrapper_line in lines


def patched_lines(mutant: Mutant, source: str) -> list[int]:
    """Line numbers (1-based) of the old text in the unmutated file."""
    start = source.index(mutant.old)
    first = source.count("\n", 0, start) + 1
    return list(range(first, first + mutant.old.count("\n") + 1))


# --- the run ---------------------------------------------------------------------------------------

class Store:
    """benchmarks/mutants.json: baseline runs per notebook and results per mutant."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.lock = threading.Lock()
        self.data = json.loads(path.read_text()) if path.exists() else {}
        self.data.setdefault("baseline", {})
        self.data.setdefault("results", {})

    def save(self) -> None:
        with self.lock:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True) + "\n")
            tmp.replace(self.path)


def blob_hashes(commit: str) -> dict[str, str]:
    out = {}
    for line in git("ls-tree", "-r", commit).splitlines():
        meta, path = line.split("\t", 1)
        out[path] = meta.split()[2]
    return out


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def fingerprint(path: pathlib.Path) -> str:
    """A file as a run sees it: Python code with its line numbers, but not its docstrings' words.

    A docstring reworded on the same lines leaves every output and every covered line number as
    they were, so the cached runs stay valid; any other change (a line moved) does not.
    """
    data = path.read_bytes()
    if path.suffix != ".py":
        return hashlib.sha256(data).hexdigest()[:16]
    tree = ast.parse(data)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            node.body[0].value.value = ""
            node.body[0].end_col_offset = node.body[0].value.end_col_offset = 0
    return _digest(ast.dump(tree, include_attributes=True))


def package_fingerprints(copy: pathlib.Path) -> dict[str, str]:
    """course_utils file (relative path) -> :func:`fingerprint`."""
    return {p.relative_to(copy).as_posix(): fingerprint(p)
            for p in sorted((copy / "course_utils").rglob("*")) if p.is_file()
            and "__pycache__" not in p.parts}


def baseline_key(copy, notebook, blobs, closure, prints) -> str:
    """What an unmutated notebook run depends on: the notebook, the modules it loads, the data."""
    files = _module_files(copy)
    loaded = {m for m in _imports_of_source(_notebook_source(copy / notebook)) if m in closure}
    modules = set().union(*(closure[m] for m in loaded)) if loaded else set()
    paths = {files[m].relative_to(copy).as_posix() for m in modules}
    paths |= {p for p in prints if not p.endswith(".py")}
    return _digest(blobs[notebook], *(f"{p} {prints[p]}" for p in sorted(paths)))


def run(selected: list[Mutant], *, jobs: int, tests_mode: str, every_notebook: bool,
        store: Store, log, plan_only: bool = False, until: datetime.datetime | None = None,
        command: str = "", commit: str = "HEAD") -> None:
    started = time.monotonic()
    commit = git("rev-parse", commit).strip()
    blobs = blob_hashes(commit)
    work = pathlib.Path(tempfile.mkdtemp(prefix="course-mutants-"))
    try:
        copies = [make_copy(commit, work / f"copy{k}") for k in range(jobs)]
        root = copies[0]
        prints = package_fingerprints(root)
        package = _digest(*(f"{p} {h}" for p, h in prints.items()))
        direct_edges, closure = import_graph(root)
        notebooks = sorted(p for p in blobs if p.startswith("notebooks/") and p.endswith(".ipynb"))
        tests = sorted(p for p in blobs if re.fullmatch(r"tests/test_\w+\.py", p))
        plans, reach = {}, {}
        for mutant in selected:
            source = (root / mutant.path).read_text()
            if source.count(mutant.old) != 1:
                plans[mutant.name] = None
                continue
            if mutant.module not in reach:
                reach[mutant.module] = {
                    "notebooks": users(root, notebooks, closure, mutant.module, transitive=True),
                    "direct": users(root, notebooks, closure, mutant.module, transitive=False),
                    "tests": [t for t in users(root, tests, closure, mutant.module,
                                               transitive=False, direct=direct_edges)
                              if t not in SLOW_TESTS]}
            plans[mutant.name] = dict(reach[mutant.module], lines=patched_lines(mutant, source))
        needed = sorted({nb for p in plans.values() if p for nb in p["notebooks"]})
        keys = {nb: baseline_key(root, nb, blobs, closure, prints) for nb in needed}
        wrapper = _wrapper_line(root)
        baselines = _baselines(needed, copies, keys, store, log)
        todo = []
        for mutant in selected:
            plan = plans[mutant.name]
            if plan is None:
                store.data["results"][mutant.name] = {
                    "key": None, "commit": commit, "stale": True,
                    "note": "the old text does not occur exactly once at this commit"}
                log(f"{mutant.name}: stale patch, skipped")
                continue
            ran = [nb for nb in plan["notebooks"] if not kernel_measured(baselines[nb], wrapper)
                   or set(plan["lines"]) & set(baselines[nb]["coverage"].get(mutant.path, []))]
            # the chapter that teaches the module, then those that import it themselves, the
            # quicker first
            ran.sort(key=lambda nb: (pathlib.Path(nb).name[:2] != TEACHES.get(mutant.module),
                                     nb not in plan["direct"], baselines[nb]["seconds"]))
            key = _digest(mutant.key(), package, *(blobs[p] for p in ran + plan["tests"]),
                          tests_mode, "every notebook" if every_notebook else "first kill")
            old = store.data["results"].get(mutant.name)
            if old and old.get("key") == key:
                continue
            todo.append((mutant, plan, ran, key))
        # the known survivors first, then the quickest (a run stopped early has done the most);
        # the mutants whose first notebook trains models (minutes each) last
        def cost(item):
            return baselines[item[2][0]]["seconds"] if item[2] else 0.0

        todo.sort(key=lambda item: (cost(item) > 300, item[0].name not in FIRST, cost(item)))
        log(f"commit {commit[:10]}: {len(todo)} of {len(selected)} mutants to run "
            f"({len(selected) - len(todo)} cached), {jobs} at a time")
        if plan_only:
            for mutant, plan, ran, _ in todo:
                cost = sum(baselines[nb]["seconds"] for nb in ran)
                log(f"  {mutant.name}: {', '.join(pathlib.Path(nb).stem[:2] for nb in ran)} "
                    f"(at most {cost:.0f} s of notebooks), tests {len(plan['tests'])}")
            return
        free = list(copies)
        free_lock = threading.Lock()

        finished = []

        def one(item):
            mutant, plan, ran, key = item
            if until is not None and datetime.datetime.now() >= until:
                return  # out of time: this mutant stays "not run" in the report
            with free_lock:
                copy = free.pop()
            try:
                result = _run_mutant(copy, mutant, plan, ran, baselines, tests_mode,
                                     every_notebook)
            finally:
                with free_lock:
                    free.append(copy)
            result.update(key=key, commit=commit)
            store.data["results"][mutant.name] = result
            finished.append(mutant.name)
            store.save()
            log(f"{mutant.name}: {result['verdict']} ({result['seconds']:.0f} s; "
                f"{', '.join(result['killed_by'][:2]) or 'no check'})")

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for future in [pool.submit(one, item) for item in todo]:
                future.result()
        store.data["last_run"] = {"commit": commit, "date": datetime.date.today().isoformat(),
                                  "ran": len(finished), "jobs": jobs, "cpus": os.cpu_count(),
                                  "minutes": (time.monotonic() - started) / 60,
                                  "stopped": len(finished) < len(todo), "command": command}
        store.save()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _baselines(needed, copies, keys, store, log) -> dict:
    """Unmutated run (verdicts and coverage) of each needed notebook, cached by content."""
    out, todo = {}, []
    for nb in needed:
        key = keys[nb]
        cached = store.data["baseline"].get(nb)
        if cached and "cells" in cached:  # the full printed text, as first stored: keep less
            cached = store.data["baseline"][nb] = dict(
                summarise(cached), key=cached["key"], coverage=cached["coverage"])
        if cached and cached.get("key") == key:
            out[nb] = cached
        else:
            todo.append((nb, key))
    if todo:
        log(f"unmutated runs with coverage: {', '.join(pathlib.Path(nb).stem for nb, _ in todo)}")

    def one(k, nb, key):
        copy = copies[k % len(copies)]
        data_dir = copy.parent / f"coverage-{pathlib.Path(nb).stem}"
        data_dir.mkdir()
        rc = _coverage_rc(copy, data_dir / ".coverage")
        result = copy.parent / f"baseline-{pathlib.Path(nb).stem}.json"
        execute_notebook(copy, nb, result, rc)
        run_ = json.loads(result.read_text())
        entry = dict(summarise(run_), key=key,
                     coverage=_covered_lines(copy, data_dir / ".coverage"))
        bad = entry["verdicts"]
        if run_.get("crashed") or bad["failed"] or bad["errors"]:
            log(f"warning: the unmutated {nb} does not run clean: {run_.get('crashed')} "
                f"{bad['failed'][:3]} {bad['errors'][:3]}")
        out[nb] = entry
        store.data["baseline"][nb] = entry
        store.save()
        log(f"baseline {nb}: {run_['seconds']} s, {len(bad['passed'])} checks pass")

    # one notebook per copy at a time (coverage data directories are per notebook)
    with concurrent.futures.ThreadPoolExecutor(len(copies)) as pool:
        chunks = [todo[k::len(copies)] for k in range(len(copies))]

        def chain(k, items):
            for nb, key in items:
                one(k, nb, key)

        for future in [pool.submit(chain, k, items) for k, items in enumerate(chunks)]:
            future.result()
    return out


def _wrapper_line(copy: pathlib.Path) -> int:
    lines = (copy / "course_utils" / "checks.py").read_text().splitlines()
    return lines.index("                return check(*args, **kwargs)") + 1


def _run_mutant(copy, mutant, plan, ran, baselines, tests_mode, every_notebook) -> dict:
    start = time.monotonic()
    target = copy / mutant.path
    original = target.read_text()
    target.write_text(original.replace(mutant.old, mutant.new, 1))
    per_notebook, tests_killed = {}, []
    try:
        out = copy.parent / f"run-{copy.name}.json"
        for nb in ran:
            out.unlink(missing_ok=True)
            execute_notebook(copy, nb, out)
            per_notebook[nb] = compare(baselines[nb], summarise(json.loads(out.read_text())))
            if per_notebook[nb]["checks"] and not every_notebook:
                break  # killed by a check: the remaining notebooks are not needed for the verdict
        noticed = any(r["checks"] for r in per_notebook.values())
        if plan["tests"] and (tests_mode == "always" or (tests_mode == "survivors" and not noticed)):
            tests_killed = _run_tests(copy, plan["tests"])
    finally:
        target.write_text(original)
    checks = [f"{pathlib.Path(nb).stem[:2]}: {name}" for nb, r in per_notebook.items()
              for name in r["checks"]]
    errors = [f"{pathlib.Path(nb).stem[:2]}: {e}" for nb, r in per_notebook.items()
              for e in r["errors"]]
    if checks:
        verdict = "check"
    elif errors:
        verdict = "error"
    elif tests_killed:
        verdict = "tests only"
    else:
        verdict = "survived"
    return {"module": mutant.module, "kind": mutant.kind, "description": mutant.description,
            "importing_notebooks": plan["notebooks"], "direct_notebooks": plan["direct"],
            "ran_notebooks": list(per_notebook), "not_needed": ran[len(per_notebook):],
            "tests": plan["tests"], "notebooks": per_notebook,
            "killed_by": checks or errors, "tests_killed": tests_killed, "verdict": verdict,
            "output_changed": any(r["output_changed"] for r in per_notebook.values()),
            "seconds": round(time.monotonic() - start, 1)}


def _run_tests(copy: pathlib.Path, tests: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider",
           "-o", "addopts=", "-rf"]
    try:
        proc = subprocess.run(cmd, cwd=copy, env=environment(copy, record=False),
                              capture_output=True, text=True, timeout=TEST_TIMEOUT)
    except subprocess.TimeoutExpired:
        return [f"timeout after {TEST_TIMEOUT} s"]
    if proc.returncode == 0 or proc.returncode == 5:
        return []
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", proc.stdout, flags=re.M)
    return failed or [f"pytest exit status {proc.returncode}"]


# --- the report ------------------------------------------------------------------------------------

#: Why a mutant no notebook check kills is left so (shown under "Not killed by a notebook check").
WHY_NOT_KILLED = {
    "t5_exact_le": "equivalent: at a distance of exactly max_exact the log branch gives "
                   "max_exact + floor(ln 1) = max_exact, the exact rule's bucket, so no bucket "
                   "changes (chapter 04 says so)",
    "extension_beyond_strict": "equivalent on the lab's task: position L (16) holds a key, which "
                               "is never scored, so positions > L and >= L select the same "
                               "scored positions (the count at position 16 is 0 in the stored "
                               "run); extension_beyond_early, the other off-by-one, is killed",
    "block_diag_strict": "a cell raises (every key of a row masked): the notebook stops, which "
                         "a reader sees",
    "padding_empty_rows": "a cell raises (every key of a row masked): the notebook stops, which "
                          "a reader sees",
}

VERDICTS = {"check": "killed by a notebook check", "error": "killed by a notebook error only",
            "tests only": "killed only by unit tests", "survived": "survived"}


def teaching_outcome(module: str, result: dict) -> str:
    """What the chapter that teaches ``module`` made of a mutant."""
    chapter = TEACHES.get(module)
    for nb, outcome in result["notebooks"].items():
        if pathlib.Path(nb).name[:2] == chapter:
            return "kills" if outcome["checks"] else "error" if outcome["errors"] else "misses"
    if any(pathlib.Path(nb).name[:2] == chapter for nb in result.get("not_needed", [])):
        return "not run"
    return "line not run"


def _cell(text: str, width: int = 110) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."


def report(store: Store, command: str) -> str:
    results = {m.name: store.data["results"].get(m.name) for m in CATALOGUE}
    done = {n: r for n, r in results.items() if r and not r.get("stale")}
    stale = [n for n, r in results.items() if r and r.get("stale")]
    counts = {v: sum(r["verdict"] == v for r in done.values()) for v in VERDICTS}
    commits = sorted({r["commit"][:10] for r in done.values()})
    seconds = sum(r["seconds"] for r in done.values())
    by_module: dict[str, list[Mutant]] = {}
    for m in CATALOGUE:
        by_module.setdefault(m.module, []).append(m)
    lines = [
        "# Mutants: plausible bugs and the checks that notice them",
        "",
        "Each mutant is one plausible bug planted in `course_utils` (a small named patch in",
        "`tools/mutants.py`), in a temporary copy of the committed repository. The notebooks",
        "that import the module and run the patched line (their unmutated run's coverage says",
        "which) are executed with every check recording its verdict instead of stopping the",
        "notebook: the chapters that import the module themselves first, quickest first, until",
        "one in which a check fails. A mutant is *killed by a notebook check* when a check (or an",
        "exercise checker's TRY AGAIN) fails; *by an error* when no check fails but a cell raises.",
        "The unit tests that import the module (`pytest -x`, without the argument fuzzing of",
        "`tests/test_fuzz.py`) run for the mutants no check killed.",
        "",
        f"Made by `{command}` (`make mutants`), on commit(s) {', '.join(commits) or '-'}; "
        f"{len(done)} of {len(CATALOGUE)} mutants recorded"
        + (" (a partial run: the others have not run yet)" if len(done) < len(CATALOGUE) else "")
        + f", {seconds / 60:.0f} min of runs in all (`--jobs` mutants at a time).",
        "",
        "| outcome | mutants | share |",
        "|---|---:|---:|",
    ]
    for v, label in VERDICTS.items():
        share = f"{100 * counts[v] / len(done):.0f}%" if done else "-"
        lines.append(f"| {label} | {counts[v]} | {share} |")
    if stale:
        lines += ["", f"Stale patches (old text not found at the run's commit): {', '.join(stale)}."]
    lines += ["", "## By module", "",
              "*By its chapter*: killed by a check of the chapter that teaches the module (it runs",
              "first when it runs the patched line).", "",
              "| module | chapter | mutants | by a check | by its chapter | by an error only |"
              " only by unit tests | survived | not run |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for module, mutants in by_module.items():
        rs = [done.get(m.name) for m in mutants]
        row = [sum(1 for r in rs if r and r["verdict"] == v) for v in VERDICTS]
        own = sum(1 for r in rs if r and teaching_outcome(module, r) == "kills")
        lines.append(f"| {module} | {TEACHES.get(module, '-')} | {len(mutants)} | {row[0]} | "
                     f"{own} | " + " | ".join(map(str, row[1:]))
                     + f" | {sum(r is None for r in rs)} |")
    last = store.data.get("last_run", {})
    if last:
        lines += ["", f"Last run: `{last.get('command') or command}` on commit "
                      f"{last['commit'][:10]}, {last['date']}, "
                      f"{last['ran']} mutants in {last['minutes']:.0f} min wall time "
                      f"({last['jobs']} at a time on {last['cpus']} cores"
                      + (", stopped before the end" if last.get("stopped") else "") + ")."]
        if last.get("note"):
            lines += ["", last["note"]]
    lines += ["", "## By notebook", "",
              "The notebooks each mutant ran (until the first that a check failed in), and how",
              "many of them the notebook's own checks killed.", "",
              "| notebook | mutants run | killed by its checks | by its errors only | "
              "not noticed |", "|---|---:|---:|---:|---:|"]
    per_nb: dict[str, list[str]] = {}
    for r in done.values():
        for nb, outcome in r["notebooks"].items():
            per_nb.setdefault(nb, []).append(
                "check" if outcome["checks"] else "error" if outcome["errors"] else "none")
    for nb in sorted(per_nb):
        o = per_nb[nb]
        lines.append(f"| {pathlib.Path(nb).stem} | {len(o)} | {o.count('check')} | "
                     f"{o.count('error')} | {o.count('none')} |")
    for module, mutants in by_module.items():
        lines += ["", f"## `course_utils/{module.replace('.', '/')}.py`", "",
                  "| mutant | kind | bug | notebooks run | outcome | its chapter | killed by |",
                  "|---|---|---|---|---|---|---|"]
        for m in mutants:
            r = done.get(m.name)
            if r is None:
                lines.append(f"| `{m.name}` | {m.kind} | {_cell(m.description, 80)} | - | not run "
                             "| | |")
                continue
            ran = ", ".join(pathlib.Path(nb).stem[:2] for nb in r["ran_notebooks"]) or "none"
            if r["verdict"] in ("check", "error"):
                by = "; ".join(r["killed_by"][:3]) + (
                    f" (+{len(r['killed_by']) - 3})" if len(r["killed_by"]) > 3 else "")
            elif r["verdict"] == "tests only":
                by = "tests: " + ", ".join(r["tests_killed"][:2])
            else:
                by = "output changed, no check failed" if r["output_changed"] else "no change seen"
            lines.append(f"| `{m.name}` | {m.kind} | {_cell(m.description, 80)} | {ran} | "
                         f"{VERDICTS[r['verdict']]} | {teaching_outcome(module, r)} | "
                         f"{_cell(by)} |")
    survivors = [(n, r) for n, r in done.items()
                 if r["verdict"] in ("error", "tests only", "survived")]
    lines += ["", "## Not killed by a notebook check", ""]
    if not survivors:
        lines.append("None.")
    for n, r in survivors:
        nbs = ", ".join(pathlib.Path(nb).stem for nb in r["ran_notebooks"]) or \
            "no notebook runs the patched line"
        lines.append(f"- `{n}` ({r['module']}): {r['description']}; notebooks run: {nbs}; "
                     f"{VERDICTS[r['verdict']]}"
                     + (f" ({', '.join(r['tests_killed'][:2])})" if r["tests_killed"] else "")
                     + (f"; {WHY_NOT_KILLED[n]}" if n in WHY_NOT_KILLED else "") + ".")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_execute"]:
        return _execute_main(*argv[1:4])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print the catalogue and exit")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these mutants")
    parser.add_argument("--module", nargs="+", metavar="MODULE",
                        help="run the mutants of these modules (e.g. rope lab.model)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants at a time (default 2)")
    parser.add_argument("--tests", choices=("survivors", "always", "never"), default="survivors",
                        help="run the unit tests for mutants no notebook check killed (default), "
                             "for every mutant, or never")
    parser.add_argument("--every-notebook", action="store_true",
                        help="run every notebook that reaches the patched line, not only until "
                             "the first check fails")
    parser.add_argument("--commit", default="HEAD",
                        help="the commit to plant the bugs in (default HEAD): an earlier one reuses "
                             "its cached unmutated runs while notebooks change")
    parser.add_argument("--until", metavar="HH:MM",
                        help="start no mutant after this time of day (the rest stay not run)")
    parser.add_argument("--plan", action="store_true",
                        help="print what each mutant would run (after the unmutated runs)")
    parser.add_argument("--write", action="store_true", help="also write benchmarks/MUTANTS.md")
    parser.add_argument("--report", action="store_true",
                        help="only write benchmarks/MUTANTS.md from benchmarks/mutants.json")
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS,
                        help="where results are cached (default benchmarks/mutants.json)")
    args = parser.parse_args(argv)
    if args.list:
        for m in CATALOGUE:
            print(f"{m.module:18} {m.name:34} {m.kind:14} {m.description}")
        modules = {m.module for m in CATALOGUE}
        print(f"{len(CATALOGUE)} mutants in {len(modules)} modules")
        return 0
    names = {m.name for m in CATALOGUE}
    unknown = sorted(set(args.only or ()) - names)
    if unknown:
        parser.error(f"unknown mutant(s) {unknown}; --list shows the catalogue")
    modules = {m.module for m in CATALOGUE}
    if set(args.module or ()) - modules:
        parser.error(f"unknown module(s) {sorted(set(args.module) - modules)}; "
                     f"accepted: {', '.join(sorted(modules))}")
    if args.jobs < 1:
        parser.error(f"--jobs must be a positive integer, got {args.jobs}")
    until = None
    if args.until:
        try:
            hour, minute = (int(x) for x in args.until.split(":"))
            until = datetime.datetime.now().replace(hour=hour, minute=minute, second=0)
        except ValueError:
            parser.error(f"--until must be a time of day HH:MM, got {args.until!r}")
    store = Store(args.results)
    command = "python tools/mutants.py --write"
    if not args.report:
        selected = [m for m in CATALOGUE
                    if (not args.only or m.name in args.only)
                    and (not args.module or m.module in args.module)]
        start = time.monotonic()

        def log(message):
            print(f"[{time.monotonic() - start:6.0f} s] {message}", flush=True)

        run(selected, jobs=args.jobs, tests_mode=args.tests, every_notebook=args.every_notebook,
            store=store, log=log, plan_only=args.plan, until=until,
            command=" ".join(["python tools/mutants.py", *argv]), commit=args.commit)
        log("done")
    if args.write or args.report:
        REPORT.write_text(report(store, command))
        print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
