"""Executors of the synt's tests, signed for real with the home's key, and the model's answers
for a generation (a word counter): kinds of their own (`tst_*`) so the built-in pool never
closes the tests' needs by chance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from metnos.faces.registry import create_tables
from metnos.features.mnestoma.models import ProtoMnest
from metnos.features.synt.compose import Need
from metnos.features.synt.jobs import Job
from metnos.ground import keys
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import new_id
from metnos.ground.settings import Settings
from metnos.mechanisms.audit.log import audit_log_path, read_tail
from metnos.mechanisms.executors.registry import signatures_dir
from metnos.mechanisms.executors.signing import sign_executor, signature_path
from metnos.testing.llm_server import ScriptedLLM

ECHO = '''import json, sys
args = json.loads(sys.stdin.read() or "{}").get("args", {})
print(json.dumps({"ok": True, "result": {"out": str(args)}}))
'''


def manifest_toml(name: str, inputs: dict[str, str], outputs: dict[str, str], *,
                  risk: str = "low", description: str = "") -> str:
    """A valid manifest: `inputs` name → kind (required paths), `outputs` name → kind."""
    text = description or f"The test executor {name}."
    lines = [f'name = "{name}"', 'version = "0.1.0"', 'entry = "main.py"', f'risk = "{risk}"',
             "reversible = true", "side_effects = false", ""]
    for field, kind in inputs.items():
        lines += [f"[inputs.{field}]", 'type = "path"', 'access = "read"', "required = true",
                  f'kind = "{kind}"', 'description = { it = "Un file.", en = "A file." }', ""]
    for field, kind in outputs.items():
        lines += [f"[outputs.{field}]", 'type = "integer"' if kind == "tst_count" else
                  'type = "string"', f'kind = "{kind}"',
                  'description = { it = "Il risultato.", en = "The result." }', ""]
    lines += ["[description]", f'it = "{text}"', f'en = "{text}"', "", "[affinity]",
              'it = ["prova"]', 'en = ["test"]', "", "[utterances]", "it = []", "en = []", ""]
    return "\n".join(lines)


def install(settings: Settings, name: str, inputs: dict[str, str], outputs: dict[str, str],
            *, risk: str = "low", description: str = "", sign: bool = True) -> Path:
    """Write an executor into METNOS_HOME/executors and sign it with the instance key."""
    folder = settings.home / "executors" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.toml").write_text(
        manifest_toml(name, inputs, outputs, risk=risk, description=description))
    (folder / "main.py").write_text(ECHO)
    if sign:
        key = keys.load_private_key(settings.keys_dir, "executors")
        sign_executor(folder, key, signature_path(signatures_dir(settings), name))
    return folder


def install_scan_reader(settings: Settings) -> Engine:
    """Two signed executors that chain a scan into words (t_raster → t_reader); the engine."""
    install(settings, "t_raster", {"path": "tst_scan"}, {"image": "tst_picture"})
    install(settings, "t_reader", {"image": "tst_picture"}, {"text": "tst_words"})
    return engine_of(settings)


def last_audit(settings: Settings) -> tuple[str, str, str]:
    """(action, decision, reason) of the latest audit line."""
    line = read_tail(audit_log_path(settings), 1)[0]
    return line["action"], line["decision"], line["reason"]


def engine_of(settings: Settings) -> Engine:
    engine = make_engine(database_url(settings))
    create_tables(engine)
    return engine


def add_proto(engine: Engine, *, want: str, have_kind: str, want_kind: str, src: str = "",
              count: int = 5, status: str = "open") -> str:
    with db_session(engine) as db:
        row = ProtoMnest(src=src, want=want, have_kind=have_kind, want_kind=want_kind,
                         why="wanted it", count=count, status=status)
        db.add(row)
        db.flush()
        return row.id


def job_for(engine: Engine, proto_id: str, kind: str = "generate",
            fuses: tuple[str, ...] = ()) -> Job:
    """The job an accepted proposal about `proto_id` gives (its need is the proto's)."""
    row = proto(engine, proto_id)
    return Job(new_id(), kind, Need(row.src, row.want, row.have_kind, row.want_kind), row.why,
               row.id, fuses)


def proto(engine: Engine, proto_id: str) -> ProtoMnest:
    with db_session(engine) as db:
        row = db.get(ProtoMnest, proto_id)
        assert row is not None
        return row


COUNTER_MANIFEST = manifest_toml(
    "word_counter", {"path": "tst_note"}, {"words": "tst_count"},
    description="Count the words of a text file in the workspace.").replace(
    'en = []', 'en = ["count the words of {path}"]').replace(
    'it = []', 'it = ["conta le parole di {path}"]')

COUNTER_CODE = '''import sys

sys.path.append("/home/metnos/pylib")
from metnos_sandbox_protocol import serve


def run(args):
    with open(args["path"], encoding="utf-8") as fh:
        words = len(fh.read().split())
    return {"words": words + OFFSET}


if __name__ == "__main__":
    serve(run, {"path"})
'''  # as synt_code.j2 asks: the protocol through the helper the sandbox binds


COUNTER_CASES: list[dict[str, Any]] = [
    {"args": {"path": "notes/a.txt"}, "expect": {"words": 3},
     "files": {"notes/a.txt": "one two three"}},
    {"args": {"path": "b.txt"}, "expect": {"words": 0}, "files": {"b.txt": ""}}]


def script_generation(llm: ScriptedLLM, *, offset: int = 0, manifest: str = COUNTER_MANIFEST,
                      approve: bool = True, network: bool = False, code: str | None = None,
                      cases: list[dict[str, Any]] | None = None) -> None:
    """The model's six answers for the word counter (`offset` breaks its count); `network`,
    `code` and `cases` stand in for the spec's and profile's network, `main.py` and the
    tests (an adversarial candidate)."""
    answers: list[dict[str, Any]] = [
        {"name": "word_counter", "network": network,
         "description": {"it": "Conta le parole di un file.", "en": "Count a file's words."}},
        {"manifest_toml": manifest},
        {"read": ["workspace"], "write": [], "network": network, "timeout_s": 10,
         "memory_mb": 256},
        {"main_py": code or COUNTER_CODE.replace("OFFSET", str(offset))},
        {"cases": COUNTER_CASES if cases is None else cases},
        {"approve": approve, "notes": "Reads one file, writes nothing."},
    ]
    for answer in answers:
        llm.enqueue_text("```json\n" + json.dumps(answer) + "\n```")
