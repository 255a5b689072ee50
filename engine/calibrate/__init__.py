"""Calibration from serving logs: parse what vLLM, SGLang and llama.cpp print about speculative
decoding (:mod:`engine.calibrate.logs`) and fit the acceptance models to it.
"""

# What engine.calibrate.fit.emit accepts as its method: vLLM's documented SpeculativeMethod names.
VLLM_METHODS = (
    "draft_model",
    "eagle",
    "eagle3",
    "mtp",
    "ngram",
    "medusa",
    "mlp_speculator",
    "suffix",
)
