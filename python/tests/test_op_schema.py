"""Op functions from the ops' schemas: docstrings, signatures and keyword checking come from
kiln's op definitions, none written per op in python/."""
import inspect

import pytest

import kiln


def test_every_catalog_op_has_a_docstring_from_its_schema():
    names = kiln.op_names()
    assert len(names) >= 40
    for name in names:
        schema = kiln._op_schema(name)
        op = getattr(kiln, name)
        doc = op.__doc__
        assert doc.startswith(f"{name}(")
        assert schema["doc"] in doc and schema["dtypes"] in doc
        params = inspect.signature(op).parameters
        for operand in schema["operands"]:
            assert operand in doc and operand in params
        for attr in schema["attrs"]:
            assert f"    {attr['name']}: {attr['type']}" in doc and attr["doc"] in doc
            assert params[attr["name"]].kind is inspect.Parameter.KEYWORD_ONLY


def test_help_of_layer_norm_shows_operands_eps_default_and_doc():
    text = inspect.getdoc(kiln.layer_norm)
    assert text.splitlines()[0] == (
        "layer_norm(x, weight=None, bias=None, *, eps=1e-05, axis=-1, keepdim=False)")
    assert "Operands: x, weight (optional), bias (optional)" in text
    assert "eps: a number, default 1e-05, > 0: added to the variance" in text
    assert "(x - mean) / sqrt(var + eps)" in text
    assert "Dtypes: x a float tensor" in text
    sig = inspect.signature(kiln.cast)
    assert sig.parameters["dtype"].default is inspect.Parameter.empty  # required


def test_misspelt_attributes_get_a_hint():
    g = kiln.Graph()
    x = g.input("x", [4, 8], "f32")
    with pytest.raises(kiln.ArgumentError, match=r"unknown attribute 'epss': did you mean eps\?"):
        kiln.layer_norm(x, epss=1e-3)
    with pytest.raises(kiln.ArgumentError, match=r"'dim': kiln calls it axis; softmax's attributes"):
        kiln.softmax(x, dim=0)
    with pytest.raises(kiln.ArgumentError, match="add takes no attributes"):
        kiln.add(x, x, axis=0)
    with pytest.raises(kiln.ArgumentError, match=r"layer_norm: attribute eps=0 is not > 0"):
        kiln.layer_norm(x, eps=0)


def test_operands_by_name_and_absent_ones():
    g = kiln.Graph()
    x = g.input("x", [4, 8], "f32")
    w = g.input("w", [8], "f32")
    assert kiln.layer_norm(x, weight=w).shape == [4, 8]
    assert kiln.linear(x=x, w=g.input("m", [2, 8], "f32")).shape == [4, 2]
    with pytest.raises(kiln.ArgumentError, match="follows an absent"):
        kiln.layer_norm(x, bias=w)  # dropping the None would make the bias a weight
    with pytest.raises(kiln.ArgumentError, match="by position and by name"):
        kiln.layer_norm(x, w, weight=w)
