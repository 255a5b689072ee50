"""Draft shapes: what a cycle drafts, a chain or a token tree (engine.shapes.trees).

One registered part per file (:mod:`engine.shapes.base`); importing this package registers
the built-in ones: chain, tree.
"""

import importlib

# The built-in parts, each a file of this package that registers itself; imported in this
# order, the order every list shows them.
BUILT_IN = ("chain", "tree")
for _module in BUILT_IN:
    importlib.import_module(f"{__name__}.{_module}")
