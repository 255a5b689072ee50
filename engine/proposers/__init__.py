"""Proposers: where a cycle's drafts come from (docs/model.md, "Proposers").

One registered part per file (:mod:`engine.proposers.base`); importing this package
registers the built-in ones: model (a draft model or head, today's), ngram (n-gram / prompt
lookup) and suffix (suffix decoding).
"""

import importlib

# The built-in parts, each a file of this package that registers itself; imported in this
# order, the order every list shows them.
BUILT_IN = ("model", "ngram", "suffix")
for _module in BUILT_IN:
    importlib.import_module(f"{__name__}.{_module}")
