"""PyTorch's conventions in libconv.conv*: batchless input, TypeError/ValueError
for misplaced or misspelled arguments, messages that show an array's shape and
dtype (never its contents), complete lists of accepted values, and type hints
that let mypy --strict catch a misspelled keyword."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import libconv

FUNCS = [(libconv.conv1d, 1, False), (libconv.conv2d, 2, False), (libconv.conv3d, 3, False),
         (libconv.conv_transpose1d, 1, True), (libconv.conv_transpose2d, 2, True),
         (libconv.conv_transpose3d, 3, True)]


def _problem(rng, nd, transposed):
    x = rng.standard_normal((4,) + (5,) * nd).astype(np.float32)              # C, spatial
    w_shape = ((4, 3) if transposed else (3, 4)) + (3,) * nd
    w = rng.standard_normal(w_shape).astype(np.float32)
    return x, w, rng.standard_normal(3).astype(np.float32)


@pytest.mark.parametrize("f,nd,transposed", FUNCS, ids=[f.__name__ for f, _, _ in FUNCS])
def test_batchless_input_gives_a_batchless_result(rng, f, nd, transposed):
    x, w, b = _problem(rng, nd, transposed)
    kw = dict(stride=2, padding=1) if not transposed else dict(stride=2, padding=1, output_padding=1)
    want = f(x[None], w, b, **kw)[0]
    got = f(x, w, b, **kw)
    assert got.shape == want.shape and got.shape[0] == 3
    np.testing.assert_array_equal(got, want)
    out = np.full_like(want, np.nan)
    assert f(x, w, b, out=out, **kw) is out
    np.testing.assert_array_equal(out, want)


def test_batchless_channels_last_and_generic_conv(rng):
    x, w, b = _problem(rng, 2, False)
    hwc = np.ascontiguousarray(x.transpose(1, 2, 0))
    w_cl = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(libconv.conv2d(hwc.transpose(2, 0, 1), w_cl, b, padding="same"),
                               libconv.conv2d(x, w, b, padding="same"), rtol=1e-5, atol=1e-5)
    # conv() reads the spatial dims from the filter, so batchless works there too.
    np.testing.assert_array_equal(libconv.conv(x, w, b), libconv.conv2d(x, w, b))


def test_a_libconv_tensor_is_never_batchless(rng):
    x, w, _ = _problem(rng, 1, False)
    with pytest.raises(libconv.ShapeMismatchError, match="conv2d takes x as .* a Tensor of shape"):
        libconv.conv2d(libconv.Tensor(x[None]), np.zeros((3, 4, 3, 3), np.float32))


def test_misspelled_keywords_are_type_errors(rng):
    x, w, _ = _problem(rng, 2, False)
    for f, kw in [(libconv.conv2d, {"strde": 2}), (libconv.conv_transpose2d, {"paddng": 1}),
                  (libconv.conv, {"group": 1})]:
        with pytest.raises(TypeError, match="unexpected keyword argument '%s'" % next(iter(kw))):
            f(x, w, **kw)


def test_misplaced_arguments_name_shape_and_dtype_not_contents(rng):
    x = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)
    w = rng.standard_normal((3, 4, 3, 3)).astype(np.float32)
    b = np.zeros(3, np.float32)
    cases = [
        # (call, exception, message)
        (lambda: libconv.conv2d(x, w, None, x), TypeError,
         "stride must be an int or 2 ints, not ndarray of shape (2, 4, 9, 9) and dtype float32"),
        (lambda: libconv.conv2d(x, w, b, 1, w), TypeError,
         "padding must be an int, one int per spatial dim, one (begin, end) pair per spatial dim, "
         "or one of 'same', 'valid', 'same_upper', 'same_lower', 'notset', not ndarray of shape "
         "(3, 4, 3, 3) and dtype float32"),
        (lambda: libconv.conv2d(x, w, None, "same"), TypeError,
         "stride must be an int or 2 ints, not 'same'"),
        (lambda: libconv.conv2d(x, w, b, 1, 1, 1, b), TypeError,
         "groups must be an int, not ndarray of shape (3,) and dtype float32"),
        (lambda: libconv.conv2d(x, w, 1), TypeError, "bias must be an array of K elements"),
        (lambda: libconv.conv2d(x, w, activation=x), TypeError,
         "activation must be one of 'none', 'relu', not ndarray of shape (2, 4, 9, 9)"),
        (lambda: libconv.conv2d(x, w, algorithm=2.5), TypeError, "algorithm must be one of 'auto'"),
        (lambda: libconv.conv2d(x, w, stride=(1, 2, 3)), ValueError, "stride has 3 values for 2"),
        (lambda: libconv.conv2d(x, w, padding="smae"), ValueError,
         "padding 'smae' is not an int, one int per spatial dim, one (begin, end) pair per spatial "
         "dim, or one of 'same', 'valid', 'same_upper', 'same_lower', 'notset'"),
        (lambda: libconv.conv2d(x, w, padding=[(1, 1, 1), (1, 1, 1)]), ValueError,
         "padding must give one (begin, end) pair per spatial dim (2)"),
        (lambda: libconv.Conv(2).get_algorithm("sideways"), ValueError,
         "op 'sideways' is not one of 'forward', 'backward_data', 'backward_filter', "
         "'backward_input', 'backward_weight'"),
        (lambda: libconv.Tensor.zeros((1, 1, 2), dtype=x), TypeError,
         "dtype ndarray of shape (2, 4, 9, 9) and dtype float32 is not a dtype"),
        (lambda: libconv.conv2d(x, w, layout="nchwc"), ValueError,
         "layout 'nchwc' is not one of 'channels_first', 'channels_last', 'ncw', 'nchw'"),
    ]
    for call, exc, message in cases:
        with pytest.raises(exc) as info:
            call()
        text = str(info.value)
        assert message in text, text
        # No array contents: a float32 array of random normals prints like "-0.1234".
        assert not re.search(r"\d\.\d{3}", text), text
        assert len(text) < 400, text


def test_every_padding_string_listed_is_accepted(rng):
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((2, 2, 3, 3)).astype(np.float32)
    with pytest.raises(ValueError) as info:
        libconv.conv2d(x, w, padding="?")
    listed = re.findall(r"'([a-z_]+)'", str(info.value).split("one of", 1)[1])
    assert set(listed) == {"same", "valid", "same_upper", "same_lower", "notset"}
    for mode in listed:
        libconv.conv2d(x, w, padding=mode)


MYPY_SNIPPET = """\
import numpy as np
import libconv

