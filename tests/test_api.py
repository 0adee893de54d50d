"""The public API, its documentation, the package's layering and its import cost.

* ``docs/api.rst`` documents exactly the exported names: every name in the
  ``__all__`` of the public modules, under its public path, and nothing else;
* the private modules import only downwards through the layers, never a
  kept old import path (a re-exporting module) nor a private name of another
  module;
* importing the public modules does not import the optional or heavy
  dependencies (cvxpy, ECOS, matplotlib, LIME, pandas);
* the import paths documented by earlier releases keep working.
"""

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import skgprobust

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "skgprobust"
API_RST = REPO / "docs" / "api.rst"

#: The public modules and subpackages; their ``__all__`` is the public API.
PUBLIC_MODULES = (
    "skgprobust",
    "skgprobust.pipeline",
    "skgprobust.active",
    "skgprobust.inspection",
    "skgprobust.exceptions",
    "skgprobust.kernels",
)

#: Old documented import paths, kept as small re-exporting modules ("shims").
#: They sit outside the layering: nothing inside the package may import them.
SHIMS = frozenset(
    "skgprobust." + name
    for name in ("bounds", "links", "softmax", "objectives", "explain", "attacks", "compare", "plotting", "scoring")
)

#: Layer of each module (the longest matching dotted prefix wins). A module
#: may import modules of its own layer or below, never above. The package
#: root is the public facade over everything (layer 5): no module of the
#: package imports it.
LAYERS = {
    "skgprobust._fp": 0,
    "skgprobust.exceptions": 0,
    "skgprobust.kernels": 1,
    "skgprobust._bounds": 1,
    "skgprobust._hyperopt": 1,
    "skgprobust._engine": 2,
    "skgprobust._gpr": 3,
    "skgprobust._gpc": 3,
    "skgprobust._ep": 3,
    "skgprobust._sparse": 3,
    "skgprobust._softmax_gpc": 3,
    "skgprobust._multioutput": 3,
    "skgprobust.pipeline": 4,
    "skgprobust._scoring": 4,
    "skgprobust.inspection": 4,
    "skgprobust.demo": 4,
    "skgprobust.active": 4,
    "skgprobust": 5,
}

#: What earlier releases documented (docs/api.rst at fbd15b9 and the README):
#: each of these imports must keep working.
OLD_DOCUMENTED = {
    "skgprobust": [
        "RobustGaussianProcessClassifier",
        "RobustGaussianProcessRegressor",
        "CertificationResult",
        "RangeResult",
        "register_adapter",
        "supported_kernels",
        "UnsupportedKernelError",
        "BudgetExhaustedWarning",
    ],
    "skgprobust.pipeline": [
        "certify",
        "prediction_range",
        "explain",
        "Pipeline",
        "make_pipeline",
        "SUPPORTED_STEPS",
        "UnsupportedStepError",
        "RoundTripWarning",
    ],
    "skgprobust.scoring": ["make_robustness_scorer", "RobustnessScorer", "METRICS"],
    "skgprobust.explain": ["Explanation", "GlobalExplanation", "adversarial_gap_curve", "GapCurve"],
    "skgprobust.compare": ["compare_with_lime", "LimeComparison"],
    "skgprobust.attacks": ["gpfgs", "gpjm", "pgd", "attack_succeeded"],
    "skgprobust.plotting": [
        "plot_robustness_curve",
        "robustness_curve",
        "plot_explanation",
        "plot_explanation_heatmap",
        "plot_decision_map",
    ],
    "skgprobust.softmax": ["softmax_gaussian_bounds", "softmax_gaussian_mc"],
    "skgprobust.objectives": ["SoftmaxProbabilities", "SoftmaxProbaObjective", "SoftmaxMarginObjective"],
    "skgprobust.bounds": ["margin_rtol"],
    "skgprobust.links": ["verify_five_erf_shape"],
}

#: Where the old paths' objects live now, when they are public there too.
NEW_HOME = {
    "skgprobust.pipeline": "skgprobust.pipeline",
    "skgprobust.scoring": "skgprobust",
    "skgprobust.explain": "skgprobust.inspection",
    "skgprobust.compare": "skgprobust.inspection",
    "skgprobust.attacks": "skgprobust.inspection",
    "skgprobust.plotting": "skgprobust.inspection",
}

HEAVY = ("cvxpy", "ecos", "matplotlib", "lime")


def _exported():
    """{(module, name)} for every name in a public module's ``__all__``."""
    pairs = set()
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            pairs.add((modname, name))
    return pairs


def test_all_names_exist():
    for modname, name in sorted(_exported()):
        mod = importlib.import_module(modname)
        assert hasattr(mod, name), f"{modname}.__all__ lists {name!r}, which it does not define"
        assert name == "__version__" or not name.startswith("_"), f"{modname}.__all__ lists private {name!r}"


# --------------------------------------------------------------------------
# docs/api.rst documents exactly the exported names
# --------------------------------------------------------------------------

