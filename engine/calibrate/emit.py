"""The recommended K as each serving engine's settings (:func:`emit`), from
:func:`engine.calibrate.fit.recommend`; re-exported by :mod:`engine.calibrate.fit`."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING

from engine.calibrate import VLLM_METHODS

if TYPE_CHECKING:
    from engine.calibrate.calibration import Calibration, Recommendation

# Flags and fields, as each engine documents them:
# - vLLM: --speculative-config JSON with "method" and "num_speculative_tokens"
#   (docs.vllm.ai/en/latest/features/speculative_decoding/eagle/; SpeculativeMethod in
#   docs.vllm.ai/en/v0.12.0/api/vllm/config/speculative/: ngram, medusa, mlp_speculator,
#   draft_model, suffix, eagle, eagle3, mtp...).
# - SGLang: --speculative-algorithm (EAGLE, EAGLE3, STANDALONE, NGRAM),
#   --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens
#   (docs.sglang.io/docs/advanced_features/speculative_decoding); a chain of K drafts is
#   topk 1 with K + 1 draft tokens (the root and K).
# - llama.cpp: --draft-max N, --draft-min N, --draft-p-min P (common/arg.cpp; defaults
#   changed between versions: draft-min 0 or 5, draft-p-min 0.9, 0.75 or 0.0). A fixed K
#   is --draft-min 0 --draft-p-min 0: drafting never stops early on a low probability.
# - TensorRT-LLM: max_draft_len in the speculative_config of the LLM API / YAML
#   (nvidia.github.io/TensorRT-LLM/features/speculative-decoding.html).
_SGLANG_ALGORITHM = {
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "draft_model": "STANDALONE",
    "ngram": "NGRAM",
}


def emit(rec: Recommendation, cal: Calibration, method: str = "draft_model") -> dict[str, str]:
    """The recommended K as each engine's settings: ``vllm``, ``sglang``, ``llama.cpp``,
    ``tensorrt-llm`` (text to paste). ``method``: vLLM's speculative method name (eagle,
    eagle3, draft_model, ngram, mtp...), mapped to SGLang's algorithm where it has one.
    ``cal`` is the fit the recommendation came from (kept for settings that depend on it;
    none does yet: every engine here takes a fixed K). A command line's arguments are each
    quoted for a POSIX shell (the JSON serialised, then quoted once); ValueError for a
    ``method`` not in :data:`VLLM_METHODS`."""
    if method not in VLLM_METHODS:
        raise ValueError(f"method: expected one of {', '.join(VLLM_METHODS)}")
    k = int(rec.k)
    vllm = json.dumps({"method": method, "num_speculative_tokens": k})
    sglang = (
        f"--speculative-num-steps {k} --speculative-eagle-topk 1 "
        f"--speculative-num-draft-tokens {k + 1}"
    )
    algorithm = _SGLANG_ALGORITHM.get(method)
    if algorithm is not None:
        sglang = f"--speculative-algorithm {algorithm} " + sglang
    return {
        "vllm": f"--speculative-config {shlex.quote(vllm)}",
        "sglang": sglang,
        "llama.cpp": f"--draft-max {k} --draft-min 0 --draft-p-min 0",
        "tensorrt-llm": f"max_draft_len: {k}",
    }
