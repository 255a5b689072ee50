"""Bounded work on hostile sizes (issue 23): a huge log, a deep tree run, SIGTERM to a served app.

    .venv/bin/python benchmarks/bench_hostile.py [--log-mb 100,400] [--tokens 1000000] [--quick]

Each figure is measured in this run, each command in a fresh process:

- ``spectui calibrate`` on generated logs of each size in ``--log-mb``, in three formats: vLLM
  V1 metrics lines (per-position counts), SGLang ``accept len`` lines (M only) and a mix of
  SGLang, llama.cpp per-request and rejected vLLM lines. Peak resident memory
  (``ru_maxrss`` from ``os.wait4``), wall time and MB/s: memory should stay flat in the size
  and time grow linearly. The log is written once per size and format, then read.
- ``spectui run --shape tree --tree chain:1024 --tokens-per-seq N --n-sequences 1``, the
  issue's run that passed 3 GB: peak memory and time.
- ``spectui regime`` at the largest map it accepts (64 batch sizes x 56 contexts, K max
  1,024): peak memory and time.
- ``spectui serve`` on 127.0.0.1 with a browser connected over its websocket (aiohttp): the
  time from SIGTERM until the server, its app and every child are gone (promise: 5 s).

``--quick`` runs tiny sizes in seconds (the figures mean nothing then).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _v1_line(i: int) -> str:
    drafts = 100 + i % 37
    counts = (60 + i % 29, 35 + i % 17, 20 + i % 11)
    accepted = sum(counts)
    rates = ", ".join(f"{c / drafts:.3f}" for c in counts)
    return (
        "INFO 07-15 10:00:00 [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: "
        f"{100 * accepted / (3 * drafts):.1f}%, Mean acceptance length: "
        f"{1 + accepted / drafts:.2f}, Accepted: {accepted} tokens, Drafted: {3 * drafts} "
        f"tokens, Per-position acceptance rate: {rates}\n"
    )


def _sglang_line(i: int) -> str:
    return (
        "[2025-07-15 10:00:00] Decode batch. #running-req: 12, #token: 4096, token usage: 0.02, "
        f"accept len: {2 + (i % 50) / 100:.2f}, gen throughput (token/s): 512.00, #queue-req: 0\n"
    )


def _mixed_line(i: int) -> str:
    if i % 3 == 0:
        return _sglang_line(i)
    if i % 3 == 1:
        return "draft acceptance rate = 0.57534 (  420 accepted /   730 generated)\n"
    return _v1_line(i).replace("Accepted: ", "Accepted: 1")  # counts that disagree: rejected


FORMATS = {"vllm-v1": _v1_line, "sglang": _sglang_line, "mixed": _mixed_line}


def write_log(path: Path, megabytes: float, line_of) -> int:
    """Lines of ``line_of(i)`` until the file has ``megabytes`` MB; the lines written."""
    size, target, i = 0, int(megabytes * 1e6), 0
    with path.open("w") as out:
        while size < target:
            chunk = "".join(line_of(i + j) for j in range(1000))
            out.write(chunk)
            size += len(chunk)
            i += 1000
    return i


def measure(args: list[str], timeout: float = 3600) -> tuple[float, float, int, str]:
    """Run ``spectui ARGS`` in a fresh process: (seconds, peak RSS MiB, exit code, stderr)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "spectui", *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=REPO,
        )
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                _, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return time.perf_counter() - start, usage.ru_maxrss / 1024, process.returncode, stderr


