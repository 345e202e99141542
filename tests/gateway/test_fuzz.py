"""schemathesis, an external fuzzer, against the gateway's own OpenAPI schema (issue 10 §4).

The real app (`create_app`, plain runner, the embedded PostgreSQL, the real sandbox) serves on
a loopback port under uvicorn; schemathesis reads the schema the gateway publishes to its
owner and sends a bounded number of generated requests per operation — valid and invalid
ones, with the owner's bearer token and without any credential, asking in Italian and in
English. Every response must pass schemathesis' checks (no 5xx; status code, content type,
headers and body as declared; invalid data refused), and every error must be the JSON error
body `{"error": {"key", "message"}}` (with `detail` for a refused body) with i18n keys whose
messages are in the asked language.
Generation is derandomised, so a run is the same every time. The WebSocket route is not in
the schema. Prints "operations N, cases M, failures F".
"""

from __future__ import annotations

import itertools
import re
import string
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from metnos.faces.gateway.app import create_app
from metnos.features import pairing
from metnos.features.pairing import devices
from metnos.features.pairing.service import OWNER_USER_ID
from metnos.features.proposals.store import Draft, submit
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.i18n.tags import match_language
from tests.support.home import Home, MakeHome, served_app
from tests.support.pg import free_port

MAX_EXAMPLES = 25  # per operation, credential and generation mode: ~2 minutes in all
LANGS = ("it", "en")
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance, negative_data_rejection]
HYPOTHESIS = settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                      derandomize=True, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))


@dataclass
class Tally:
    operations: int = 0
    cases: int = 0
    failures: list[str] = field(default_factory=list)


@pytest.fixture
def served_home(make_home: MakeHome) -> Iterator[tuple[Home, str]]:
    home = make_home(lang="en")
    with served_app(create_app(home.settings), free_port()) as base_url:
        yield home, base_url


def error_problems(response: requests.Response, lang: str) -> list[str]:
    """What is wrong with an error response: not our JSON body, or not in `lang`."""
    if response.status_code < 400:
        return []
    try:
        body = response.json()
    except ValueError:
        return [f"not JSON: {response.text[:200]!r}"]
    error = body.get("error") if isinstance(body, dict) else None
    if not (isinstance(error, dict) and set(error) - {"detail"} == {"key", "message"}
            and isinstance(error["key"], str) and isinstance(error["message"], str)):
        return [f"not the error body: {str(body)[:300]}"]
    problems = _message_problems(error["key"], error["message"], lang)
    detail = error.get("detail")
    if detail is not None:  # a refused body: each problem is a key and its message too
        if not (isinstance(detail, list) and detail and detail[0]["key"] == error["key"]):
            return [f"not the problems of a refused body: {str(detail)[:300]}"]
        for item in detail:
            problems += _message_problems(item["key"], item["message"], lang)
    return problems


def _message_problems(key: str, message: str, lang: str) -> list[str]:
    if any(key not in i18n.catalog(lang) for lang in LANGS):
        return [f"{key} is not an i18n key of every language"]
    template = i18n.catalog(lang)[key]
    if isinstance(template, str) and not _pattern(template).fullmatch(message):
        return [f"{key}: {message!r} is not the {lang} message {template!r}"]
    return []


def _first_failure(exc: FailureGroup | Failure) -> str:
    """The title and message of the first failure schemathesis reported (not the curl)."""
    failure = exc.exceptions[0] if isinstance(exc, FailureGroup) else exc
    return f"{failure.title}: {failure.message}"[:400].replace("\n", " ")


def _pattern(template: str) -> re.Pattern[str]:
    """`template` with each `{field}` as a wildcard."""
    parts = [re.escape(text) + (".*?" if name is not None else "")
             for text, name, _, _ in string.Formatter().parse(template)]
    return re.compile("".join(parts), re.DOTALL)


def fuzz(operation: Any, base_url: str, credential: dict[str, str], tally: Tally,
         path: dict[str, str] | None = None) -> None:
    """Bounded generated cases of one operation, each checked; failures are collected.
    `path` pins path parameters to real resources (otherwise they are generated too)."""
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        who = f"{mode.value}, {'owner' if credential else 'anonymous'}"
        check = _checker(base_url, credential, tally, who)
        strategy = operation.as_strategy(generation_mode=mode, path_parameters=path)
        try:
            HYPOTHESIS(given(case=strategy)(check))()
        except Unsatisfiable:  # nothing to negate (no parameters, no body): no negative case
            assert mode is GenerationMode.NEGATIVE, operation.label


