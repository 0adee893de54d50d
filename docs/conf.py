"""Sphinx configuration of the skgprobust documentation.

Build (from the repository root, after ``pip install ".[docs]"``)::

    sphinx-build -W -b html docs docs/_build/html

The gallery (``examples/plot_*.py``) is executed during the build by
sphinx-gallery; no network access is needed.
"""

import os
import sys
import warnings

import matplotlib
from threadpoolctl import threadpool_limits

matplotlib.use("Agg")

sys.path.insert(0, os.path.abspath(".."))  # an editable/installed package works too

import skgprobust  # noqa: E402

# The gallery runs in this process. Small GP fits are far slower with
# multithreaded BLAS on a busy machine (threads wait for cores): use one.
# threadpool_limits only reaches libraries already loaded, so this comes
# after importing skgprobust, which loads scipy's own OpenBLAS and
# scikit-learn's OpenMP runtime (numpy's OpenBLAS is a separate library).
_blas_limits = threadpool_limits(limits=1)

project = "skgprobust"
author = "skgprobust developers"
copyright = "skgprobust developers"
version = release = skgprobust.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb", "auto_examples/*.py"]
html_static_path = []
html_theme = "alabaster"
html_title = f"skgprobust {release}"

# autodoc / autosummary / numpydoc: the API page lists objects with autosummary
# tables and documents them on the same page (no generated stub files).
autosummary_generate = False
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False  # the class template lists our own methods
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

# sphinx-gallery: run every examples/plot_*.py, store the output in docs/auto_examples
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "plot_gallery": "True",
    "matplotlib_animations": False,
}



# Several objects are exported under two public paths (``skgprobust.certify``
# and ``skgprobust.pipeline.certify``); api.rst describes each once. A
# reference to another public path of a described object (the summary tables
# of api.rst, the user guide) is resolved to that description.
def _import_path(path):
    import importlib

    modname, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(modname), name)
    except (ImportError, AttributeError, ValueError):
        return None


def _resolve_public_alias(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target.startswith("skgprobust."):  # relative to the current module
        module = node.get("py:module")
        if not module or not module.startswith("skgprobust"):
            return None
        target = f"{module}.{target}"
    obj = _import_path(target)
    if obj is None or isinstance(obj, (str, int, float, tuple)):
        return None
    py = env.get_domain("py")
    for name, entry in py.objects.items():
        if (
            name != target
            and not entry.aliased
            and entry.objtype != "module"
            and not any(part.startswith("_") for part in name.split("."))
            and _import_path(name) is obj
        ):
            return py.resolve_xref(env, node["refdoc"], app.builder, "obj", name, node, contnode)
    return None


def setup(app):
    app.connect("missing-reference", _resolve_public_alias)


# Examples run with small budgets; budget warnings are expected and harmless.
warnings.filterwarnings("ignore", category=UserWarning, message=".*budget.*")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")
