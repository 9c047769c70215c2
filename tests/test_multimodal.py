"""course_utils.multimodal against brute-force loops, closed forms and typed-in values, and one
test per input error."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils.multimodal import (
    apply_mrope,
    apply_rope_2d,
    axial_rope_frequencies,
    bicubic_weights,
    mixed_rope_frequencies,
    mrope_pair_axes,
    mrope_position_ids,
    patch_grid_positions,
    resize_pos_table,
    resize_weights,
    sincos_2d_table,
)
from course_utils.rope import apply_rope


def test_patch_grid_positions_row_major():
    rows, cols = patch_grid_positions(2, 3)
    assert rows.tolist() == [0, 0, 0, 1, 1, 1] and cols.tolist() == [0, 1, 2, 0, 1, 2]


def test_sincos_table_by_loop():
    height, width, dim, base = 3, 4, 8, 10000.0
    table = sincos_2d_table(height, width, dim, base=base)
    for p in range(height * width):
        h, w = divmod(p, width)
        theta = base ** (-2 * np.arange(dim // 4) / (dim // 2))
        row = np.concatenate([np.sin(h * theta), np.cos(h * theta), np.sin(w * theta), np.cos(w * theta)])
        np.testing.assert_allclose(table[p], row, atol=1e-15)
    swapped = sincos_2d_table(height, width, dim, base=base, first_axis="col")
    np.testing.assert_array_equal(swapped, np.roll(table, dim // 2, axis=1))


def test_sincos_typed_in_value():
    # dim 8: theta = (1, 0.01); patch (1, 2): [sin 1, sin .01, cos 1, cos .01, sin 2, sin .02, cos 2, cos .02]
    row = sincos_2d_table(2, 3, 8)[5]
    np.testing.assert_allclose(row, [0.841471, 0.0099998, 0.540302, 0.99995, 0.909297, 0.0199987,
                                     -0.416147, 0.9998], atol=1e-6)


def test_bicubic_weights_rows_sum_to_one_and_identity():
    for n_in, n_out in [(14, 24), (24, 14), (5, 5), (1, 3), (3, 1)]:
        np.testing.assert_allclose(bicubic_weights(n_in, n_out).sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(bicubic_weights(7, 7), np.eye(7), atol=1e-15)


def test_bicubic_weights_typed_in():
    # 2 -> 4: s_0 = -0.25 (t = 0.75), taps -2..1 clamped to 0, 0, 0, 1; Keys a = -0.75
    k = lambda t: (1.25 * t - 2.25) * t * t + 1 if t <= 1 else ((-0.75 * t + 3.75) * t - 6) * t + 3  # noqa: E731
    w = [k(1.75), k(0.75), k(0.25), k(1.25)]
    np.testing.assert_allclose(bicubic_weights(2, 4)[0], [w[0] + w[1] + w[2], w[3]], atol=1e-15)


def test_only_a_minus_half_reproduces_a_linear_ramp():
    # Keys (1981): the cubic kernel reproduces straight lines only with a = -1/2; torch uses -3/4.
    ramp = np.arange(14.0)
    src = (np.arange(24) + 0.5) * 14 / 24 - 0.5
    inner = (src >= 1) & (src <= 12)
    np.testing.assert_allclose((bicubic_weights(14, 24, a=-0.5) @ ramp)[inner], src[inner], atol=1e-12)
    assert np.abs(bicubic_weights(14, 24) @ ramp - src)[inner].max() > 0.01


def test_resize_keeps_class_token_and_identity():
    table = np.random.default_rng(0).normal(size=(1 + 16, 5))
    np.testing.assert_allclose(resize_pos_table(table, (4, 4)), table, atol=1e-14)
    out = resize_pos_table(table, (6, 3))
    assert out.shape == (1 + 18, 5)
    np.testing.assert_array_equal(out[0], table[0])
    no_prefix = resize_pos_table(table[1:], (6, 3), num_prefix_tokens=0)
    np.testing.assert_allclose(no_prefix, out[1:], atol=1e-15)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(table=np.zeros((1 + 15, 4)), new_grid=(4, 4)), ValueError, "not a square grid"),
    (dict(table=np.zeros((1 + 12, 4)), new_grid=(4, 4), old_grid=(4, 4)), ValueError, "old_grid"),
    (dict(table=np.zeros((1 + 16, 4)), new_grid=(-2, 4)), ValueError, "new_grid[0]"),
    (dict(table=np.zeros((1 + 16, 4)), new_grid=4), TypeError, "new_grid"),
    (dict(table=np.zeros(17), new_grid=(4, 4)), ValueError, "table"),
])
def test_resize_errors(kwargs, error, match):
    with pytest.raises(error, match=match.replace("[", r"\[").replace("]", r"\]")):
        resize_pos_table(**kwargs)


def test_sincos_errors():
    with pytest.raises(ValueError, match="dim"):
        sincos_2d_table(2, 2, 6)
    with pytest.raises(ValueError, match="height"):
        sincos_2d_table(-1, 2, 8)
    with pytest.raises(ValueError, match="first_axis"):
        sincos_2d_table(2, 2, 8, first_axis="x")


def test_axial_rope_by_rotation_matrices():
    head_dim, rows, cols = 8, np.array([0, 2, 3]), np.array([1, 0, 4])
    x = np.random.default_rng(1).normal(size=(3, head_dim))
    freq_row, freq_col = axial_rope_frequencies(head_dim, base=100.0)
    out = apply_rope_2d(x, rows, cols, freq_row, freq_col, layout="interleaved")
    theta = 100.0 ** (-4 * np.arange(2) / head_dim)
    for p in range(3):
        angles = np.concatenate([rows[p] * theta, cols[p] * theta])
        z = (x[p, 0::2] + 1j * x[p, 1::2]) * np.exp(1j * angles)    # rope-vit's complex form
        np.testing.assert_allclose(out[p, 0::2], z.real, atol=1e-14)
        np.testing.assert_allclose(out[p, 1::2], z.imag, atol=1e-14)


def test_mixed_at_angle_zero_is_axial_column_first():
    for got, want in zip(mixed_rope_frequencies(16, 0.0, base=10.0),
                         axial_rope_frequencies(16, base=10.0, first_axis="col"), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-16)


def test_mrope_pair_axes_typed_in():
    assert mrope_pair_axes(16, [2, 3, 3]).tolist() == [0, 0, 1, 1, 1, 2, 2, 2]
    assert mrope_pair_axes(16, [3, 3, 2], interleaved=True).tolist() == [0, 1, 2, 0, 1, 2, 0, 1]
    axes = mrope_pair_axes(128, [24, 20, 20], interleaved=True)
    assert np.bincount(axes).tolist() == [24, 20, 20] and axes[60:].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("section, match", [([16, 24, 23], "sum to head_dim/2 = 64"),
                                            ([16, 24], "three integers"),
                                            ([-8, 36, 36], r"mrope_section\[0\]")])
def test_mrope_section_errors(section, match):
    with pytest.raises((ValueError, TypeError), match=match):
        mrope_pair_axes(128, section)


def test_mrope_interleaved_error():
    with pytest.raises(ValueError, match="interleaved"):
        mrope_pair_axes(128, [16, 24, 24], interleaved=True)


def test_mrope_on_text_is_plain_rope():
    x = np.random.default_rng(2).normal(size=(2, 7, 16))
    ids = np.broadcast_to(np.arange(7), (3, 7))
    for interleaved, section in ((False, [2, 3, 3]), (True, [3, 3, 2])):
        np.testing.assert_allclose(apply_mrope(x, ids, section, interleaved=interleaved),
                                   apply_rope(x, np.arange(7), layout="half"), atol=1e-14)


def test_mrope_by_loop():
    head_dim, section = 8, [1, 2, 1]
    x = np.random.default_rng(3).normal(size=(4, head_dim))
    ids = np.array([[0, 1, 1, 5], [0, 1, 2, 5], [0, 3, 1, 5]])
    out = apply_mrope(x, ids, section)
    theta = 10000.0 ** (-2 * np.arange(4) / head_dim)
    axis = [0, 1, 1, 2]
    for p in range(4):
        for i in range(4):
            angle = ids[axis[i], p] * theta[i]
            a, b = x[p, i], x[p, i + 4]
            assert out[p, i] == pytest.approx(a * np.cos(angle) - b * np.sin(angle), abs=1e-14)
            assert out[p, i + 4] == pytest.approx(b * np.cos(angle) + a * np.sin(angle), abs=1e-14)


def test_position_ids_typed_in():
    # 2 text, a 4x4-patch image (2x2 tokens), 2 text: text resumes at 2 + max(2, 2) = 4
    ids = mrope_position_ids([0, 0, 1, 1, 1, 1, 0, 0], image_grid_thw=[[1, 4, 4]])
    assert ids.tolist() == [[0, 1, 2, 2, 2, 2, 4, 5], [0, 1, 2, 2, 3, 3, 4, 5], [0, 1, 2, 3, 2, 3, 4, 5]]


def test_position_ids_two_rules_differ_only_for_long_videos():
    types = [0] * 2 + [2] * 8 + [0]
    grid = [[8, 2, 2]]                          # 8 temporal patches of 1x1 tokens each
    new = mrope_position_ids(types, video_grid_thw=grid)
    old = mrope_position_ids(types, video_grid_thw=grid, text_resumes_at="largest_id")
    assert new[:, -1].tolist() == [3, 3, 3] and old[:, -1].tolist() == [10, 10, 10]
    image = [0] * 2 + [1] * 6 + [0]
    np.testing.assert_array_equal(
        mrope_position_ids(image, image_grid_thw=[[1, 4, 6]]),
        mrope_position_ids(image, image_grid_thw=[[1, 4, 6]], text_resumes_at="largest_id"))


def test_position_ids_time_interval():
    ids = mrope_position_ids([2] * 3, video_grid_thw=[[3, 2, 2]], video_time_interval=[2.5])
    assert ids[0].tolist() == [0, 2, 5]


@pytest.mark.parametrize("kwargs, match", [
    (dict(token_types=[0, 1, 1, 1, 0], image_grid_thw=[[1, 4, 4]]), r"image_grid_thw\[0\]"),
    (dict(token_types=[0, 1, 1, 0], image_grid_thw=None), "image_grid_thw has 0 grid"),
    (dict(token_types=[0, 1, 0], image_grid_thw=[[1, 3, 2]]), "spatial_merge_size"),
    (dict(token_types=[0, 1, 0], image_grid_thw=[[1, -2, 2]]), "positive sizes"),
    (dict(token_types=[0, 3, 0]), "0 \\(text\\), 1 \\(image\\) or 2"),
    (dict(token_types=[2, 2, 2, 2], video_grid_thw=[[1, 4, 4]], video_time_interval=[1, 2]),
     "video_time_interval"),
    (dict(token_types=[0, 0], text_resumes_at="next"), "text_resumes_at"),
])
def test_position_ids_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mrope_position_ids(**kwargs)


@pytest.mark.parametrize("method", ["bicubic", "bicubic_antialias", "linear_corners"])
@pytest.mark.parametrize("n_in, n_out", [(14, 24), (14, 7), (5, 3), (3, 11), (6, 6)])
def test_resize_weights_sum_to_one(method, n_in, n_out):
    weights = resize_weights(n_in, n_out, method=method)
    assert weights.shape == (n_out, n_in)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-13)


def test_linear_corners_keeps_the_corners_and_interpolates_linearly():
    values = np.random.default_rng(12).normal(size=14)
    src = np.arange(24) * 13 / 23
    np.testing.assert_allclose(resize_weights(14, 24, method="linear_corners") @ values,
                               np.interp(src, np.arange(14), values), atol=1e-14)


def test_antialias_shrink_reads_every_input_row():
    # shrinking 14 -> 7 widens the kernel to 4 taps each side: no input row is skipped
    weights = resize_weights(14, 7, method="bicubic_antialias")
    assert (np.abs(weights).sum(axis=0) > 0).all()
    assert (np.count_nonzero(resize_weights(14, 7, method="bicubic"), axis=1) <= 4).all()


def test_resize_method_is_validated():
    with pytest.raises(ValueError, match="method must be one of"):
        resize_weights(14, 24, method="nearest")
    with pytest.raises(ValueError, match="method must be one of"):
        resize_pos_table(np.zeros((197, 4)), (24, 24), method="area")
