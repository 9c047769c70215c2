"""The notebook 02 checkers: NOT ATTEMPTED for the stub, PASS for the right answer, TRY AGAIN for
plausible wrong ones. Right answers are written here from the paper's formula."""

import numpy as np

from course_utils.exercises.sinusoidal import (
    check_concat_to_interleaved,
    check_shift_encoding,
    check_wavelengths,
)


def _stub(*_args):
    raise NotImplementedError


def test_wavelengths(capsys):
    assert check_wavelengths(...) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out
    i = np.arange(64)
    right = 2 * np.pi * 10000.0 ** (2 * i / 128)
    assert check_wavelengths(right) is True
    assert "PASS" in capsys.readouterr().out
    assert check_wavelengths(right[::-1]) is False
    assert "upside down" in capsys.readouterr().out
    assert check_wavelengths(right / (2 * np.pi)) is False
    assert "missing the 2*pi" in capsys.readouterr().out
    assert check_wavelengths(right[:10]) is False
    assert "expected shape" in capsys.readouterr().out


def _shift_right(pe_row, k, d_model):
    omega = 10000.0 ** (-2 * np.arange(d_model // 2) / d_model)
    s, c = pe_row[0::2], pe_row[1::2]
    out = np.empty_like(pe_row)
    # sin(a + b) = sin a cos b + cos a sin b; cos(a + b) = cos a cos b - sin a sin b
    out[0::2] = s * np.cos(k * omega) + c * np.sin(k * omega)
    out[1::2] = c * np.cos(k * omega) - s * np.sin(k * omega)
    return out


def test_shift_encoding(capsys):
    assert check_shift_encoding(_stub) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out
    assert check_shift_encoding(_shift_right) is True
    assert "PASS" in capsys.readouterr().out
    assert check_shift_encoding(lambda row, k, d: _shift_right(row, -k, d)) is False
    assert "wrong way" in capsys.readouterr().out
    assert check_shift_encoding(lambda row, k, d: row) is False
    assert "unchanged" in capsys.readouterr().out


def test_concat_to_interleaved(capsys):
    assert check_concat_to_interleaved(...) is False
    assert "NOT ATTEMPTED" in capsys.readouterr().out
    h = 4
    right = np.stack([np.arange(h), np.arange(h) + h], axis=1).ravel()  # [0, 4, 1, 5, ...]
    # Confirm on tables built from the formula.
    p = np.arange(20)[:, None]
    omega = 10000.0 ** (-2 * np.arange(h) / (2 * h))
    concat = np.concatenate([np.sin(p * omega), np.cos(p * omega)], axis=1)
    interleaved = np.empty_like(concat)
    interleaved[:, 0::2], interleaved[:, 1::2] = np.sin(p * omega), np.cos(p * omega)
    assert np.array_equal(concat[:, right], interleaved)
    assert check_concat_to_interleaved(right) is True
    assert "PASS" in capsys.readouterr().out
    inverse = np.concatenate([np.arange(0, 2 * h, 2), np.arange(1, 2 * h, 2)])
    assert check_concat_to_interleaved(inverse) is False
    assert "inverse" in capsys.readouterr().out
    assert check_concat_to_interleaved(np.arange(2 * h)) is False
    assert "TRY AGAIN" in capsys.readouterr().out
