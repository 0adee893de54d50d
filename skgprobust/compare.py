"""Comparison with LIME.

Kept so that the import path documented in earlier releases keeps working;
new code should use ``skgprobust.inspection``.
"""

from .inspection import LimeComparison, compare_with_lime

__all__ = ["compare_with_lime", "LimeComparison"]
