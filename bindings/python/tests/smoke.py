"""A quick check of an installed `libconv` package, run as a script (not by pytest).

    python smoke.py [--without CUDNN_SONAME|- MPI_SONAME|-]

A forward pass against a direct NumPy sum, and both backward passes through
<conv(x, w), dy> = <x, dx> = <w, dw>. With --without (CTest
loads_anywhere_python, under tests/install/without_gpu_mpi.sh): there is no
GPU and libconv says it looked for that cuDNN library, and an MPI
communicator fails with NotAvailableError naming that MPI library ("-": a
build without the backend, which says so). Used by CTest on the build tree
(loads_anywhere_python) and on an installed wheel (python_wheel).
"""

import sys

import numpy as np

import libconv


def check_cpu():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
    y = libconv.conv2d(x, w, padding=1)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    ref = sum(np.einsum("nchw,kc->nkhw", xp[:, :, i:i + 6, j:j + 5], w[:, :, i, j])
              for i in range(3) for j in range(3))
    err = float(np.abs(y - ref).max())
    assert err < 1e-4, "forward: max |error| %g" % err
    dx = libconv.conv_backward_data(x.shape, w, dy, padding=1)
    dw = libconv.conv_backward_filter(x, w.shape, dy, padding=1)
    y_dy = float((ref * dy).sum())
    x_dx = float((x.astype(np.float64) * dx).sum())
    w_dw = float((w.astype(np.float64) * dw).sum())
    tol = 1e-3 * (1 + abs(y_dy))
    assert abs(x_dx - y_dy) < tol, "backward-data: <x,dx> %g != <y,dy> %g" % (x_dx, y_dy)
    assert abs(w_dw - y_dy) < tol, "backward-filter: <w,dw> %g != <y,dy> %g" % (w_dw, y_dy)
    print("CPU: forward max |error| %.1e; <x,dx> %.5f <w,dw> %.5f <y,dy> %.5f"
          % (err, x_dx, w_dw, y_dy))


def check_without(cudnn, mpi):
    expected = cudnn if cudnn != "-" else "without the CUDA engine"
    assert libconv.device_count("cuda") == 0, "a GPU is reported"
    why = libconv.last_error()
    assert expected in why, "no GPU, but %r does not name %s" % (why, expected)
    print("CUDA devices: 0:", why)
    expected = mpi if mpi != "-" else "without MPI"
    try:
        libconv.Communicator.mpi_world()
    except libconv.NotAvailableError as e:
        assert expected in str(e), "%r does not name %s" % (str(e), expected)
        print("MPI:", e)
    else:
        raise AssertionError("an MPI communicator was made without the MPI library")


def main(argv):
    print("libconv", libconv.version(), "from", libconv.__file__)
    check_cpu()
    if argv[:1] == ["--without"]:
        check_without(argv[1], argv[2])
    print("smoke test passed")


if __name__ == "__main__":
    main(sys.argv[1:])
