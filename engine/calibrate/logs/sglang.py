"""SGLang's ``Decode batch`` lines with ``accept len: M``: the mean acceptance length only."""

from __future__ import annotations

import re

from engine.calibrate.logs.printed import NUMBER, half_unit, read_number
from engine.calibrate.logs.window import Raw

_SGLANG = re.compile(r"Decode batch[.,].*?accept len:\s*" + NUMBER)


def decode_line(line: str, index: int) -> Raw | None:
    """A ``Decode batch`` line's window (line ``index``), or None when ``line`` is not one."""
    match = _SGLANG.search(line)
    if match is None:
        return None
    mean = match.group(1)
    return Raw("sglang", index, line, mean_length=read_number(mean), mean_step=half_unit(mean))
