"""Adversarial attacks.

Kept so that the import path documented in earlier releases keeps working;
new code should use ``skgprobust.inspection``.
"""

from .inspection import attack_succeeded, gpfgs, gpjm, pgd

__all__ = ["gpfgs", "gpjm", "pgd", "attack_succeeded"]
