"""Print bench figures against their targets; the exit code says whether one was missed."""

from __future__ import annotations

from collections.abc import Iterable

UNITS = {"ms": (1000.0, "{:.1f}", "{:.0f}"), "s": (1.0, "{:.2f}", "{:g}"),
         "x": (1.0, "{:.2f}", "{:g}")}  # x: a ratio


def report(figures: Iterable[tuple[str, float, float]], *, unit: str = "ms",
           prefix: str = "") -> int:
    """One line per (name, median seconds (or ratio), target); 1 when any median missed."""
    scale, value_fmt, target_fmt = UNITS[unit]
    missed = 0
    for name, seconds, target in figures:
        ok = seconds < target
        missed += not ok
        shown = "" if unit == "x" else f" {unit}"
        print(f"{prefix}{name}: median {value_fmt.format(seconds * scale)}{shown} "
              f"(target < {target_fmt.format(target * scale)}{shown}){'' if ok else '  MISSED'}")
    return 1 if missed else 0
