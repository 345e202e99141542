"""Languages figures: staleness detection over 10,000 keys × 3 languages (target < 1 s) and
`i18n.get` lookups per second.

Run: `.venv/bin/python bench/i18n_sweep.py [--keys 10000] [--runs 5] [--lookups 200000]`.
Everything happens in a temporary resources folder and METNOS_HOME, removed at the end:
1. three catalogs (en, it, fr) of `--keys` messages each, recorded in sync, then 1% of the
   English texts edited;
2. *detection*: a fresh `MessagesLayer` reads the three TOML files and the state file, hashes
   every text and assesses every key (what `status` and the sweep do first); the median of
   `--runs` runs, and the assessment alone on loaded data;
3. *lookups*: `i18n.get` with `{name}` interpolation through the seeded i18n database, and
   from the files, per second.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import tomlkit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from metnos.features.languages.layer_messages import STATE_FILE, MessagesLayer  # noqa: E402
from metnos.features.languages.resources import write_json  # noqa: E402
from metnos.features.languages.state import record_new  # noqa: E402
from metnos.ground import i18n  # noqa: E402
from metnos.ground.i18n.store import MessageStore, read_catalogs  # noqa: E402
from metnos.ground.settings import get_settings  # noqa: E402

LANGS = ("en", "it", "fr")
WORDS = {"en": "the file {name} was moved to the folder",
         "it": "il file {name} è stato spostato nella cartella",
         "fr": "le fichier {name} a été déplacé dans le dossier"}


def build(root: Path, keys: int) -> list[str]:
    names = [f"MSG_BENCH_ITEM_{i:05d}" for i in range(keys)]
    for lang in LANGS:
        folder = root / "i18n" / lang
        folder.mkdir(parents=True)
        body = {name: f"{WORDS[lang]} {i}." for i, name in enumerate(names)}
        (folder / "bench.toml").write_text(tomlkit.dumps(body), encoding="utf-8")
    layer = MessagesLayer(root, _store(root), LANGS, "en")
    state = {name: {lang: e.to_json() for lang, e in
                    record_new(layer.hashes(name), "en").items()} for name in names}
    write_json(root / "i18n" / STATE_FILE, {"lang_state": state})
    edited = {name: f"{WORDS['en']} {i} (edited)." for i, name in enumerate(names)
              if i % 100 == 0}
    path = root / "i18n" / "en" / "bench.toml"
    body = {name: f"{WORDS['en']} {i}." for i, name in enumerate(names)} | edited
    path.write_text(tomlkit.dumps(body), encoding="utf-8")
    return names


def _store(root: Path) -> MessageStore:
    return MessageStore(root / "home" / "i18n.sqlite")


def detect(root: Path) -> tuple[float, float, int]:
    start = time.perf_counter()
    layer = MessagesLayer(root, _store(root), LANGS, "en")
    loaded = time.perf_counter()
    stale = sum(1 for name in layer.resources() if layer.assess(name).status.get("it") == "stale")
    done = time.perf_counter()
    return done - start, done - loaded, stale


def lookups(names: list[str], count: int) -> float:
    rng = random.Random(7)
    picks = [(rng.choice(names), rng.choice(LANGS)) for _ in range(1000)]
    start = time.perf_counter()
    for i in range(count):
        key, lang = picks[i % 1000]
        i18n.get(key, lang, name="notes.md")
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lookups", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="metnos-bench-i18n-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        os.environ["METNOS_HOME"] = str(root / "home")
        os.environ["METNOS_I18N_RESOURCES_DIR"] = str(root)
        os.environ["METNOS_I18N_LANGUAGES"] = '["it","en","fr"]'
        get_settings.cache_clear()
        names = build(root, args.keys)
        runs = [detect(root) for _ in range(args.runs)]
        whole = statistics.median(r[0] for r in runs)
        assess_only = statistics.median(r[1] for r in runs)
        print(f"staleness detection, {args.keys} keys x {len(LANGS)} languages "
              f"({runs[0][2]} stale found): whole median {whole * 1000:.0f} ms "
              f"(target < 1000), assessment alone {assess_only * 1000:.0f} ms")
        store = _store(root)
        store.seed(read_catalogs(root / "i18n"))
        i18n.use_store(store)
        with_store = lookups(names, args.lookups)
        i18n.use_store(None)
        from_files = lookups(names, args.lookups)
        print(f"i18n.get lookups/s: {with_store:,.0f} through the i18n database, "
              f"{from_files:,.0f} from the files")
        store.close()


if __name__ == "__main__":
    main()
