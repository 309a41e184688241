"""kiln plans as torch custom ops: ``kiln.torch.op(plan, "my_block")`` registers
``torch.ops.kiln.my_block``, taking the graph's inputs in order and returning its outputs (one
tensor, or a tuple). Its fake (meta) implementation applies kiln's shape rules, so the op can
sit inside a ``torch.compile``d model; a CUDA graph capture of it works after one warm-up call
of the same shapes (the warm-up compiles the kernels and sizes the plan's scratch memory).
"""
import keyword

import torch

import kiln

_engines = {}


def engine(device=0):
    """The engine kiln's torch ops use on a device (one per device, made at first use)."""
    if device not in _engines:
        _engines[device] = kiln.Engine(device=device)
    return _engines[device]


def _schema(plan):
    for name in plan.inputs:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise kiln.ArgumentError(
                f"input '{name}': a torch op's arguments are Python identifiers; rename the "
                "graph input")
    outs = len(plan.outputs)
    result = "Tensor" if outs == 1 else "(" + ", ".join(["Tensor"] * outs) + ")"
    return "(" + ", ".join(f"Tensor {n}" for n in plan.inputs) + ") -> " + result


def op(plan, name, engine_for=None):
    """Registers `plan` as the torch op ``kiln::<name>`` and returns it
    (``torch.ops.kiln.<name>``). `engine_for(device_index)` picks the engine (default:
    kiln.torch.engine)."""
    pick = engine_for or engine
    inputs, outputs = list(plan.inputs), list(plan.outputs)

    def pack(results):
        return results[0] if len(results) == 1 else tuple(results)

    def run(*tensors):
        made = plan.run(pick(tensors[0].device.index or 0), dict(zip(inputs, tensors)))
        return pack([made[o] for o in outputs])

    def fake(*tensors):
        descs = plan.output_descs({n: kiln.desc([int(d) for d in t.shape], kiln._kiln_dtype(t.dtype))
                                   for n, t in zip(inputs, tensors)})
        dtype = {k: getattr(torch, v) for k, v in kiln._TORCH_DTYPES.items()}
        return pack([tensors[0].new_empty(descs[o].shape, dtype=dtype[descs[o].dtype.name])
                     for o in outputs])

    if not name.isidentifier():
        raise kiln.ArgumentError(f"torch op name '{name}': a Python identifier")
    if hasattr(torch.ops.kiln, name):
        raise kiln.ArgumentError(f"torch op kiln::{name} is registered already: pick another name")
    qualname = f"kiln::{name}"
    torch.library.define(qualname, _schema(plan))
    torch.library.impl(qualname, "CUDA", run)
    torch.library.register_fake(qualname, fake)
    return getattr(torch.ops.kiln, name)
