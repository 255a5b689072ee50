"""Write examples/distributions.csv: target and draft distributions in the format
``acceptance.dist_file`` reads (engine/acceptance/dist_file.py), made by spectui itself from
its Zipf family, so that nothing is downloaded: 3 draft positions, 6 contexts each, a
vocabulary of 64 tokens; the targets' entropies spread from 1.5 to 4 bits, the drafts' logits
noisier at each deeper position (standard deviation 0.6, 0.9, 1.2).

    .venv/bin/python examples/make_distributions.py   # rewrites the file, byte for byte
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.acceptance import rules

VOCAB, POSITIONS, CONTEXTS = 64, 3, 6
OUT = Path(__file__).resolve().parent / "distributions.csv"


def table() -> list[str]:
    rng = np.random.default_rng(2028)
    entropies = np.linspace(1.5, 4.0, CONTEXTS)
    target = rules.zipf_logits(rules.zipf_exponent(entropies, VOCAB), VOCAB)
    noise = rng.standard_normal((CONTEXTS, VOCAB))
    lines = ["position,context,side," + ",".join(f"p{i}" for i in range(1, VOCAB + 1))]
    for position in range(1, POSITIONS + 1):
        draft = target + (0.3 + 0.3 * position) * noise
        for context in range(CONTEXTS):
            for side, logits in (("target", target), ("draft", draft)):
                probs = rules.softmax(logits[context : context + 1])[0]
                cells = ",".join(f"{p:.9g}" for p in probs)
                lines.append(f"{position},{context + 1},{side},{cells}")
    return lines


if __name__ == "__main__":
    OUT.write_text("\n".join(table()) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
