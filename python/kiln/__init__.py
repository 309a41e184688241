"""kiln from Python: graphs, plans and engines over kiln's C++ library.

Every op of kiln's catalog (docs/ops.md) is a function here taking graph values and numbers,
its attributes as keywords: ``kiln.softmax(x * 0.125 + mask)``,
``kiln.layer_norm(h, w, b, eps=1e-5)``, ``kiln.sum(x, axis="all")``. An optional operand may be
given as None.
"""
from ._kiln import *  # noqa: F401,F403
from ._kiln import _apply, op_names


def _op(name):
    def op(*args, **attrs):
        return _apply(name, *args, **attrs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"kiln's op {name!r} on graph values (docs/ops.md); attributes as keywords"
    return op


for _name in op_names():
    globals()[_name] = _op(_name)
del _name
