"""Intent accuracy of the embedded planner on the phrase bank (tests/phrases/<lang>.toml).

    .venv/bin/python bench/intents.py [--misses]

Prints, per language, the share of sentences given the right intent and arguments (sentences
whose executor is not installed are counted apart as pending), the same per intent, and the
sentences that reached a mutating executor or action they did not ask for (must be 0). Exits 1
when that count is not 0 or an accuracy is under the threshold of tests/phrases/test_bank.py.
Needs no database or server: hassil on the builtin manifests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.phrases.bank import LANGS, run  # noqa: E402
from tests.phrases.test_bank import THRESHOLD  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every missed sentence")
    shown_misses = parser.parse_args().misses
    failed = 0
    for lang in LANGS:
        report = run(lang)
        counted, pending = report.counted(), len(report.outcomes) - len(report.counted())
        right = sum(o.correct for o in counted)
        accuracy = report.accuracy()
        flag = "" if accuracy >= THRESHOLD else f"  UNDER {THRESHOLD:.0%}"
        print(f"[{lang}] intent accuracy {accuracy:.1%} ({right}/{len(counted)}, "
              f"{pending} pending){flag}")
        for intent, (good, total) in report.by_intent().items():
            print(f"    {intent:<24} {good:>3}/{total:<3} {good / total:.0%}")
        unasked = report.unasked_changes()
        print(f"    mutating tools reached unasked: {len(unasked)}")
        for outcome in unasked:
            print(f"      ! {outcome.text!r} → {outcome.got} {outcome.got_args}")
        if shown_misses:
            for outcome in report.outcomes:
                if not outcome.correct:
                    state = "pending" if outcome.pending else "miss"
                    print(f"      {state}: {outcome.text!r} expected {outcome.expected} "
                          f"{outcome.expected_args}, got {outcome.got} {outcome.got_args}")
        failed += bool(unasked) or accuracy < THRESHOLD
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