def bench_logs(sizes: list[float], folder: Path) -> Iterator[str]:
    yield "calibrate on generated logs (peak RSS of the calibrate process):"
    yield f"  {'format':<8} {'MB':>7} {'lines':>11} {'seconds':>9} {'MB/s':>7} {'peak MiB':>9}"
    for name, line_of in FORMATS.items():
        for megabytes in sizes:
            log = folder / f"{name}.log"
            lines = write_log(log, megabytes, line_of)
            extra = ["--log-k", "3"] if name != "vllm-v1" else []
            seconds, peak, code, err = measure(["calibrate", str(log), *extra])
            log.unlink()
            status = "" if code == 0 else f"  exit {code}: {err.strip().splitlines()[-1:]}"
            yield (
                f"  {name:<8} {megabytes:>7g} {lines:>11,} {seconds:>9.1f} "
                f"{megabytes / seconds:>7.1f} {peak:>9.0f}{status}"
            )


def bench_tree(tokens: int) -> Iterator[str]:
    args = ["run", "--shape", "tree", "--tree", "chain:1024", "--tokens-per-seq", str(tokens)]
    args += ["--n-sequences", "1"]
    seconds, peak, code, err = measure(args)
    status = "" if code == 0 else f" (exit {code}: {err.strip().splitlines()[-1:]})"
    yield f"spectui {' '.join(args)}"
    yield f"  {seconds:.1f} s, peak {peak:.0f} MiB{status}"


def bench_regime(batches: int, contexts: int) -> Iterator[str]:
    """The regime map of ``batches`` x ``contexts`` cells at K max 1,024 (at the defaults'
    128 tokens: 3,584 cells x 1,154 values, just under engine.analysis.regime.MAP_VALUES_MAX)."""
    args = ["regime", "--batch-sizes", ",".join(str(b) for b in range(1, batches + 1))]
    args += ["--contexts", ",".join(f"{c}k" for c in range(1, contexts + 1)), "--k-max", "1024"]
    seconds, peak, code, err = measure(args)
    status = "" if code == 0 else f" (exit {code}: {err.strip().splitlines()[-1:]})"
    yield f"spectui regime: {batches} batch sizes x {contexts} contexts, K max 1,024"
    yield f"  {seconds:.1f} s, peak {peak:.0f} MiB{status}"


def bench_sigterm() -> Iterator[str]:
    """SIGTERM to `spectui serve` while a browser holds its websocket open."""
    import aiohttp

    from tests.hostile.test_serve_hostile import (
        _Family,
        _free_port,
        _start_serve,
        _stop,
        open_app,
    )

    server, url = _start_serve(_free_port())
    family = _Family(server.pid)
    took: list[float] = []

    async def browse() -> None:
        async with aiohttp.ClientSession() as session:
            ws = await open_app(session, url)  # the browser stays: it neither reads nor closes
            processes = len(family.alive())
            start = time.perf_counter()
            server.send_signal(signal.SIGTERM)
            while family.alive() and time.perf_counter() - start < 30:
                await asyncio.sleep(0.01)
            took.append(time.perf_counter() - start)
            took.append(processes)
            await ws.close()

    try:
        asyncio.run(browse())
    finally:
        for pid in family.alive():
            os.kill(pid, signal.SIGKILL)
        _stop(server)
    yield "spectui serve, a browser connected, then SIGTERM to the server:"
    yield f"  {took[0]:.2f} s until all {took[1]:.0f} processes were gone (promise: 5 s)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-mb", default="100,400", help="log sizes in MB, comma-separated")
    parser.add_argument("--tokens", type=int, default=1_000_000, help="the tree run's tokens")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: seconds, no figures")
    parser.add_argument("--skip-serve", action="store_true", help="no serve measurement")
    args = parser.parse_args(argv)
    sizes = [0.2] if args.quick else [float(s) for s in args.log_mb.split(",")]
    tokens = 2_000 if args.quick else args.tokens
    print(f"bench_hostile{' --quick (figures mean nothing)' if args.quick else ''}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for line in bench_logs(sizes, Path(folder)):
            print(line, flush=True)
    for line in bench_tree(tokens):
        print(line, flush=True)
    for line in bench_regime(*((2, 2) if args.quick else (64, 56))):
        print(line, flush=True)
    if not args.skip_serve:
        for line in bench_sigterm():
            print(line, flush=True)


if __name__ == "__main__":
    main()
