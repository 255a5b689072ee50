"""K policies: how many tokens each cycle drafts.

One registered part per file (:mod:`engine.policies.base`); importing this package
registers the built-in ones, in the order every list shows them: fixed, hf_heuristic,
threshold, goodput, schedule, oracle.
"""

import importlib

# The built-in parts, each a file of this package that registers itself; imported in this
# order, the order every list shows them.
BUILT_IN = ("fixed", "hf_heuristic", "threshold", "goodput", "schedule", "oracle")
for _module in BUILT_IN:
    importlib.import_module(f"{__name__}.{_module}")