x = np.zeros((1, 2, 5, 5), np.float32)
w = np.zeros((3, 2, 3, 3), np.float32)
y = libconv.conv2d(x, w, stride=2, padding="same")
z = libconv.conv2d(x, w, strde=2)
t = libconv.conv_transpose3d(x, w, output_paddng=1)
"""


def test_mypy_strict_catches_a_misspelled_keyword(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (scripts/pydeps.sh installs it)")
    (tmp_path / "snippet.py").write_text(MYPY_SNIPPET)
    package_parent = os.path.dirname(os.path.dirname(libconv.__file__))
    env = dict(os.environ)
    if os.path.basename(package_parent) not in ("site-packages", "dist-packages"):
        env["MYPYPATH"] = package_parent  # the build tree; an installed package mypy finds itself
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                        "--no-incremental", "--cache-dir", os.devnull, "snippet.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 2, out
    assert 'snippet.py:7: error: Unexpected keyword argument "strde" for "conv2d"' in out, out
    assert 'snippet.py:8: error: Unexpected keyword argument "output_paddng"' in out, out
    assert r.returncode == 1, out


def test_import_libconv_does_not_import_torch():
    code = ("import sys, libconv; libconv.conv2d; "
            "assert 'torch' not in sys.modules, 'import libconv imported torch'; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