_DIRECTIVE = re.compile(r"^(\s*)\.\. ([\w:-]+)::\s*(\S*)\s*$")
#: Directives that document a module-level object (as opposed to members of a
#: class, such as ``automethod``).
_OBJECT_DIRECTIVES = {
    "autoclass",
    "autofunction",
    "autoexception",
    "autodata",
    "py:class",
    "py:function",
    "py:exception",
    "py:data",
}


def _parse_api_rst(text):
    """Entries of api.rst: ``[(kind, full_path, line_no)]``.

    ``kind`` is ``"summary"`` (an autosummary table row), ``"full"`` (an
    autodoc directive documenting a module-level object) or ``"module"``
    (``automodule``/``module``). Names are resolved as Sphinx does: a
    dotted name in an autodoc directive is absolute, a bare one is relative
    to the current module; an autosummary row is relative to the current
    module unless it starts with ``skgprobust``.
    """
    entries = []
    current = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        i += 1
        if not m:
            continue
        indent, directive, arg = m.groups()
        if directive in ("py:currentmodule", "py:module"):
            directive = directive[3:]
        if directive == "currentmodule":
            current = None if arg in ("", "None") else arg
        elif directive in ("automodule", "module"):
            current = arg
            entries.append(("module", arg, i))
        elif directive in _OBJECT_DIRECTIVES:
            if indent:
                raise AssertionError(f"api.rst line {i}: nested {directive} {arg!r}")
            full = arg if "." in arg else f"{current}.{arg}"
            entries.append(("full", full, i))
        elif directive == "autosummary":
            # options (":toctree: ..."), then a blank line, then the indented rows
            base = len(indent)
            while i < len(lines):
                line = lines[i]
                stripped = line.strip()
                if stripped and len(line) - len(line.lstrip()) <= base:
                    break
                i += 1
                if not stripped or stripped.startswith(":") or stripped.startswith(".."):
                    continue
                name = stripped.lstrip("~")
                full = name if name.startswith("skgprobust") else f"{current}.{name}"
                entries.append(("summary", full, i))
    return entries


def _api_entries():
    if not API_RST.exists():
        pytest.skip("docs/api.rst is not part of this checkout")
    return _parse_api_rst(API_RST.read_text())


def _split(path):
    """'skgprobust.pipeline.certify' -> ('skgprobust.pipeline', 'certify')."""
    modname, _, name = path.rpartition(".")
    return modname, name


def test_api_rst_parser():
    text = """
.. currentmodule:: skgprobust

.. autosummary::
   :nosignatures:

   certify
   pipeline.Pipeline
   ~skgprobust.kernels.KernelAdapter

Text.

.. autoclass:: RangeResult

   .. automethod:: to_frame

.. automodule:: skgprobust.inspection
   :no-members:

.. autofunction:: pgd

.. autofunction:: skgprobust.kernels.make_adapter
"""
    assert _parse_api_rst(text) == [
        ("summary", "skgprobust.certify", 7),
        ("summary", "skgprobust.pipeline.Pipeline", 8),
        ("summary", "skgprobust.kernels.KernelAdapter", 9),
        ("full", "skgprobust.RangeResult", 13),
        ("module", "skgprobust.inspection", 17),
        ("full", "skgprobust.inspection.pgd", 20),
        ("full", "skgprobust.kernels.make_adapter", 22),
    ]


def test_api_rst_lists_every_exported_name():
    documented = {full for kind, full, _ in _api_entries() if kind != "module"}
    missing = sorted(f"{m}.{n}" for m, n in _exported() if f"{m}.{n}" not in documented)
    assert not missing, f"exported but not in docs/api.rst: {missing}"


def test_api_rst_documents_only_exported_names():
    exported = _exported()
    wrong = []
    for kind, full, line in _api_entries():
        if kind == "module":
            if full not in PUBLIC_MODULES:
                wrong.append(f"line {line}: module {full}")
        elif _split(full) not in exported:
            wrong.append(f"line {line}: {full}")
    assert not wrong, f"docs/api.rst documents names that are not exported: {wrong}"


def test_api_rst_documents_each_object_once_in_full():
    """Each exported object gets one full description (autoclass, ...), under
    one of its public paths; its other public paths are autosummary rows."""
    full = {}
    for kind, path, _ in _api_entries():
        if kind == "full":
            modname, name = _split(path)
            obj = getattr(importlib.import_module(modname), name)
            full.setdefault(id(obj), []).append(path)
    twice = {paths[0]: paths for paths in full.values() if len(paths) > 1}
    assert not twice, f"documented in full more than once: {twice}"
    missing = sorted(
        f"{m}.{n}" for m, n in _exported() if id(getattr(importlib.import_module(m), n)) not in full
    )
    assert not missing, f"exported but never documented in full (autoclass/autofunction/...): {missing}"


# --------------------------------------------------------------------------
# Layering
# --------------------------------------------------------------------------


def _modules():
    """{dotted name: (path, is_package)} for every module under skgprobust/."""
    mods = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


def _layer(modname):
    parts = modname.split(".")
    for k in range(len(parts), 0, -1):
        prefix = ".".join(parts[:k])
        if prefix in LAYERS:
            return LAYERS[prefix]
    return None


