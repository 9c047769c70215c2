"""Context-length scaling of RoPE: the frequency changes that let a model read past its training length.

:func:`rope_scaling` returns ``(inv_freq, attention_factor)`` exactly as Hugging Face's
``ROPE_INIT_FUNCTIONS`` do (``transformers/modeling_rope_utils.py``): ``inv_freq`` replaces RoPE's
``theta_i`` and ``attention_factor`` multiplies both cos and sin, so the attention logits are
scaled by its square. Parameter names and defaults are those of a model config's
``rope_parameters`` (formerly ``rope_scaling``).

Notation as on the course's notation page: ``d`` = rotary head dimension, ``b`` = base
(``rope_theta``), ``s`` = ``factor``, ``L`` = ``original_max_position_embeddings``,
``theta_i = b^(-2i/d)``, ``lambda_i = 2 pi / theta_i``, and the blend
``theta_i' = gamma_i theta_i + (1 - gamma_i) theta_i / s`` (``gamma_i = 1`` keeps a frequency,
``gamma_i = 0`` interpolates it), and ``rho_i = L / lambda_i`` the number of turns pair ``i`` makes
within ``L`` (the YaRN paper's ``r``; in the course ``r`` is the relative position). The argument
of :func:`yarn_paper_ramp` keeps the paper's name ``r``. "NTK" is the neural tangent kernel, after
which NTK-aware scaling is named.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate as val
from .rope import rope_inv_freq

__all__ = [
    "METHODS",
    "rope_scaling",
    "yarn_correction_range",
    "yarn_get_mscale",
    "DYNAMIC_CONVENTIONS",
    "rotations_in_context",
    "yarn_paper_ramp",
    "yarn_paper_inv_freq",
    "dynamic_ntk_base",
    "rope_score_features",
    "fit_rope_score",
]

METHODS = ("linear", "ntk", "dynamic", "yarn", "llama3", "longrope")

_PARAMS = {
    "linear": {},
    "ntk": {},
    "dynamic": {},
    "yarn": {"beta_fast": None, "beta_slow": None, "mscale": None, "mscale_all_dim": None,
             "attention_factor": None, "truncate": True},
    "llama3": {"low_freq_factor": None, "high_freq_factor": None},
    "longrope": {"short_factor": None, "long_factor": None, "attention_factor": None},
}
_REQUIRED = {"llama3": ("low_freq_factor", "high_freq_factor"),
             "longrope": ("short_factor", "long_factor")}


def yarn_get_mscale(scale, mscale=1.0):
    """YaRN's attention temperature ``0.1 * mscale * ln(scale) + 1`` (1 for ``scale <= 1``)."""
    scale = val.positive_float(scale, "scale")
    mscale = val.real_float(mscale, "mscale")
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn_correction_range(head_dim, *, base=10000.0, original_max_position_embeddings,
                          beta_fast=32.0, beta_slow=1.0, truncate=True):
    """Pair-index bounds ``(low, high)`` of YaRN's ramp.

    ``dim(rho) = d ln(L / (2 pi rho)) / (2 ln b)`` is the (fractional) index of the pair that turns
    ``rho`` times over ``L`` positions. ``low = dim(beta_fast)``, ``high = dim(beta_slow)``, floored and
    ceiled when ``truncate``, clamped to ``[0, d - 1]``. Llama-2 (d=128, b=1e4, L=4096): (20, 46).
    """
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    base = val.positive_float(base, "base", minimum=1.0)
    if base == 1.0:
        raise ValueError("base must differ from 1 (YaRN divides by ln(base)), got 1.0")
    length = val.positive_int(original_max_position_embeddings, "original_max_position_embeddings")
    beta_fast = val.positive_float(beta_fast, "beta_fast")
    beta_slow = val.positive_float(beta_slow, "beta_slow")
    truncate = val.boolean(truncate, "truncate")

    def dim_of(rotations):
        return head_dim * math.log(length / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = dim_of(beta_fast), dim_of(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, head_dim - 1)


def _scaled_base(base, multiplier, exponent, blame):
    """``base * multiplier ** exponent``; a ValueError naming ``blame`` if it overflows float64."""
    try:
        value = base * multiplier ** exponent
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"{blame} too large: the scaled base {base:g} * {multiplier:g}^{exponent:g} "
                         "overflows float64")
    return value


