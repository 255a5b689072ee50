"""Acceptance models: how many drafted tokens a cycle accepts.

One registered part per file (:mod:`engine.acceptance.base`); importing this package
registers the built-in ones, in the order every list shows them: the original's three
(fixed, position_decay, entropy_aware), then per_position (a list of rates, what
calibration from logs gives), beta_round (a rate drawn per cycle), markov (a hidden
easy/hard regime kept across cycles) and confidence (a confidence q per token that the
draft sees).
"""

import importlib

# The built-in parts, each a file of this package that registers itself; imported in this
# order, the order every list shows them.
BUILT_IN = (
    "fixed",
    "position_decay",
    "entropy_aware",
    "per_position",
    "beta_round",
    "markov",
    "confidence",
    "distribution",
    "depth_rates",
)
for _module in BUILT_IN:
    importlib.import_module(f"{__name__}.{_module}")
