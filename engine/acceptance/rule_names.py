"""The names the distribution model (engine.acceptance.distribution) and its arithmetic
(engine.acceptance.rules) share: the acceptance rules and the draft's mismatches.

A leaf of its own, without numpy: the model's module loads with the parts' registry
(engine/__init__.py) and must not load numpy, and the rules' module computes with it; both
import these names from here (each still exports them, where they were read before).
"""

from __future__ import annotations

RULES = ("rejection", "one_hot", "exact_match", "greedy", "typical")
MISMATCHES = ("temperature", "noise", "truncation")
