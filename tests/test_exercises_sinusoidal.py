"""The notebook 02 checkers: NOT ATTEMPTED for the stub, PASS for the right answer (also in float32
and as a torch tensor), TRY AGAIN with a hint for plausible wrong answers. Right answers are
written here from the paper's formula (Vaswani et al. 2017, section 3.5), with explicit loops."""

import math

import numpy as np
import pytest
from exercise_stubs import printed, stub_function

from course_utils.exercises.sinusoidal import (
    check_concat_to_interleaved,
    check_shift_encoding,
    check_wavelengths,
)


def _wavelengths(d):
    return np.array([2 * math.pi * 10000.0 ** (2 * i / d) for i in range(d // 2)])


def test_wavelengths_stub_and_right(capsys):
    assert check_wavelengths(...) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    right = _wavelengths(128)
    assert check_wavelengths(right) is True
    assert "PASS" in printed(capsys)
    assert check_wavelengths(right.astype(np.float32)) is True
    theta32 = np.float32(10000.0) ** (-2 * np.arange(64, dtype=np.float32) / np.float32(128))
    assert check_wavelengths(np.float32(2 * np.pi) / theta32) is True
    assert check_wavelengths(_wavelengths(16), d_model=16) is True


def test_wavelengths_torch_float32(torch, capsys):
    assert check_wavelengths(torch.tensor(_wavelengths(128), dtype=torch.float32)) is True
    assert "PASS" in printed(capsys)


@pytest.mark.parametrize("wrong, hint", [
    (_wavelengths(128)[::-1], "upside down"),
    (_wavelengths(128) / (2 * np.pi), "missing the 2*pi"),
    (2 * np.pi / _wavelengths(128), "angular frequencies"),
    (4 * np.pi**2 / _wavelengths(128), "not a length"),
    (2 * np.pi / np.exp(-np.arange(64) * np.log(1e4) / 63), "tensor2tensor"),
    (2 * np.pi * 10000.0 ** (2 * (np.arange(64) + 1) / 128), "off by one"),
    (2 * np.pi * 10000.0 ** (np.arange(64) / 128), "exponent is 2i/d"),
    (2 * np.pi * 10000.0 ** (2 * np.arange(64) / 64), "not the number of pairs"),
    (_wavelengths(128)[:10], "must have shape"),
    (np.repeat(_wavelengths(128), 2), "must have shape"),
    (_wavelengths(128) * (1 + 1e-4), "values differ"),
    (_wavelengths(128).astype(np.float32) * np.float32(1 + 1e-4), "values differ"),
])
def test_wavelengths_wrong(wrong, hint, capsys):
    assert check_wavelengths(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def _shift_right(x, r, d_model):
    """Rotate each pair (x[2i], x[2i+1]) by r theta_i, one pair at a time."""
    out = np.empty(d_model)
    for i in range(d_model // 2):
        a = r * 10000.0 ** (-2 * i / d_model)
        s, c = x[2 * i], x[2 * i + 1]
        out[2 * i] = s * math.cos(a) + c * math.sin(a)      # sin(alpha + beta)
        out[2 * i + 1] = c * math.cos(a) - s * math.sin(a)  # cos(alpha + beta)
    return out


def _pe(p, d_model):
    out = np.empty(d_model)
    for i in range(d_model // 2):
        out[2 * i] = math.sin(p * 10000.0 ** (-2 * i / d_model))
        out[2 * i + 1] = math.cos(p * 10000.0 ** (-2 * i / d_model))
    return out


def test_shift_right_answer_moves_encodings():
    for p, r, d in ((0, 1, 16), (100, -7, 8), (1234, 500, 32)):
        np.testing.assert_allclose(_shift_right(_pe(p, d), r, d), _pe(p + r, d), atol=1e-9)


def test_shift_encoding_stub_and_right(capsys):
    assert check_shift_encoding(stub_function) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    assert check_shift_encoding(_shift_right) is True
    assert "PASS" in printed(capsys)
    assert check_shift_encoding(lambda x, r, d: _shift_right(x, r, d).astype(np.float32)) is True


def test_shift_encoding_float32_throughout(capsys):
    def in_float32(x, r, d):
        x = x.astype(np.float32)
        a = np.float32(r) * np.float32(10000.0) ** (-2 * np.arange(d // 2, dtype=np.float32) / d)
        s, c = x[0::2], x[1::2]
        out = np.empty_like(x)
        out[0::2] = s * np.cos(a) + c * np.sin(a)
        out[1::2] = c * np.cos(a) - s * np.sin(a)
        return out

    assert check_shift_encoding(in_float32) is True
    assert "PASS" in printed(capsys)


def test_shift_encoding_torch(torch, capsys):
    def in_torch(x, r, d):
        t = torch.tensor(x, dtype=torch.float32)
        a = r * 10000.0 ** (-2 * torch.arange(d // 2, dtype=torch.float32) / d)
        out = torch.empty_like(t)
        out[0::2] = t[0::2] * torch.cos(a) + t[1::2] * torch.sin(a)
        out[1::2] = t[1::2] * torch.cos(a) - t[0::2] * torch.sin(a)
        return out

    assert check_shift_encoding(in_torch) is True
    assert "PASS" in printed(capsys)


def _reencode(x, r, d):
    """Recover p from the slowest pair and encode p + r: right only for real encodings."""
    slowest = 10000.0 ** (-2 * (d // 2 - 1) / d)
    p = math.atan2(x[-2], x[-1]) / slowest
    return _pe(p + r, d)


def _half_pairs(x, r, d):
    h = d // 2
    perm = np.stack([np.arange(h), h + np.arange(h)], axis=1).ravel()  # treat (i, i + d/2) as pairs
    out = np.empty(d)
    out[perm] = _shift_right(x[perm], r, d)
    return out


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, r, d: _shift_right(x, -r, d), "wrong way"),
    (lambda x, r, d: x, "unchanged"),
    (lambda x, r, d: x + _pe(r, d), "do not add"),
    (_half_pairs, "not i and i + d/2"),
    (lambda x, r, d: _shift_right(x, r, 16) if d == 16 else _shift_right(x[:d], r, d) * 0 + x,
     "values differ"),
    (_reencode, "values differ"),
    (lambda x, r, d: _shift_right(x, r + 1, d), "values differ"),
    (lambda x, r, d: _shift_right(x, r, d)[::-1], "values differ"),
])
def test_shift_encoding_wrong(wrong, hint, capsys):
    assert check_shift_encoding(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out


def test_shift_encoding_hard_coded_width_fails(capsys):
    def width_16(x, r, d):
        return _shift_right(x, r, 16)  # ignores d_model: raises for the other widths

    assert check_shift_encoding(width_16) is False
    assert "TRY AGAIN" in printed(capsys)


def test_shift_encoding_same_angle_and_t2t_spacing(capsys):
    def same_angle(x, r, d):
        out = np.empty(d)
        s, c = x[0::2], x[1::2]
        out[0::2], out[1::2] = s * np.cos(r) + c * np.sin(r), c * np.cos(r) - s * np.sin(r)
        return out

    def t2t(x, r, d):
        theta = np.exp(-np.arange(d // 2) * np.log(1e4) / (d // 2 - 1))
        out = np.empty(d)
        s, c = x[0::2], x[1::2]
        a = r * theta
        out[0::2], out[1::2] = s * np.cos(a) + c * np.sin(a), c * np.cos(a) - s * np.sin(a)
        return out

    assert check_shift_encoding(same_angle) is False
    assert "its own angle" in printed(capsys)
    assert check_shift_encoding(t2t) is False
    assert "tensor2tensor" in printed(capsys)


def _right_perm(d):
    return np.array([c for i in range(d // 2) for c in (i, d // 2 + i)])  # [0, 4, 1, 5, ...]


def test_concat_to_interleaved_stub_and_right(capsys):
    assert check_concat_to_interleaved(...) is False
    assert "NOT ATTEMPTED" in printed(capsys)
    right = _right_perm(8)
    # Confirm on tables built from the formula.
    p = np.arange(20)[:, None]
    theta = 10000.0 ** (-2 * np.arange(4) / 8)
    concat = np.concatenate([np.sin(p * theta), np.cos(p * theta)], axis=1)
    interleaved = np.empty_like(concat)
    interleaved[:, 0::2], interleaved[:, 1::2] = np.sin(p * theta), np.cos(p * theta)
    assert np.array_equal(concat[:, right], interleaved)
    assert check_concat_to_interleaved(right) is True
    assert "PASS" in printed(capsys)
    assert check_concat_to_interleaved(right.tolist()) is True
    assert check_concat_to_interleaved(_right_perm(12), d_model=12) is True


@pytest.mark.parametrize("wrong, hint", [
    (np.concatenate([np.arange(0, 8, 2), np.arange(1, 8, 2)]), "inverse"),
    (np.arange(8), "do not share a column order"),
    (np.array([4, 5, 6, 7, 0, 1, 2, 3]), "swaps the halves"),
    (_right_perm(8) + 1, "off by one"),
    (np.array([4, 0, 5, 1, 6, 2, 7, 3]), "values differ"),
    (_right_perm(8)[:6], "expected shape"),
])
def test_concat_to_interleaved_wrong(wrong, hint, capsys):
    assert check_concat_to_interleaved(wrong) is False
    out = printed(capsys)
    assert out.startswith("TRY AGAIN") and hint in out
