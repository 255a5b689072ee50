"""`spectui run` on a terminal: a long run shows its progress, and Ctrl-C ends it cleanly."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
import threading

LONG = ("--tokens-per-seq", "1000")


def test_long_run_shows_progress_and_ctrl_c_exits_with_130():
    main, child = pty.openpty()  # stderr on a terminal, as a person runs it
    proc = subprocess.Popen(
        # Long enough (about 70 s of CPU) that no load on the machine lets it end before the
        # Ctrl-C: at 128 tokens it took 9 s, and a loaded run ended before its SIGINT came.
        # (At 100,000 tokens a run under the load of two test suites took over 30 s to stop.)
        [sys.executable, "-m", "spectui", "run", "--n-sequences", "10000000", *LONG],
        stdout=subprocess.DEVNULL,
        stderr=child,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
        # Ctrl-C as a shell's child gets it: an ignored SIGINT is inherited across exec, and
        # an earlier test in the same test process sometimes leaves it ignored (the run then
        # went on to its end: exit 0, or past the wait).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(child)
    out = bytearray()
    counting = threading.Event()

    def read() -> None:  # everything the terminal receives, until the child closes it
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:
                return
            if not chunk:
                return
            out.extend(chunk)
            if re.search(rb"run: sequences.* [1-9][0-9]*/10000000", out):
                counting.set()  # the bar counts: it is past its first frame

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # Wait for the bar to count sequences (a condition, never a duration).
        assert counting.wait(60), bytes(out[-300:])
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    text = out.decode(errors="replace")
    assert "Traceback" not in text
    assert text.rstrip().endswith("interrupted")