def _imports(modname, path, is_pkg, modules):
    """Every import of a skgprobust module in the file, top level or lazy:
    ``[(line, imported module, imported private name or None)]``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = modname if is_pkg else modname.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "skgprobust":
                    out.append((node.lineno, alias.name, None))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if target.split(".")[0] != "skgprobust":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:  # a module: "from ._engine import _delta"
                    out.append((node.lineno, sub, None))
                    continue
                private = alias.name.startswith("_") and not (
                    alias.name.startswith("__") and alias.name.endswith("__")
                )
                out.append((node.lineno, target, alias.name if private else None))
    return out


def test_every_module_has_a_layer():
    unassigned = [m for m in _modules() if m not in SHIMS and _layer(m) is None]
    assert not unassigned, f"modules with no layer (add them to LAYERS or SHIMS): {unassigned}"


def test_layering():
    """Lower layers never import higher ones (lazily neither); no module of
    the package imports a kept old import path; no module imports another
    module's private name (private modules are fine)."""
    modules = _modules()
    problems = set()
    for modname, (path, is_pkg) in modules.items():
        if modname in SHIMS or modname == "skgprobust":
            continue  # the facades: they re-export, they are not layered
        own = _layer(modname)
        rel = path.relative_to(REPO)
        for line, target, private in _imports(modname, path, is_pkg, modules):
            where = f"{rel}:{line}"
            if target in SHIMS:
                problems.add(f"{where} imports the re-exporting module {target}")
            elif target not in modules:
                problems.add(f"{where} imports {target}, which does not exist")
            elif _layer(target) > own:
                problems.add(f"{where} (layer {own}) imports {target} (layer {_layer(target)})")
            if private is not None:
                problems.add(f"{where} imports the private name {private} from {target}")
    assert not problems, "layering violations:\n" + "\n".join(sorted(problems))


def test_layering_checker_sees_lazy_and_private_imports(tmp_path):
    pkg = tmp_path / "skgprobust"
    (pkg / "_engine").mkdir(parents=True)
    (pkg / "_engine" / "__init__.py").write_text("")
    (pkg / "_engine" / "_delta.py").write_text("")
    f = pkg / "kernels.py"
    f.write_text(
        "from ._engine import _delta\n"
        "from ._engine._delta import Explanation, _helper\n"
        "def f():\n"
        "    from . import pipeline\n"
        "    import skgprobust._gpc\n"
    )
    modules = {
        "skgprobust._engine": None,
        "skgprobust._engine._delta": None,
        "skgprobust.kernels": None,
        "skgprobust.pipeline": None,
    }
    expected = [
        (1, "skgprobust._engine._delta", None),
        (2, "skgprobust._engine._delta", None),
        (2, "skgprobust._engine._delta", "_helper"),
        (4, "skgprobust.pipeline", None),
        (5, "skgprobust._gpc", None),
    ]
    found = _imports("skgprobust.kernels", f, False, modules)
    assert sorted(found, key=str) == sorted(expected, key=str)


# --------------------------------------------------------------------------
# Light imports
# --------------------------------------------------------------------------


def _loaded_after(statement):
    """Top-level names of the modules loaded by ``statement`` in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    env = dict(os.environ)
    root = str(Path(skgprobust.__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return set(json.loads(res.stdout.strip().splitlines()[-1]))


def test_import_is_light():
    statement = "import " + ", ".join(PUBLIC_MODULES + tuple(sorted(SHIMS)))
    loaded = _loaded_after(statement)
    heavy = sorted(loaded.intersection(HEAVY))
    assert not heavy, f"importing the public modules imports {heavy}"
    if "pandas" in loaded:
        assert "pandas" in _loaded_after("import sklearn"), "importing skgprobust imports pandas"


# --------------------------------------------------------------------------
# Old documented import paths
# --------------------------------------------------------------------------


@pytest.mark.parametrize("modname", sorted(OLD_DOCUMENTED))
def test_old_documented_paths(modname):
    ns = {}
    names = OLD_DOCUMENTED[modname]
    exec(f"from {modname} import {', '.join(names)}", ns)
    mod = importlib.import_module(modname)
    for name in names:
        assert ns[name] is getattr(mod, name)
        if modname in SHIMS:
            assert name in mod.__all__, f"{modname}.__all__ lacks {name}"
        home = NEW_HOME.get(modname)
        if home is not None and name in importlib.import_module(home).__all__:
            assert ns[name] is getattr(importlib.import_module(home), name)


def test_explain_module_and_function():
    """``skgprobust.explain`` is the function; ``skgprobust.explain`` the old module
    still imports (from sys.modules)."""
    from skgprobust.explain import Explanation

    assert callable(skgprobust.explain) and not isinstance(skgprobust.explain, type(sys))
    assert Explanation is skgprobust.Explanation
    assert importlib.import_module("skgprobust.explain").Explanation is Explanation


def test_readme_margin_rtol():
    from skgprobust.bounds import margin_rtol

    assert margin_rtol(1000, 11) == pytest.approx((8 * 1011 + 256) * 2.0**-53)
