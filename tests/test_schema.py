"""Results files validated by a JSON Schema (jsonschema), and the API's arguments.

``fedcheck report``, ``Results.read`` and ``Results(...)`` refuse a file or dict that is not a results document --
JSON's NaN literal (which Python's json.dump writes), string rounds, a reading that is not an object, deep nesting --
with one line naming the file (exit 2 / ``fedcheck.BadInput``), never a traceback.  Every bad argument of
``fedcheck.verify`` is ``BadInput``, and so is ``@pytest.mark.fedcheck(params=5)`` in the plugin.
"""
import json
import subprocess
import sys
import textwrap

import pytest

import fedcheck
from fedcheck.cli import main

GOOD_CHECK = {"id": "mine.a", "verdict": "holds", "max_ratio": 0.5, "readings": {"r": {"verdict": "holds"}},
              "instances": [{"seed": 0, "rounds": [1, 2, 3], "metric": [0.3, 0.2, None], "bound": {"r": [1, "inf", 2]}}]}


def _doc(**check) -> dict:
    return {"schema": "fedcheck.results/1", "provenance": {}, "checks": [{**GOOD_CHECK, **check}]}


BAD = {
    "a NaN literal": lambda: json.dumps(_doc(max_ratio=float("nan"))),
    "an Infinity literal": lambda: json.dumps(_doc(max_ratio=float("inf"))),
    "string rounds": lambda: json.dumps(_doc(instances=[{"rounds": "1,2,3"}])),
    "text in the rounds": lambda: json.dumps(_doc(instances=[{"rounds": [1, "two"]}])),
    "a reading that is not an object": lambda: json.dumps(_doc(readings={"r": "holds"})),
    "a check that is not an object": lambda: json.dumps({"schema": "fedcheck.results/1", "checks": ["x"]}),
    "no verdict": lambda: json.dumps({"schema": "fedcheck.results/1", "checks": [{"id": "a"}]}),
    "an empty id": lambda: json.dumps(_doc(id="")),
    "series without points": lambda: json.dumps(_doc(series=[{"x": "1"}])),
    "table rows not lists": lambda: json.dumps(_doc(tables=[{"columns": ["a"], "rows": [1, 2]}])),
    "another schema": lambda: json.dumps({"schema": "other/1", "checks": []}),
    "not an object": lambda: "[1, 2, 3]",
    "deeply nested": lambda: '{"schema": "fedcheck.results/1", "checks": ' + "[" * 50000 + "]" * 50000 + "}",
    "deep inside a check": lambda: json.dumps(_doc()).replace('"max_ratio": 0.5', '"evidence": ' + "[" * 500 + "]" * 500),
    "not JSON": lambda: "{not json",
    "not text": lambda: b"\xff\xfe\x00garbage",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_report_refuses_a_malformed_results_file(tmp_path, capsys, case):
    f = tmp_path / "r.json"
    data = BAD[case]()
    f.write_bytes(data if isinstance(data, bytes) else data.encode())
    rc = main(["report", str(f), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and "r.json" in err, err
    assert not (tmp_path / "out").exists()
    with pytest.raises(fedcheck.BadInput, match="r.json"):
        fedcheck.Results.read(f)


def test_a_real_results_file_passes_the_schema(tmp_path, capsys):
    res = fedcheck.verify("theorem1", seeds=1, rounds=30)
    path = res.to_json(tmp_path / "t1.json")
    back = fedcheck.Results.read(path)
    assert back.verdicts == res.verdicts
    f = tmp_path / "good.json"
    f.write_text(json.dumps(_doc()))
    assert fedcheck.Results.read(f).verdicts == {"mine.a": "holds"}


@pytest.mark.parametrize("results", [5, "x", [5], [{"id": "a"}], [{"id": "a", "verdict": "holds", "instances": "no"}]])
def test_results_from_dicts_are_checked(results):
    with pytest.raises(fedcheck.BadInput):
        fedcheck.Results(results)


@pytest.mark.parametrize("kwargs", [dict(params=5), dict(params={"lambda_0": "big"}), dict(params={1: 0.5}), dict(params={"lambda_0": None}),
                                    dict(params=[0.5]), dict(theorem_file=5), dict(theorem_file=[None]),
                                    dict(seeds="x"), dict(seeds=-1), dict(rounds=1.5), dict(rounds=0),
                                    dict(rounds=True), dict(instances=5), dict(instances=[object()]),
                                    dict(full="yes"), dict(progress=None), dict(use_cache=1), dict(save_dir=5),
                                    dict(jobs=-1), dict(jobs="2")])
def test_every_bad_argument_of_verify_is_bad_input(kwargs):
    with pytest.raises(fedcheck.BadInput):
        fedcheck.verify("theorem1", **kwargs)


def test_bad_claims_and_paths_are_bad_input(tmp_path):
    for args in ((5,), (None,), ("no_such_check",)):
        with pytest.raises(fedcheck.BadInput):
            fedcheck.verify(*args)
    res = fedcheck.Results([GOOD_CHECK])
    for call in (lambda: res.to_json(5), lambda: res.to_table(None), lambda: res.report(5),
                 lambda: fedcheck.Results.read(5), lambda: fedcheck.Results.read(tmp_path)):
        with pytest.raises(fedcheck.BadInput):
            call()


def test_the_plugins_marker_with_bad_params_fails_with_one_message(tmp_path):
    (tmp_path / "test_m.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.fedcheck("theorem1", params=5)
        def test_params():
            pass

        @pytest.mark.fedcheck("theorem1", rounds="many")
        def test_rounds():
            pass
    '''))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_m.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert "2 failed" in p.stdout, p.stdout
    assert "@pytest.mark.fedcheck: params=5: expected a dict" in p.stdout
    assert "@pytest.mark.fedcheck: rounds= 'many': expected a positive integer" in p.stdout
    assert "TypeError" not in p.stdout and "AttributeError" not in p.stdout
