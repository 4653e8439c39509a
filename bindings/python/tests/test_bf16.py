"""bfloat16 convolutions on the CPU (AVX-512), through NumPy arrays of
ml_dtypes.bfloat16 (the binding's bf16 view).

The reference sums in float64 the same bf16 values; the library sums in
float32 and rounds each output to bf16 once, so per element
|got - want| <= 1e-5 * sqrt(L) * abs_sum + 4 * 2^-8 * |want|.
Skips where the CPU engine does not compute bf16 (no AVX-512).
"""

import numpy as np
import pytest

import libconv
import reference as ref

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)


def bf16_available():
    try:
        one = np.ones((1, 1, 1), BF16)
        libconv.Conv(1).forward(one, one)
        return True
    except libconv.UnsupportedError:
        return False


pytestmark = pytest.mark.skipif(not bf16_available(), reason="this CPU does not compute bf16")


def rounded(rng, shape):
    """Uniform [-1, 1) values rounded to bf16: the array and its float64 values."""
    a = rng.uniform(-1, 1, shape).astype(BF16)
    return a, a.astype(np.float64)


def assert_within(got, want, abs_sum, length):
    got = np.asarray(got).astype(np.float64)
    bound = 1e-5 * np.sqrt(length) * abs_sum + 4 * 2.0 ** -8 * np.abs(want) + 1e-30
    assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) - bound)


BRGEMM = {"forward": "brgemm_forward", "backward_data": "brgemm_backward_data",
          "backward_filter": "brgemm_backward_filter"}


def tiles_available():
    """Whether the brgemm solvers compute bf16 here: AMX tiles, or CONV_CPU_AMX=emulate
    (ctest runs this file again so)."""
    one = np.ones((1, 1, 3), BF16)
    try:
        libconv.Conv(1, algorithm={"forward": "brgemm_forward"}).forward(one, one)
        return True
    except libconv.UnsupportedError as e:
        assert "AMX" in str(e) or "AVX-512" in str(e), str(e)
        return False


@pytest.mark.parametrize("solvers", ["auto", "brgemm"])
@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
@pytest.mark.parametrize("groups", [1, 2])
def test_passes(layout, groups, solvers):
    """Every pass against the reference: the library's choice, and each pass forced to its
    brgemm solver on AMX tiles (skipped where there are none)."""
    if solvers == "brgemm" and not tiles_available():
        pytest.skip("no AMX tiles in this process")
    rng = np.random.default_rng(7 + groups)
    n, c, k, size, kern = 2, 6, 8, (9, 7), (3, 2)
    stride, dilation, pb, pe = [2, 1], [1, 2], [1, 0], [0, 1]
    conv = libconv.Conv(2, stride=stride, dilation=dilation, groups=groups,
                        padding=list(zip(pb, pe)), activation="relu",
                        algorithm=BRGEMM if solvers == "brgemm" else None)
    x, x64 = rounded(rng, (n, c) + size)
    w, w64 = rounded(rng, (k, c // groups) + kern)
    b, b64 = rounded(rng, (k,))
    xl, wl = ref.as_layout(x, layout), ref.as_layout(w, layout)

    y = conv.forward(xl, wl, b)
    assert np.asarray(y).dtype == BF16
    want = ref.forward(x64, w64, b64, stride, dilation, pb, pe, groups, relu=True)
    mag = ref.forward(np.abs(x64), np.abs(w64), np.abs(b64), stride, dilation, pb, pe, groups)
    assert_within(y, want, mag, c // groups * 6)

    dy, dy64 = rounded(rng, want.shape)
    dyl = ref.as_layout(dy, layout)
    dx = conv.backward_data(wl, dyl, x.shape)
    want = ref.backward_data(w64, dy64, x.shape, stride, dilation, pb, pe, groups)
    mag = ref.backward_data(np.abs(w64), np.abs(dy64), x.shape, stride, dilation, pb, pe, groups)
    assert_within(dx, want, mag, k // groups * 6)

    dw, db = conv.backward_filter(xl, dyl, w.shape, bias=True)
    want = ref.backward_filter(x64, dy64, w.shape, stride, dilation, pb, pe, groups)[0]
    mag = ref.backward_filter(np.abs(x64), np.abs(dy64), w.shape, stride, dilation, pb, pe,
                              groups)[0]
    assert_within(dw, want, mag, n * dy.shape[2] * dy.shape[3])
    sums = dy64.sum(axis=(0, 2, 3))
    assert_within(db, sums, np.abs(dy64).sum(axis=(0, 2, 3)), dy[0, 0].size * n)


def test_refused_where_float16():
    """float16 stays storage only on the CPU: bf16 is not a general half path."""
    h = np.ones((1, 1, 3), np.float16)
    with pytest.raises(libconv.UnsupportedError, match="float16 tensors are storage only"):
        libconv.Conv(1).forward(h, h)
