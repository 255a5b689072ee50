"""Calibration from serving logs: parse what vLLM, SGLang and llama.cpp print about speculative
decoding (:mod:`engine.calibrate.logs`) and fit the acceptance models to it.
"""
