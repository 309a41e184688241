"""Runs on tensors, the parts that need no GPU: a plan's inputs, outputs and output shapes, and
what kiln refuses before it touches a device (objects that are not tensors, host memory)."""
import pytest

import kiln


def dynamic_plan():
    g = kiln.Graph()
    x = g.input("x", ["?", 64], "bf16")
    b = g.input("b", [64], "f32")
    g.output(kiln.sum(kiln.cast(x, dtype="f32") + b, axis=1), "total")
    g.output(kiln.relu(x), "r")
    return kiln.Plan(g)


def test_a_plan_names_its_inputs_and_outputs_and_their_shapes():
    plan = dynamic_plan()
    assert plan.inputs == ["x", "b"] and plan.outputs == ["total", "r"]
    out = plan.output_descs(x=kiln.desc([37, 64], "bf16"), b=kiln.desc([64], "f32"))
    assert out["total"].shape == [37] and out["total"].dtype == kiln.DType.f32
    assert out["r"].shape == [37, 64] and out["r"].dtype == kiln.DType.bf16
    with pytest.raises(kiln.ShapeError, match="input 'x'"):
        plan.output_descs(x=kiln.desc([37, 63], "bf16"), b=kiln.desc([64], "f32"))
    with pytest.raises(kiln.DtypeError, match="input 'b'"):
        plan.output_descs(x=kiln.desc([37, 64], "bf16"), b=kiln.desc([64], "f16"))
    with pytest.raises(kiln.GraphError, match="'b'"):
        plan.output_descs(x=kiln.desc([37, 64], "bf16"))


class HostArray:
    """A DLPack producer in host memory (its capsule is never asked for)."""

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("kiln asked a host array for its capsule")


def test_what_is_not_a_tensor_on_the_engines_device_is_refused_first():
    e = kiln.Engine(arch="sm_90a", offline=True)
    assert e.device == 0
    plan = dynamic_plan()
    with pytest.raises(kiln.ArgumentError, match=r"input 'x': a list is not a tensor .*__dlpack__"):
        kiln._run(plan, e, {"x": [1.0]}, {}, None, False)
    with pytest.raises(kiln.ArgumentError, match="input 'x': a tensor in host memory"):
        kiln._run(plan, e, {"x": HostArray()}, {}, None, False)


def test_stream_handles_from_torch_cupy_or_integers():
    class TorchLike:
        cuda_stream = 1234

    class CupyLike:
        ptr = 99

    assert kiln._handle(TorchLike()) == 1234 and kiln._handle(CupyLike()) == 99
    assert kiln._handle(7) == 7


def test_tuning_needs_the_gpu_it_tunes_for(tmp_path):
    e = kiln.Engine(arch="sm_90a", offline=True, cache_dir=str(tmp_path))
    g = kiln.Graph()
    g.output(kiln.softmax(g.input("x", [64, 1000], "f32")), "y")
    with pytest.raises(kiln.CudaError, match="tuning needs a GPU"):
        kiln.tune(e, g)
