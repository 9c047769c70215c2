"""The checkers of notebook 11's exercises: NOT ATTEMPTED for the stub, PASS for right answers
(also in float32 and numpy integers), TRY AGAIN with a hint for plausible wrong answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exercise_stubs import stub_function

from course_utils.exercises.modern import (
    check_attn_scales,
    check_deepseek_yarn_scales,
    check_nope_layer_indices,
    check_rotated_channels,
)


@pytest.mark.parametrize("checker", [check_nope_layer_indices, check_rotated_channels,
                                     check_attn_scales, check_deepseek_yarn_scales])
def test_stub_is_not_attempted(checker, capsys):
    assert checker(stub_function) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out


def _nope_by_loop(n, interval, *, dtype=np.int64, base=0):
    """Layer by layer, from the config line int((layer_idx + 1) % interval != 0)."""
    return np.array([layer + base for layer in range(n) if (layer + 1) % interval == 0], dtype=dtype)


def test_nope_layer_indices(capsys):
    assert check_nope_layer_indices(_nope_by_loop) is True
    assert "PASS" in capsys.readouterr().out
    assert check_nope_layer_indices(lambda n, k: _nope_by_loop(n, k, dtype=np.float32)) is True
    assert "PASS" in capsys.readouterr().out
    assert check_nope_layer_indices(lambda n, k: _nope_by_loop(n, k, dtype=np.int32)) is True
    assert "PASS" in capsys.readouterr().out
    assert check_nope_layer_indices(lambda n, k: _nope_by_loop(n, k, base=1)) is False
    assert "1-based" in capsys.readouterr().out
    assert check_nope_layer_indices(lambda n, k: np.arange(0, n, k)) is False
    assert "off by one" in capsys.readouterr().out
    keep = [lambda n, k: np.array([i for i in range(n) if (i + 1) % k])]
    assert check_nope_layer_indices(keep[0]) is False
    assert "KEEP RoPE" in capsys.readouterr().out
    llama4 = np.arange(3, 48, 4)  # right for Llama 4 only
    assert check_nope_layer_indices(lambda n, k: llama4) is False
    assert "TRY AGAIN" in capsys.readouterr().out
    assert check_nope_layer_indices(lambda n, k: np.arange(3, n, 4)) is False  # interval fixed at 4
    assert "TRY AGAIN" in capsys.readouterr().out


def test_rotated_channels(capsys):
    assert check_rotated_channels(lambda d, f: int(d * f)) is True
    assert "PASS" in capsys.readouterr().out
    assert check_rotated_channels(lambda d, f: np.int32(int(d * f))) is True
    assert "PASS" in capsys.readouterr().out
    assert check_rotated_channels(lambda d, f: np.float32(d * f)) is True
    assert "PASS" in capsys.readouterr().out
    assert check_rotated_channels(lambda d, f: int(d * f) // 2) is False
    assert "PAIRS" in capsys.readouterr().out
    assert check_rotated_channels(lambda d, f: d - int(d * f)) is False
    assert "unrotated" in capsys.readouterr().out
    assert check_rotated_channels(lambda d, f: d) is False
    assert "not every channel" in capsys.readouterr().out
    assert check_rotated_channels(lambda d, f: 24) is False  # GPT-NeoX's answer, typed in
    assert "TRY AGAIN" in capsys.readouterr().out
    assert check_rotated_channels(lambda d, f: [int(d * f)]) is False
    assert "one number" in capsys.readouterr().out


def _scales_by_loop(positions, floor_scale, attn_scale, *, dtype=np.float64, shift=1):
    """Position by position, as Llama4TextAttention.forward writes it."""
    out = [1.0 + attn_scale * math.log1p(math.floor((int(m) + shift) / floor_scale))
           for m in positions]
    return np.array(out, dtype=dtype)


def test_attn_scales(capsys):
    assert check_attn_scales(_scales_by_loop) is True
    assert "PASS" in capsys.readouterr().out
    assert check_attn_scales(lambda m, f, a: _scales_by_loop(m, f, a, dtype=np.float32)) is True
    assert "PASS" in capsys.readouterr().out
    assert check_attn_scales(lambda m, f, a: _scales_by_loop(m, f, a, shift=0)) is False
    assert "off by one" in capsys.readouterr().out
    assert check_attn_scales(lambda m, f, a: 1 + a * np.log1p((m + 1.0) / f)) is False
    assert "rounds" in capsys.readouterr().out
    assert check_attn_scales(lambda m, f, a: _scales_by_loop(m, f, a) ** 2) is False
    assert "square" in capsys.readouterr().out
    assert check_attn_scales(lambda m, f, a: _scales_by_loop(m, 8192, 0.1)) is False  # Llama 4's only
    assert "TRY AGAIN" in capsys.readouterr().out
    # float64 answers are held to float64 precision: 1e-6 off is wrong
    assert check_attn_scales(lambda m, f, a: _scales_by_loop(m, f, a) + 1e-6) is False
    assert "TRY AGAIN" in capsys.readouterr().out


def _mscale(s, m=1.0):
    return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0


def _yarn_scales(factor, mscale, mscale_all_dim, qk_head_dim):
    """Written from _compute_yarn_parameters and yarn_apply_mscale, with plain floats."""
    if mscale and mscale_all_dim:
        cos_sin = _mscale(factor, mscale) / _mscale(factor, mscale_all_dim)
    else:
        cos_sin = _mscale(factor)
    scale = qk_head_dim ** -0.5
    if mscale_all_dim:
        scale *= _mscale(factor, mscale_all_dim) ** 2
    return cos_sin, scale


def test_deepseek_yarn_scales(capsys, torch):
    assert check_deepseek_yarn_scales(_yarn_scales) is True
    assert "PASS" in capsys.readouterr().out
    assert check_deepseek_yarn_scales(lambda *a: np.array(_yarn_scales(*a), np.float32)) is True
    assert "PASS" in capsys.readouterr().out
    as_torch = lambda *a: torch.tensor(_yarn_scales(*a), dtype=torch.float32)  # noqa: E731
    assert check_deepseek_yarn_scales(as_torch) is True
    assert "PASS" in capsys.readouterr().out
    wrong = {
        "ratio": lambda s, m, ma, w: (_mscale(s), _yarn_scales(s, m, ma, w)[1]),
        "twice": lambda s, m, ma, w: (_yarn_scales(s, m, ma, w)[0],
                                      w ** -0.5 * (_mscale(s, ma) if ma else 1.0)),
        "plain": lambda s, m, ma, w: (_yarn_scales(s, m, ma, w)[0], w ** -0.5),
        "reads mscale_all_dim": lambda s, m, ma, w: (_yarn_scales(s, m, ma, w)[0],
                                                     w ** -0.5 * _mscale(s, m) ** 2),
        "square root": lambda s, m, ma, w: (_yarn_scales(s, m, ma, w)[0],
                                            _yarn_scales(s, m, ma, w)[1] / w ** 0.5),
        "order": lambda *a: _yarn_scales(*a)[::-1],
        "ignores mscale": lambda s, m, ma, w: (_mscale(s, m or 1.0), _yarn_scales(s, m, ma, w)[1]),
    }
    for needle, answer in wrong.items():
        assert check_deepseek_yarn_scales(answer) is False
        assert needle in capsys.readouterr().out
    # DeepSeek-V3's pair typed in for every configuration
    assert check_deepseek_yarn_scales(lambda *a: (1.0, 192 ** -0.5 * _mscale(40.0) ** 2)) is False
    assert "TRY AGAIN" in capsys.readouterr().out
    # float64 answers are held to float64 precision
    assert check_deepseek_yarn_scales(
        lambda *a: np.array(_yarn_scales(*a)) * (1 + 1e-6)) is False
    assert "TRY AGAIN" in capsys.readouterr().out
    assert check_deepseek_yarn_scales(lambda *a: _yarn_scales(*a)[0]) is False
    assert "shape" in capsys.readouterr().out
