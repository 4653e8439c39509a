"""The Python API covers conv.h: every public function and enum value.

conv.h is parsed, so a function added there fails these tests until the
low-level module wraps it (a rebuild does that by itself) and the public
package calls it.
"""

import ast
import inspect
import re
from pathlib import Path

import pytest

import libconv
from libconv import _enums, _libconv

PACKAGE_DIR = Path(libconv.__file__).parent


def header_functions(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    names = re.findall(r"\bCONV_API\b[^;{}]*?\b(conv_[a-z0-9_]+)\s*\(", text)
    assert len(names) > 40, "conv.h parsed badly: %d functions" % len(names)
    return sorted(set(names))


def header_enumerators(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return {name: int(value, 0) for name, value in
            re.findall(r"\b(CONV_[A-Z0-9_]+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*[,}\n]", text)}


def package_calls():
    """Every `x.conv_*` attribute the public package's own files use (every
    libconv/*.py: a new module such as _plan.py counts by itself)."""
    used = set()
    for path in PACKAGE_DIR.glob("*.py"):
        if path.name == "_libconv.py":  # SWIG's proxy, generated
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("conv_"):
                used.add(node.attr)
    return used


def test_every_function_is_wrapped_by_the_low_level_module(header_text):
    missing = [f for f in header_functions(header_text) if not callable(getattr(_libconv, f, None))]
    assert not missing, "conv.h functions not in libconv._libconv (rebuild?): %s" % missing


def test_every_function_is_reachable_from_the_public_api(header_text):
    used = package_calls()
    missing = [f for f in header_functions(header_text) if f not in used]
    assert not missing, ("conv.h functions the libconv package never calls (add them to the "
                         "Pythonic layer): %s" % missing)


def test_every_enum_value_has_a_python_member(header_text):
    classes = {prefix: cls for cls, prefix in _enums._C_PREFIX.items()}
    problems = []
    for name, value in header_enumerators(header_text).items():
        prefix = max((p for p in classes if name.startswith(p)), key=len, default=None)
        if prefix is None:
            problems.append("%s: no Python enum for this prefix" % name)
            continue
        member = classes[prefix].__members__.get(name[len(prefix):])
        if member is None or int(member) != value:
            problems.append("%s = %d: %s.%s is %r" % (name, value, classes[prefix].__name__,
                                                     name[len(prefix):], member))
    assert not problems, problems


def test_version_matches_the_header(header_text):
    major, minor, patch = (int(re.search(r"#define CONV_VERSION_%s (\d+)" % k, header_text).group(1))
                           for k in ("MAJOR", "MINOR", "PATCH"))
    assert libconv.version_info() == (major, minor, patch)
    assert libconv.version() == libconv.__version__ == "%d.%d.%d" % (major, minor, patch)


def test_library_names():
    assert libconv.algo_name(libconv.Algo.IM2COL_GEMM) == "im2col_gemm" == str(libconv.Algo.IM2COL_GEMM)
    assert libconv.algo_name(12345) == "unknown"
    assert libconv.algo_from_name("im2col_gemm") == libconv.Algo.IM2COL_GEMM
    with pytest.raises(libconv.InvalidArgumentError, match="im2col_gemm"):
        libconv.algo_from_name("no_such_solver")  # the message lists the known names
    assert libconv.status_string(libconv.Status.SHAPE_MISMATCH) == "shape mismatch"


def test_algorithm_list():
    cpu = libconv.algorithms()
    assert cpu == libconv.algorithms("cpu") == libconv.algorithms(libconv.Device.CPU)
    names = [libconv.algo_name(a) for a in cpu]
    # conv.h's CPU algorithms and the private ones, each once, with a name that maps back.
    for algo in (libconv.Algo.IM2COL_GEMM, libconv.Algo.GEMM_1X1, libconv.Algo.WINOGRAD_4X4_3X3):
        assert algo in cpu
    assert "unknown" not in names and len(set(names)) == len(names)
    assert all(libconv.algo_from_name(n) == a for n, a in zip(names, cpu))
    assert any(isinstance(a, int) and not isinstance(a, libconv.Algo) for a in cpu)  # private ids
    cuda = libconv.algorithms("cuda")  # listed in every build, with or without a GPU
    assert libconv.Algo.CUDNN_IMPLICIT_GEMM in cuda and not set(cuda) & set(cpu)
    with pytest.raises(libconv.InvalidArgumentError, match="7"):
        libconv.algorithms(7)


def public_objects():
    for name in libconv.__all__:
        obj = getattr(libconv, name)
        yield name, obj
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__", "__dlpack__", "__dlpack_device__"):
                    continue
                if callable(member) or isinstance(member, (property, classmethod, staticmethod)):
                    yield "%s.%s" % (name, attr), member


def test_everything_public_has_a_docstring():
    missing = []
    for name, obj in public_objects():
        target = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
        target = target.fget if isinstance(target, property) else target
        if isinstance(target, int):  # enum members
            continue
        if not (getattr(target, "__doc__", None) or "").strip():
            missing.append(name)
    # __init__ documents itself in the class docstring.
    missing = [m for m in missing if not m.endswith(".__init__")]
    assert not missing, missing


def test_functions_have_type_hints():
    unhinted = []
    for name, obj in public_objects():
        if inspect.isfunction(obj) and obj.__module__.startswith("libconv"):
            sig = inspect.signature(obj)
            if sig.return_annotation is inspect.Signature.empty:
                unhinted.append(name)
    assert not unhinted, unhinted
    assert (PACKAGE_DIR / "py.typed").exists()


def test_pytorch_style_defaults():
    sig = inspect.signature(libconv.conv2d)
    assert [sig.parameters[p].default for p in ("bias", "stride", "padding", "dilation", "groups")] == \
        [None, 1, 0, 1, 1]
    sig = inspect.signature(libconv.conv_transpose2d)
    assert list(sig.parameters)[:8] == ["x", "w", "bias", "stride", "padding", "output_padding",
                                        "groups", "dilation"]


@pytest.mark.parametrize("name", ["Context", "Tensor", "Conv", "Workspace", "Plan"])
def test_core_objects_exist(name):
    assert inspect.isclass(getattr(libconv, name))
