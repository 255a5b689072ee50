"""A serving simulator: requests arriving over time at a server that batches them
continuously and speculates (docs/model.md, "Serving under load").

It runs on the scenario's registered parts (the acceptance model of each request, the cost
model of each step, the shape's drafting) and adds what a server has and a scenario does
not: arrivals (:mod:`engine.serve.workload`), a scheduler like vLLM V1's with a KV cache
(:mod:`engine.serve.server`, :mod:`engine.serve.sim`), policies that pick each request's k
at the current load (:mod:`engine.serve.policies`), and per-request latencies summarised
with bounded memory (:mod:`engine.serve.metrics`). :mod:`engine.serve.load` runs levels of
load, policies and replications on common random numbers.
"""
