"""Results documents as JSON: ``jsonable`` (numpy values to plain JSON values, NaN -> null, +-inf -> "inf") and
``dumps`` (one key per line, lists of scalars on one line, strict JSON) take fast paths for plain lists and
finite numeric arrays; they must give exactly what the element-wise definitions below give."""
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fedcheck.core.results import dumps, jsonable


def reference_jsonable(x):
    if isinstance(x, dict):
        return {str(k): reference_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [reference_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return reference_jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else (None if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def reference_dumps(doc, indent=1):
    def scalar(v):
        return v is None or isinstance(v, (str, int, float, bool))

    def enc(x, level):
        if isinstance(x, dict):
            if not x:
                return "{}"
            pad = " " * (indent * (level + 1))
            items = ",\n".join(f"{pad}{json.dumps(str(k))}: {enc(v, level + 1)}" for k, v in x.items())
            return "{\n" + items + "\n" + " " * (indent * level) + "}"
        if isinstance(x, (list, tuple)):
            if all(scalar(v) for v in x):
                return json.dumps(list(x), allow_nan=False)
            pad = " " * (indent * (level + 1))
            return "[\n" + ",\n".join(pad + enc(v, level + 1) for v in x) + "\n" + " " * (indent * level) + "]"
        return json.dumps(x, allow_nan=False)
    return enc(doc, 0)


floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e300, 5e-324, 0.1])
scalars = (floats | st.integers(-2**70, 2**70) | st.booleans() | st.none() | st.text(max_size=6)
           | floats.map(np.float64) | floats.map(np.float32) | st.integers(-9, 9).map(np.int64)
           | st.booleans().map(np.bool_))
arrays = (hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.bool_, np.uint8]),
                     hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
          | hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=5),
                       elements=st.floats(-1e6, 1e6)))
values = st.recursive(scalars | arrays, lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                      | st.dictionaries(st.text(max_size=4) | st.integers(0, 9), inner, max_size=4), max_leaves=25)


def _same(a, b):
    """Equal as JSON values, and of the same Python types (1 and 1.0 and True print differently)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


@settings(max_examples=300, deadline=None)
@given(values)
def test_jsonable_and_dumps_are_the_element_wise_definitions(x):
    got, want = jsonable(x), reference_jsonable(x)
    assert _same(got, want)
    assert dumps(got) == reference_dumps(want)
    json.loads(dumps(got))                      # strict JSON


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), [1.0, float("-inf")], {"a": float("nan")}])
def test_dumps_refuses_what_is_not_json_as_json_does(bad):
    with pytest.raises(ValueError) as ours:
        dumps(bad)
    with pytest.raises(ValueError) as theirs:
        reference_dumps(bad)
    assert str(ours.value) == str(theirs.value)