def _factor_list(value, arg, n_pairs):
    array = val.numeric_array(value, arg).astype(np.float64)
    if array.shape != (n_pairs,) or np.any(array <= 0):
        raise ValueError(
            f"{arg} must be a list of {n_pairs} positive numbers (one per pair, head_dim // 2), "
            f"got shape {array.shape}"
        )
    return array


def rope_scaling(method, head_dim, *, base=10000.0, factor, original_max_position_embeddings,
                 seq_len=None, **params):
    """Scaled RoPE frequencies and attention factor for a context-extension ``method``.

    Parameters
    ----------
    method : {"linear", "ntk", "dynamic", "yarn", "llama3", "longrope"}
        * ``"linear"`` (Position Interpolation, Chen et al. 2023): ``theta_i / s``.
        * ``"ntk"`` (NTK-aware, static): base ``b' = b * s^(d / (d - 2))``. Not one of
          Hugging Face's methods; the formula of the original NTK-aware proposal, which
          ``"dynamic"`` applies with a length-dependent factor.
        * ``"dynamic"`` (dynamic NTK): ``b' = b * (s l / L - (s - 1))^(d/(d-2))``,
          ``l = max(seq_len, L)``; ``seq_len=None`` means ``l = L`` (no change).
        * ``"yarn"`` (Peng et al. 2023): ``gamma_i theta_i + (1 - gamma_i) theta_i / s`` with
          ``1 - gamma_i`` (the code's ``linear_ramp_factor``) linear in ``i`` between
          :func:`yarn_correction_range`; attention factor ``0.1 ln s + 1`` unless given (or the
          ``mscale``/``mscale_all_dim`` ratio).
        * ``"llama3"``: keep ``theta_i`` where ``lambda_i < L / high_freq_factor``, divide by ``s`` where
          ``lambda_i > L / low_freq_factor``, blend linearly in ``L / lambda_i`` between.
        * ``"longrope"`` (the per-pair factors of Ding et al. 2024, as run for Phi-3):
          ``1 / (ext_i b^(2i/d))`` with ``ext`` the ``long_factor`` list when ``seq_len > L``,
          else ``short_factor``; attention factor ``sqrt(1 + ln s / ln L)`` unless given (a
          formula of code: transformers', for Phi-3, and the default ``"su"`` policy of the
          authors' ``microsoft/LongRoPE`` ``rope/longrope.py``). The paper's other
          parts (initial tokens kept un-interpolated, progressive extension) are not modelled.
    head_dim : int, even
        Rotary dimension ``d`` (head_dim times ``partial_rotary_factor``).
    base : float
        ``rope_theta``.
    factor : float >= 1
        The scaling factor ``s``.
    original_max_position_embeddings : int
        ``L``, the pre-training context length.
    seq_len : int, optional
        Current sequence length (used by ``"dynamic"`` and ``"longrope"`` only).
    **params
        Method-specific: yarn ``beta_fast`` (32), ``beta_slow`` (1), ``mscale``,
        ``mscale_all_dim``, ``attention_factor``, ``truncate`` (True); llama3 ``low_freq_factor``,
        ``high_freq_factor`` (required); longrope ``short_factor``, ``long_factor`` (required),
        ``attention_factor``.

    Returns
    -------
    inv_freq : array, shape ``(head_dim // 2,)``, float64
    attention_factor : float

    References
    ----------
    Hugging Face ``transformers/modeling_rope_utils.py``: ``_compute_linear_scaling_rope_parameters``,
    ``_compute_dynamic_ntk_parameters``, ``_compute_yarn_parameters``, ``_compute_llama3_parameters``,
    ``_compute_longrope_parameters``. Tests compare against them (rtol 1e-5).
    """
    method = val.choice(method, "method", METHODS)
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    base = val.positive_float(base, "base", minimum=1.0)
    factor = val.positive_float(factor, "factor", minimum=1.0)
    length = val.positive_int(original_max_position_embeddings, "original_max_position_embeddings")
    if seq_len is not None:
        seq_len = val.positive_int(seq_len, "seq_len")
    unknown = sorted(set(params) - set(_PARAMS[method]))
    if unknown:
        accepted = ", ".join(_PARAMS[method]) or "none"
        raise TypeError(f"unknown parameter(s) {unknown} for method={method!r}; accepted: {accepted}")
    p = {**_PARAMS[method], **params}
    for name in _REQUIRED.get(method, ()):
        if p[name] is None:
            raise TypeError(f"method={method!r} requires the parameter {name!r}")
    theta = rope_inv_freq(head_dim, base=base)
    exponent = head_dim / (head_dim - 2) if head_dim > 2 else None

    if method == "linear":
        return theta / factor, 1.0

    if method in ("ntk", "dynamic"):
        if exponent is None:
            raise ValueError(f"head_dim must be >= 4 for method={method!r} (exponent d/(d-2)), got {head_dim}")
        if method == "ntk":
            new_base = _scaled_base(base, factor, exponent, "factor")
        else:
            current = length if seq_len is None else max(seq_len, length)
            new_base = _scaled_base(base, factor * current / length - (factor - 1), exponent,
                                    "factor and seq_len")
        return rope_inv_freq(head_dim, base=new_base), 1.0

    if method == "yarn":
        beta_fast = val.positive_float(p["beta_fast"], "beta_fast") if p["beta_fast"] else 32.0
        beta_slow = val.positive_float(p["beta_slow"], "beta_slow") if p["beta_slow"] else 1.0
        low, high = yarn_correction_range(head_dim, base=base,
                                          original_max_position_embeddings=length,
                                          beta_fast=beta_fast, beta_slow=beta_slow,
                                          truncate=p["truncate"])
        if low == high:
            high += 0.001  # as the reference, to avoid dividing by zero
        ramp = np.clip((np.arange(head_dim // 2) - low) / (high - low), 0.0, 1.0)
        inv_freq = theta * (1.0 - ramp) + (theta / factor) * ramp
        attention = p["attention_factor"]
        if attention is None:
            if p["mscale"] and p["mscale_all_dim"]:
                attention = (yarn_get_mscale(factor, p["mscale"])
                             / yarn_get_mscale(factor, p["mscale_all_dim"]))
            else:
                attention = yarn_get_mscale(factor)
        return inv_freq, val.positive_float(attention, "attention_factor")

    if method == "llama3":
        low_ff = val.positive_float(p["low_freq_factor"], "low_freq_factor")
        high_ff = val.positive_float(p["high_freq_factor"], "high_freq_factor")
        if high_ff <= low_ff:
            raise ValueError(
                f"high_freq_factor must exceed low_freq_factor, got {high_ff} and {low_ff}"
            )
        wavelength = 2 * np.pi / theta
        divided = np.where(wavelength > length / low_ff, theta / factor, theta)
        smooth = (length / wavelength - low_ff) / (high_ff - low_ff)
        smoothed = (1 - smooth) * divided / factor + smooth * divided
        medium = (wavelength >= length / high_ff) & (wavelength <= length / low_ff)
        return np.where(medium, smoothed, divided), 1.0

    # longrope
    n_pairs = head_dim // 2
    short = _factor_list(p["short_factor"], "short_factor", n_pairs)
    long_ = _factor_list(p["long_factor"], "long_factor", n_pairs)
    ext = long_ if (seq_len is not None and seq_len > length) else short
    inv_freq = theta / ext
    attention = p["attention_factor"]
    if attention is None:
        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(length))
    return inv_freq, val.positive_float(attention, "attention_factor")


DYNAMIC_CONVENTIONS = ("transformers", "yarn_paper")


def rotations_in_context(head_dim, *, base=10000.0, original_max_position_embeddings):
    """Full turns pair ``i`` makes over the training length: ``rho_i = L / lambda_i``.

    ``lambda_i = 2 pi / theta_i = 2 pi b^(2i/d)`` is the pair's wavelength in positions, so
    ``rho_i = L theta_i / (2 pi)``. Pairs with ``rho_i >= 1`` met every angle of their circle during
    training; a pair with ``rho_i < 1`` only met the arc ``[0, L theta_i)``, so positions past ``L``
    give it angles it never saw.

    Parameters
    ----------
    head_dim : int, even
        Rotary dimension ``d``.
    base : float
        ``b`` (``rope_theta``).
    original_max_position_embeddings : int
        ``L``, the pre-training context length.

    Returns
    -------
    array, shape ``(head_dim // 2,)``, float64, decreasing in ``i``.

    References
    ----------
    Peng et al. 2023 (YaRN), section 3.2, ``r(d) = L / lambda_d`` (the course's ``rho_i``);
    Hugging Face ``transformers/modeling_rope_utils.py`` ``_compute_yarn_parameters`` (``find_correction_dim``
    inverts this relation) and ``_compute_llama3_parameters`` (compares ``wavelen`` with ``L``).
    """
    length = val.positive_int(original_max_position_embeddings, "original_max_position_embeddings")
    return length * rope_inv_freq(head_dim, base=base) / (2 * np.pi)


def _ramp_bounds(alpha, beta):
    alpha = val.positive_float(alpha, "alpha")
    beta = val.positive_float(beta, "beta")
    if beta <= alpha:
        raise ValueError(f"beta must exceed alpha, got alpha={alpha!r} and beta={beta!r}")
    return alpha, beta


def yarn_paper_ramp(r, *, alpha=1.0, beta=32.0):
    """The YaRN paper's ramp ``gamma(rho)``: 0 below ``alpha``, 1 above ``beta``, linear between.

    ``gamma(rho) = clip((rho - alpha) / (beta - alpha), 0, 1)``, with ``rho`` the number of turns
    within ``L`` (the argument keeps the paper's name ``r``). It is applied as
    ``h(theta) = (1 - gamma) theta / s + gamma theta``: ``gamma = 1`` keeps a pair's frequency
    (many turns within ``L``), ``gamma = 0`` divides it by ``s`` as Position Interpolation does.
    Note the ramp is linear in ``rho``, which is exponential in the pair index; the reference code
    ramps linearly in the pair index instead (see :func:`rope_scaling` with ``"yarn"``).

    Parameters
    ----------
    r : array_like of non-negative reals, any shape
        Turns within the training length ``rho``, as from :func:`rotations_in_context`.
    alpha, beta : float, ``0 < alpha < beta``
        The paper recommends ``alpha = 1``, ``beta = 32`` for Llama models.

    Returns
    -------
    array of ``r``'s shape, float64, in ``[0, 1]``.

    References
    ----------
    Peng et al. 2023 (YaRN), section 3.2, definition of "NTK-by-parts" interpolation.
    """
    alpha, beta = _ramp_bounds(alpha, beta)
    r = val.numeric_array(r, "r").astype(np.float64)
    if np.any(r < 0):
        raise ValueError("r must be non-negative (a number of turns), got a negative value")
    return np.clip((r - alpha) / (beta - alpha), 0.0, 1.0)


def yarn_paper_inv_freq(head_dim, *, base=10000.0, factor, original_max_position_embeddings,
                        alpha=1.0, beta=32.0):
    """YaRN frequencies as the paper writes them: ``(1 - gamma_i) theta_i / s + gamma_i theta_i``.

    ``rho_i = L / lambda_i`` (:func:`rotations_in_context`) and ``gamma`` is :func:`yarn_paper_ramp`.
    Compare :func:`rope_scaling` ``("yarn", ...)``, which follows the reference code: there the
    blend weight is linear in the pair index ``i`` between the floor and ceiling of the indices
    where ``rho = beta`` and ``rho = alpha``. The two agree outside those indices and differ inside.

    Returns
    -------
    array, shape ``(head_dim // 2,)``, float64.

    References
    ----------
    Peng et al. 2023 (YaRN), section 3.2, ``h(theta_d)`` of "NTK-by-parts" interpolation.
    """
    factor = val.positive_float(factor, "factor", minimum=1.0)
    alpha, beta = _ramp_bounds(alpha, beta)
    theta = rope_inv_freq(head_dim, base=base)
    gamma = yarn_paper_ramp(
        rotations_in_context(head_dim, base=base,
                             original_max_position_embeddings=original_max_position_embeddings),
        alpha=alpha, beta=beta)
    return (1.0 - gamma) * theta / factor + gamma * theta


def dynamic_ntk_base(head_dim, *, base=10000.0, factor, seq_len, original_max_position_embeddings,
                     convention="transformers"):
    """The RoPE base dynamic NTK scaling uses at the current sequence length ``l``.

    * ``convention="transformers"`` (the code models run):
      ``b' = b (s l' / L - (s - 1))^(d / (d - 2))`` with ``l' = max(l, L)``.
    * ``convention="yarn_paper"`` (Peng et al. 2023, section 3.3): the NTK-aware base
      ``b s'^(d / (d - 2))`` with ``s' = max(1, l / L)``; the configured ``factor`` plays no part.

    Both give ``b`` for ``l <= L``; for ``l > L`` they agree only when ``factor == 1``.

    Parameters
    ----------
    head_dim : int, even, >= 4
    base : float
    factor : float >= 1
        The configured ``s``.
    seq_len : int
        The current sequence length ``l``.
    original_max_position_embeddings : int
        ``L`` (Hugging Face reads ``config.max_position_embeddings`` for this method).
    convention : {"transformers", "yarn_paper"}

    Returns
    -------
    float

    References
    ----------
    Hugging Face ``transformers/modeling_rope_utils.py`` ``_compute_dynamic_ntk_parameters``;
    Peng et al. 2023 (YaRN), section 3.3 "Dynamic Scaling".
    """
    head_dim = val.positive_int(head_dim, "head_dim", even=True)
    if head_dim < 4:
        raise ValueError(f"head_dim must be >= 4 (the exponent is d/(d-2)), got {head_dim}")
    base = val.positive_float(base, "base", minimum=1.0)
    factor = val.positive_float(factor, "factor", minimum=1.0)
    seq_len = val.positive_int(seq_len, "seq_len")
    length = val.positive_int(original_max_position_embeddings, "original_max_position_embeddings")
    convention = val.choice(convention, "convention", DYNAMIC_CONVENTIONS)
    exponent = head_dim / (head_dim - 2)
    if convention == "transformers":
        current = max(seq_len, length)
        return _scaled_base(base, factor * current / length - (factor - 1), exponent,
                            "factor and seq_len")
    return _scaled_base(base, max(1.0, seq_len / length), exponent, "seq_len")


def rope_score_features(distances, inv_freq):
    """The functions a RoPE attention score is built from: ``[cos(D theta_i) | sin(D theta_i)]``.

    With RoPE, the score of a query and a key ``D = m - n`` positions apart is
    ``sum_i a_i cos(D theta_i) + b_i sin(D theta_i)``, with coefficients ``a_i, b_i`` set by the
    query and key contents. Every such score is these features times a coefficient vector.

    Parameters
    ----------
    distances : array_like of reals, shape ``(...)``
        Relative positions ``D`` (fractional allowed).
    inv_freq : array_like, shape ``(n_pairs,)``
        The frequencies ``theta_i``.

    Returns
    -------
    array, shape ``(..., 2 * n_pairs)``: the cosines, then the sines.

    References
    ----------
    Chen et al. 2023 (Position Interpolation), section 2.3, eq. (3) and Figure 2.
    """
    distances = val.numeric_array(distances, "distances").astype(np.float64)
    inv_freq = val.numeric_array(inv_freq, "inv_freq").astype(np.float64)
    if inv_freq.ndim != 1 or inv_freq.size == 0:
        raise ValueError(f"inv_freq must be a non-empty 1-D array, got shape {inv_freq.shape}")
    angles = distances[..., None] * inv_freq
    return np.concatenate([np.cos(angles), np.sin(angles)], axis=-1)


def fit_rope_score(distances, targets, inv_freq, *, ridge=0.0):
    """Least-squares coefficients ``c``: ``rope_score_features(distances, inv_freq) @ c ~ targets``.

    Minimises ``|F c - y|^2 + ridge |c|^2`` through the singular value decomposition
    ``F = U S V^T``: ``c = V diag(S / (S^2 + ridge)) U^T y``. With ``ridge=0`` this is the
    minimum-norm least-squares solution (singular values below ``eps * max(F.shape) * S_max``
    dropped, as :func:`numpy.linalg.lstsq` does).

    Parameters
    ----------
    distances : 1-D array_like of reals, shape ``(n,)``
    targets : 1-D array_like of reals, shape ``(n,)``
    inv_freq : 1-D array_like, shape ``(n_pairs,)``
    ridge : float >= 0
        The regularisation weight.

    Returns
    -------
    array, shape ``(2 * n_pairs,)``.

    References
    ----------
    Chen et al. 2023 (Position Interpolation), Figure 2, which fits this form by least squares.
    """
    features = rope_score_features(distances, inv_freq)
    targets = val.numeric_array(targets, "targets").astype(np.float64)
    if features.ndim != 2 or targets.shape != features.shape[:1]:
        raise ValueError(
            f"distances and targets must be 1-D arrays of the same length, got shapes "
            f"{features.shape[:-1]} and {targets.shape}"
        )
    if isinstance(ridge, bool) or not isinstance(ridge, (int, float, np.floating, np.integer)):
        raise TypeError(f"ridge must be a non-negative real number, got {ridge!r}")
    ridge = float(ridge)
    if not np.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge must be a non-negative finite number, got {ridge!r}")
    u, sing, vt = np.linalg.svd(features, full_matrices=False)  # sing: the singular values S
    if ridge == 0.0:
        keep = sing > np.finfo(np.float64).eps * max(features.shape) * sing[0]
        scale = np.where(keep, 1.0 / np.where(keep, sing, 1.0), 0.0)
    else:
        scale = sing / (sing**2 + ridge)
    return vt.T @ (scale * (u.T @ targets))
