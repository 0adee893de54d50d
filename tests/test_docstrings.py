"""numpydoc conformance of the public API, as scikit-learn checks its own.

Every name exported by a public module (``__all__`` of the modules in
``test_api.PUBLIC_MODULES``), and every public method and property a public
class defines itself, has a docstring whose Parameters section documents
exactly the signature, each parameter with a description, and (functions
and methods that return something) a Returns section with descriptions.

A dataclass (the result types) documents its fields under Attributes: for
those the constructor's parameters are checked against that section
instead of a Parameters section.
"""

import dataclasses
import importlib
import inspect

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

from .test_api import PUBLIC_MODULES  # noqa: E402

#: numpydoc's codes checked here: no docstring (GL08), parameters missing
#: (PR01), unknown (PR02) or without description (PR07), no Returns section
#: (RT01), a return value without description (RT03).
CHECKED = frozenset({"GL08", "PR01", "PR02", "PR07", "RT01", "RT03"})


def _public_objects():
    seen = {}
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants
            path = f"{obj.__module__}.{obj.__qualname__}"
            seen.setdefault(path, obj)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if inspect.isfunction(member) or isinstance(member, property):
                        seen.setdefault(f"{path}.{attr}", member)
    return sorted(seen)


def _resolve(path):
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


def _dataclass_fields_documented(path):
    cls = _resolve(path)
    if not (inspect.isclass(cls) and dataclasses.is_dataclass(cls)):
        return False
    from numpydoc.docscrape import ClassDoc

    documented = set()
    for entry in ClassDoc(cls)["Attributes"]:
        documented.update(n.strip() for n in entry.name.split(","))
    return {f.name for f in dataclasses.fields(cls) if f.init} <= documented


@pytest.mark.parametrize("path", _public_objects())
def test_public_docstring(path):
    result = numpydoc_validate.validate(path)
    errors = [(code, msg) for code, msg in result["errors"] if code in CHECKED]
    if any(code == "PR01" for code, _ in errors) and _dataclass_fields_documented(path):
        errors = [(code, msg) for code, msg in errors if code != "PR01"]
    assert not errors, f"{path}: " + "; ".join(f"{c} {m}" for c, m in errors)


def test_public_objects_found():
    paths = _public_objects()
    # The estimators, their own methods and the public helpers are all seen.
    for path in (
        "skgprobust._gpc.RobustGaussianProcessClassifier",
        "skgprobust._gpr.RobustGaussianProcessRegressor",
        "skgprobust._softmax_gpc.SoftmaxGaussianProcessClassifier.predict_proba",
        "skgprobust.active._learner.SafeActiveLearner.certify_safe",
        "skgprobust.pipeline.make_pipeline",
    ):
        assert path in paths
    assert len(paths) > 100
