"""Latest-wins: the acceptance scenarios of SPEC §9.4 as pure state transitions."""

from __future__ import annotations

import pytest

from metnos.features.languages.state import LangEntry, align, assess, record_new

LANGS = ("en", "it", "fr")


def h(text: str) -> str:
    return f"h:{text}"


def aligned_en_it() -> dict[str, LangEntry]:
    return record_new({"en": h("en0"), "it": h("it0")}, "en")


def status(record: dict[str, LangEntry], **texts: str | None) -> dict[str, str]:
    current = {lang: (h(t) if t is not None else None) for lang, t in texts.items()}
    return dict(assess(record, current, ("en", "it"), "en").status)


def test_nothing_edited_is_synced() -> None:
    assert status(aligned_en_it(), en="en0", it="it0") == {"en": "source", "it": "synced"}


def test_editing_the_source_makes_the_translation_stale() -> None:
    assert status(aligned_en_it(), en="en1", it="it0") == {"en": "source", "it": "stale"}


def test_reverting_the_source_clears_staleness() -> None:
    record = aligned_en_it()
    assert status(record, en="en1", it="it0")["it"] == "stale"
    assert status(record, en="en0", it="it0")["it"] == "synced"


def test_revert_after_an_alignment_elsewhere_still_clears() -> None:
    # en edited, fr aligned to the new en (recorded), then en reverted: it is synced again
    record = record_new({"en": h("en0"), "it": h("it0"), "fr": h("fr0")}, "en")
    current = {"en": h("en1"), "it": h("it0"), "fr": h("fr1")}
    record = align(record, current, LANGS, "en", "fr", translated_by="wise:x")
    now = assess(record, current, LANGS, "en")
    assert dict(now.status) == {"en": "source", "it": "stale", "fr": "synced"}
    reverted = {**current, "en": h("en0")}
    now = assess(record, reverted, LANGS, "en")
    assert dict(now.status) == {"en": "source", "it": "synced", "fr": "stale"}


def test_editing_an_in_sync_translation_elects_it_source() -> None:
    record = aligned_en_it()
    now = assess(record, {"en": h("en0"), "it": h("it1")}, ("en", "it"), "en")
    assert now.source == "it" and dict(now.status) == {"en": "stale", "it": "source"}
    assert now.source_hash == h("it1") and now.needing_translation() == ["en"]


def test_retro_translation_then_alignment_then_revert() -> None:
    record = aligned_en_it()
    current = {"en": h("en0"), "it": h("it1")}
    record = align(record, current, ("en", "it"), "en", "en")  # en re-translated... same text
    assert record["it"].is_source and record["en"].source_hash == h("it1")
    # it reverted to it0 after en was aligned to it1: en is stale again
    now = assess(record, {"en": h("en0"), "it": h("it0")}, ("en", "it"), "en")
    assert dict(now.status) == {"en": "stale", "it": "source"}


def test_election_records_the_old_source_against_the_previous_text() -> None:
    record = aligned_en_it()
    record = align(record, {"en": h("en0"), "it": h("it1")}, ("en", "it"), "en", None)
    assert record["it"].is_source and record["en"].source_hash == h("it0")
    assert status(record, en="en0", it="it1") == {"en": "stale", "it": "source"}
    assert status(record, en="en0", it="it0") == {"en": "synced", "it": "source"}


def test_two_languages_edited_is_a_conflict() -> None:
    now = assess(aligned_en_it(), {"en": h("en1"), "it": h("it1")}, ("en", "it"), "en")
    assert now.conflict and now.source is None and now.needing_translation() == []
    assert sorted(now.in_conflict) == ["en", "it"]


def test_editing_a_stale_translation_is_a_conflict() -> None:
    record = record_new({"en": h("en0"), "it": h("it0"), "fr": h("fr0")}, "en")
    current = {"en": h("en1"), "it": h("it0"), "fr": h("fr1")}
    record = align(record, current, LANGS, "en", "fr")  # en1 recorded; it still stale
    now = assess(record, {**current, "it": h("it1")}, LANGS, "en")
    assert sorted(now.in_conflict) == ["en", "it"] and now.status["fr"] == "stale"


def test_aligning_one_side_of_a_conflict_lets_the_other_win() -> None:
    record, current = aligned_en_it(), {"en": h("en1"), "it": h("it1")}
    record = align(record, current, ("en", "it"), "en", "it")
    assert status(record, en="en1", it="it1") == {"en": "source", "it": "synced"}


def test_a_conflict_among_three_needs_a_named_winner() -> None:
    record = record_new({"en": h("en0"), "it": h("it0"), "fr": h("fr0")}, "en")
    current = {"en": h("en1"), "it": h("it1"), "fr": h("fr1")}
    with pytest.raises(ValueError, match="conflict"):
        align(record, current, LANGS, "en", "it")
    record = align(record, current, LANGS, "en", "it", source="fr")
    now = assess(record, current, LANGS, "en")
    assert dict(now.status) == {"en": "stale", "it": "synced", "fr": "source"}


def test_a_conflict_resolved_without_aligning() -> None:
    current = {"en": h("en1"), "it": h("it1")}
    record2 = align(aligned_en_it(), current, ("en", "it"), "en", None, source="it")
    assert status(record2, en="en1", it="it1") == {"en": "stale", "it": "source"}


def test_no_winner_can_be_forced_outside_a_conflict() -> None:
    with pytest.raises(ValueError, match="nothing is in conflict"):
        align(aligned_en_it(), {"en": h("en1"), "it": h("it0")}, ("en", "it"), "en", None,
              source="it")


def test_missing_and_untracked_languages() -> None:
    record = aligned_en_it()
    now = assess(record, {"en": h("en0"), "it": h("it0"), "fr": None}, LANGS, "en")
    assert now.status["fr"] == "missing" and now.needing_translation() == ["fr"]
    now = assess(record, {"en": h("en0"), "it": h("it0"), "fr": h("fr0")}, LANGS, "en")
    assert now.status["fr"] == "untracked"
    record = align(record, {"en": h("en0"), "it": h("it0"), "fr": h("fr0")}, LANGS, "en", "fr")
    now = assess(record, {"en": h("en0"), "it": h("it0"), "fr": h("fr0")}, LANGS, "en")
    assert dict(now.status) == {"en": "source", "it": "synced", "fr": "synced"}


def test_an_unrecorded_resource_is_implicitly_aligned_to_the_default_source() -> None:
    now = assess({}, {"en": h("a"), "it": h("b"), "fr": None}, LANGS, "en")
    assert not now.tracked and now.source == "en"
    assert dict(now.status) == {"en": "source", "it": "synced", "fr": "missing"}


def test_the_source_losing_its_text_hands_over_to_an_aligned_translation() -> None:
    now = assess(aligned_en_it(), {"en": None, "it": h("it0")}, ("en", "it"), "en")
    assert now.source == "it" and dict(now.status) == {"en": "missing", "it": "source"}


def test_entries_round_trip_through_json() -> None:
    record = aligned_en_it()
    assert {k: LangEntry.from_json(v.to_json()) for k, v in record.items()} == record