def _checker(base_url: str, credential: dict[str, str], tally: Tally,
             who: str) -> Callable[[Case], None]:
    langs = itertools.cycle(LANGS)

    def check(case: Case) -> None:
        lang = next(langs)
        headers = {**credential, "Accept-Language": lang}
        response = case.call(base_url=base_url, headers=headers, timeout=60)
        tally.cases += 1
        problems = error_problems(response, _asked(case, lang))
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (FailureGroup, Failure) as exc:
            problems.append(_first_failure(exc))
        if problems:
            tally.failures.append(f"{case.method} {case.formatted_path} [{who}, {lang}] "
                                  f"-> {response.status_code}: {'; '.join(problems)}")

    return check


def _asked(case: Case, header: str) -> str:
    """The language an error must be in: the body's `lang` when it names an active
    language (issue 12), else the Accept-Language sent."""
    body = case.body if isinstance(case.body, dict) else {}
    tag = body.get("lang")
    return (match_language(tag, LANGS) if isinstance(tag, str) else None) or header


def seed(home: Home, base_url: str) -> dict[str, str]:
    """Real resources for the operations that take an id, made through the API (embedded
    planner, Supervised): a finished turn and its session, a write waiting for approval, an
    approved, executed write that can be undone, an evolution move and a proposal."""
    def ask(text: str) -> dict[str, Any]:
        resp = requests.post(f"{base_url}/api/turns", json={"text": text, "lang": "it"},
                             headers=home.auth(), timeout=120)
        assert resp.status_code == 200, resp.text
        body: dict[str, Any] = resp.json()
        assert body["status"] == "awaiting_approval", body
        return body

    waiting, done = ask("scrivi ciao nel file fuzz-a.txt"), ask("scrivi ciao nel file fuzz-b.txt")
    approve = requests.post(f"{base_url}/api/approvals/{done['approvals'][0]['approval_id']}",
                            json={"decision": "approve"}, headers=home.auth(), timeout=120)
    assert approve.status_code == 200, approve.text
    for _ in range(600):
        turn = requests.get(f"{base_url}/api/turns/{done['turn_id']}", headers=home.auth(),
                            timeout=60).json()
        if turn["status"] == "completed" and turn["finished_at"]:
            break
        time.sleep(0.1)
    assert (home.workspace / "fuzz-b.txt").read_text() == "ciao", turn
    [action_id] = [p.name for p in (home.settings.state_dir / "before").iterdir()]
    moved = requests.post(f"{base_url}/api/evolution/executors/fs_delete/quarantine",
                          json={"why": "fuzz"}, headers=home.auth(), timeout=60)
    assert moved.status_code == 200, moved.text
    engine = make_engine(database_url(home.settings))
    proposal = in_session(engine, submit, Draft(
        kind="archive", origin="ager", user_id=OWNER_USER_ID,
        title_key="MSG_EVOLUTION_PROPOSE_ARCHIVE", target="fs_delete",
        payload={"executor": "fs_delete"}))
    with db_session(engine) as db:  # a device admitted over the overlay
        asked = devices.ask(db, label="fuzz phone", address="100.64.0.9", user_agent="",
                            keys_dir=home.settings.keys_dir, settings=home.settings.policy)
        pairing.approve(db, asked.code, approver=OWNER_USER_ID, settings=home.settings.policy)
    engine.dispose()
    assert proposal is not None
    return {"turn_id": done["turn_id"], "session_id": done["session_id"],
            "approval_id": waiting["approvals"][0]["approval_id"], "action_id": action_id,
            "move_id": moved.json()["move"]["id"], "proposal_id": proposal.id,
            "name": "fs_delete", "move": "release", "answer": "dismiss", "decision": "reject",
            "device_id": asked.device_id}


def test_the_fuzzer_finds_no_failure(served_home: tuple[Home, str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    home, base_url = served_home
    anonymous = requests.get(f"{base_url}/openapi.json", headers={"Accept-Language": "it"},
                             timeout=30)
    assert anonymous.status_code == 401 and error_problems(anonymous, "it") == []
    raw = requests.get(f"{base_url}/openapi.json", headers=home.auth(), timeout=30)
    assert raw.status_code == 200, raw.text
    schema = schemathesis.openapi.from_dict(raw.json())
    real = seed(home, base_url)
    tally = Tally()
    for result in schema.get_all_operations():
        operation = result.ok()
        tally.operations += 1
        names = re.findall(r"{(\w+)}", operation.path)
        for credential in (home.auth(), {}):
            fuzz(operation, base_url, credential, tally)
            if names:  # and again on the real resource, the other parts generated
                fuzz(operation, base_url, credential, tally, {n: real[n] for n in names})
    with capsys.disabled():
        print(f"\nschemathesis: operations {tally.operations}, cases {tally.cases}, "
              f"failures {len(tally.failures)}")
    assert tally.operations >= 15 and tally.cases >= tally.operations * 4
    assert tally.failures == [], "\n".join(tally.failures[:40])
