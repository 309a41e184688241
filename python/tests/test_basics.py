"""Python basics a torch user looks for first, without a GPU: kiln.__version__, reprs,
docstrings, custom ops as functions, torch's dtype names and torch.dtype objects, -1 refused as
an extent, and messages in Python's terms (issue 43)."""
import inspect
import pathlib
import re

import pytest

import kiln

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_kernel"


def test_version_is_the_projects():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(kiln VERSION ([0-9.]+)", cmake).group(1)
    assert kiln.__version__ == version


def test_values_graphs_plans_engines_and_descs_print_what_they_hold(tmp_path):
    g = kiln.Graph()
    x = g.input("x", [None, 8], "f32")
    b = g.input("b", [8], "bf16")
    assert repr(x) == "<kiln.Value x: f32[?, 8] (input)>"
    y = kiln.cast(x, dtype="bf16") * 0.5 + b
    assert re.fullmatch(r"<kiln\.Value t\d+: bf16\[\?, 8\] = add\(t\d+, b\)>", repr(y))
    g.output(y, "y")
    assert re.fullmatch(r"<kiln\.Value y: bf16\[\?, 8\] = add\(t\d+, b\)>", repr(y))
    assert repr(g) == "<kiln.Graph: inputs x, b; outputs y; 5 nodes>"
    assert repr(kiln.Plan(g)) == "<kiln.Plan: inputs x, b; outputs y>"
    e = kiln.Engine(arch="sm_90a", offline=True, cache_dir=str(tmp_path))
    assert repr(e) == f"<kiln.Engine sm_90a offline, cache {e.cache_dir}>"
    assert repr(kiln.DType.bf16) == "kiln.DType.bf16" and repr(kiln.DType.bool) == "kiln.DType.bool"
    assert repr(kiln.desc([None, 64], "bf16")) == "kiln.desc([None, 64], 'bf16')"
    assert repr(kiln.desc([4, 8], "f32", [1, 4])) == "kiln.desc([4, 8], 'f32', strides=[1, 4])"
    t = kiln.Template("k.cuh", "").params([("x", kiln.ParamKind.tensor)]).instance("k<{x}>")
    assert repr(t) == "<kiln.Template k.cuh: params x; instance k<{x}>>"
    for r in map(repr, (x, g, kiln.Plan(g), e, kiln.desc([1], "f32"), t)):
        assert "object at 0x" not in r


def described(obj, name):
    """Whether obj's docstring says more than pybind11's signature line."""
    doc = inspect.getdoc(obj) or ""
    return any(line.strip() and not line.startswith(name + "(") for line in doc.splitlines())


def test_every_public_method_has_a_docstring():
    assert described(kiln.Plan.compile, "compile")
    missing = []
    for cls in (kiln.Graph, kiln.Value, kiln.Plan, kiln.Engine, kiln.TensorDesc, kiln.Template,
                kiln.Tensor):
        for name in dir(cls):
            if not name.startswith("_") and not described(getattr(cls, name), name):
                missing.append(f"{cls.__name__}.{name}")
        if not described(cls.__init__, "__init__") and cls not in (kiln.Value, kiln.TensorDesc,
                                                                  kiln.Tensor):
            missing.append(f"{cls.__name__}()")  # the three are made by kiln, not constructed
    for name in ("gpu_available", "tune", "desc", "precompile", "op_names"):
        if not described(getattr(kiln, name), name):
            missing.append(f"kiln.{name}")
    assert missing == []


def test_define_op_returns_the_op_as_a_function():
    g = kiln.Graph()
    mish = g.define_op("mish", ["x"], "x * tanhf(log1pf(expf(x)))")
    assert mish.__name__ == "mish" and list(inspect.signature(mish).parameters) == ["x"]
    assert "tanhf" in mish.__doc__
    x = g.input("x", [32, 256], "f32")
    g.output(kiln.softmax(mish(x)), "y")
    assert len(kiln.Plan(g).kernels()) == 1
    assert re.fullmatch(r"<kiln\.Value t\d+: f32\[32, 256\] = mish\(x\)>", repr(mish(x=x)))
    with pytest.raises(kiln.ArgumentError, match=r"mish\(x\)"):
        mish(x, x)


def test_define_template_returns_the_op_as_a_function():
    K = kiln.ParamKind
    t = kiln.Template.from_file(str(EXAMPLE / "window.cuh"))
    t.header("window_math.cuh", (EXAMPLE / "window_math.cuh").read_text())
    t.params([("x", K.tensor), ("y", K.tensor), ("n", K.i64), ("alpha", K.f32), ("beta", K.f32)])
    t.instance("gauss_window<{x}, {BLOCK}, {ITEMS}>").tunable("BLOCK", [256, 128])
    t.tunable("ITEMS", [4, 1]).launch(["ceilf(n / (BLOCK * ITEMS))"], ["BLOCK"])
    g = kiln.Graph()
    window = g.define_template("window", t.output("y", "x"))
    assert list(inspect.signature(window).parameters) == ["x", "n", "alpha", "beta"]
    x = g.input("x", [64, 1000], "f32")
    g.output(window(x, 64000, alpha=0.5, beta=0.25), "out")
    assert kiln.Plan(g).kernels()[0]["name"] == "gauss_window_f32_f32_BLOCK256_ITEMS4"


class TorchDtype:
    """Stands in for a torch.dtype where torch is absent: read by its name, as kiln reads one."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


@pytest.mark.parametrize("name,dtype", [("float32", "f32"), ("float16", "f16"),
                                        ("bfloat16", "bf16"), ("bool", "bool"),
                                        ("int32", "i32"), ("int64", "i64")])
def test_torch_dtype_names_and_objects_are_dtypes(name, dtype):
    want = kiln.DType.__members__[dtype]
    g = kiln.Graph()
    assert g.input("a", [4], name).dtype == want
    assert g.input("b", [4], TorchDtype(name)).dtype == want
    assert kiln.desc([4], name).dtype == want and kiln.desc([4], TorchDtype(name)).dtype == want
    x = g.input("x", [4], "f32")
    assert kiln.cast(x, dtype=name).dtype == want
    assert kiln.cast(x, dtype=TorchDtype(name)).dtype == want


def test_other_dtypes_are_refused_naming_what_kiln_takes():
    g = kiln.Graph()
    for bad in ("float64", "f64", TorchDtype("float64"), TorchDtype("f32"), 3):
        with pytest.raises(kiln.DtypeError, match="bfloat16"):
            g.input("x", [4], bad)


def test_torch_dtypes_themselves():
    torch = pytest.importorskip("torch")
    g = kiln.Graph()
    assert g.input("x", [4], torch.bfloat16).dtype == kiln.DType.bf16
    assert g.input("y", [4], torch.half).dtype == kiln.DType.f16
    with pytest.raises(kiln.DtypeError):
        g.input("z", [4], torch.float64)


def test_minus_one_is_no_dynamic_dim():
    g = kiln.Graph()
    with pytest.raises(kiln.ArgumentError, match=r"extent -1 at dim 0.*None or \"\?\""):
        g.input("x", [-1, 8], "f32")
    with pytest.raises(kiln.ArgumentError, match="extent -1"):
        kiln.desc([4, -1], "f32")
    with pytest.raises(kiln.ArgumentError, match="not a list"):
        g.input("x", "?", "f32")
    x = g.input("x", [None, 8], "f32")
    assert x.shape == [None, 8] and g.input("y", ["?", 8], "f32").shape == [None, 8]
    assert kiln.reshape(g.input("z", [4, 8], "f32"), shape=[-1]).shape == [32]  # inferred


def test_attributes_are_checked_and_torchs_names_hinted():
    g = kiln.Graph()
    x = g.input("x", [4, 8], "f32")
    with pytest.raises(kiln.ArgumentError, match=r"unknown attribute 'dim': kiln calls it axis"):
        kiln.sum(x, dim=1)
    with pytest.raises(kiln.ArgumentError, match="keepdim"):
        kiln.sum(x, axis=1, keepdims=True)
    with pytest.raises(kiln.ArgumentError, match=r"sum: attribute axis=1.5 is not an integer"):
        kiln.sum(x, axis=1.5)
    with pytest.raises(kiln.ArgumentError, match="True or False"):
        kiln.sum(x, axis=1, keepdim="yes")
    with pytest.raises(kiln.ArgumentError, match="a number"):
        kiln.layer_norm(x, None, None, eps="small")


def test_messages_name_python_calls_not_cpp_types(tmp_path):
    with pytest.raises(kiln.ArgumentError) as offline:
        kiln.Engine(offline=True)
    assert 'kiln.Engine(arch="sm_90a", offline=True)' in str(offline.value)
    e = kiln.Engine(arch="sm_90a", offline=True, cache_dir=str(tmp_path))
    t = kiln.Template("k.cuh", "").params([("x", kiln.ParamKind.tensor)])
    with pytest.raises(kiln.ArgumentError) as no_instance:
        kiln.precompile(e, t, [kiln.desc([4], "f32")])
    assert "(Template.instance)" in str(no_instance.value)
    with pytest.raises(kiln.GraphError) as no_output:
        kiln.Graph().define_template("k", t.instance("k<{x}>"))
    assert "Template.output" in str(no_output.value)
    for message in (offline.value, no_instance.value, no_output.value):
        assert "::" not in str(message)


def test_an_online_engine_without_a_gpu_names_the_offline_call():
    if kiln.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(kiln.CudaError) as e:
        kiln.Engine()
    assert 'kiln.Engine(arch="sm_90a", offline=True)' in str(e.value)
    assert "EngineOptions" not in str(e.value)
