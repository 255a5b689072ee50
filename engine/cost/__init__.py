"""Cost models: how long drafting and verifying take (docs/model.md, "Cost models").

Leaf modules, pure (numpy and the standard library only):

- ``specs``: hardware and model figures from the shipped ``data/*.toml``, merged with the
  user's ``$XDG_CONFIG_HOME/spectui/{hardware,models}.toml``.
- ``roofline``: the additive and max roofline pass times, and ``LinearCost``,
  ``RooflineCost``, ``RooflineMaxCost``.
- ``placement``: how each model runs over GPUs (``Run``), and the one check that a
  placement can exist (tp splits the heads, ep the experts, the weights fit), which every
  roofline scenario and a server's KV capacity pass.
- ``table``: ``TableCost`` from measured latencies (plain CSV, vLLM's dynamic speculative
  decoding profile).

Every cost model answers ``draft_us(k, B, L)`` and ``verify_us(w, B, L)`` in microseconds.
"""
