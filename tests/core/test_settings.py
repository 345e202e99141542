"""Settings: environment over metnos.toml over defaults; bad values fail with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.ground.errors import ConfigError
from metnos.ground.settings import get_settings


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("METNOS_LANG", "METNOS_GATEWAY_PORT", "METNOS_LLM_MODEL",
                 "METNOS_POLICY_AUTONOMY", "METNOS_DATABASE_URL",
                 "LC_ALL", "LC_MESSAGES", "LANG"):  # the machine's language is the default's
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("METNOS_HOME", str(tmp_path))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_defaults(home: Path) -> None:
    s = get_settings()
    assert s.home == home and s.lang == "it"
    assert s.gateway.port == 42618 and s.gateway.host == "127.0.0.1"
    assert s.llm.model is None and s.policy.autonomy == "Supervised"
    assert s.workspace == home / "workspace" and s.audit_dir == home / "workspace" / ".audit"


def test_toml_then_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "metnos.toml").write_text(
        'lang = "en"\n[gateway]\nport = 5000\nmax_message_chars = 10\n[llm]\nmodel = "ollama/x"\n')
    s = get_settings()
    assert (s.lang, s.gateway.port, s.gateway.max_message_chars, s.llm.model) == (
        "en", 5000, 10, "ollama/x")
    get_settings.cache_clear()
    monkeypatch.setenv("METNOS_GATEWAY_PORT", "6000")
    monkeypatch.setenv("METNOS_LANG", "it")
    s = get_settings()
    assert (s.lang, s.gateway.port, s.gateway.max_message_chars) == ("it", 6000, 10)


@pytest.mark.parametrize("content, key", [
    ("[gateway\nport = 1\n", "ERR_CONFIG_TOML_INVALID"),
    ('[gateway]\nport = "abc"\n', "ERR_CONFIG_INVALID"),
    ('[gateway]\nhost = "0.0.0.0"\n', "ERR_CONFIG_INVALID"),
    ('[policy]\nautonomy = "Anything"\n', "ERR_CONFIG_INVALID"),
    ('[gateway]\nunknown = 1\n', "ERR_CONFIG_UNKNOWN_KEY"),
    ('gateway = 3\n', "ERR_CONFIG_TOML_INVALID"),
])
def test_bad_metnos_toml_is_a_clear_error(home: Path, content: str, key: str) -> None:
    (home / "metnos.toml").write_text(content)
    with pytest.raises(ConfigError) as info:
        get_settings()
    assert info.value.key == key
    message = i18n.message(info.value, "en")
    assert "metnos.toml" in message or ("gateway." in message or "policy." in message)


def test_the_household_time_zone(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from metnos.ground.settings import system_timezone

    monkeypatch.setenv("TZ", "America/New_York")
    assert system_timezone() == "America/New_York"  # the machine's, when nothing is set
    monkeypatch.setenv("METNOS_TIMEZONE", "Europe/Rome")
    get_settings.cache_clear()
    assert str(get_settings().tz) == "Europe/Rome"
    (home / "metnos.toml").write_text('timezone = "Asia/Tokyo"\n')
    monkeypatch.delenv("METNOS_TIMEZONE")
    get_settings.cache_clear()
    assert get_settings().timezone == "Asia/Tokyo"
    monkeypatch.setenv("METNOS_TIMEZONE", "Mars/Olympus")
    get_settings.cache_clear()
    with pytest.raises(ConfigError, match="timezone"):
        get_settings()


def test_every_group_reads_its_table_under_its_environment(home: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "metnos.toml").write_text('[reminders]\ndelivery_poll_s = 5\ntime_scale = 0.5\n')
    monkeypatch.setenv("METNOS_REMINDERS_TIME_SCALE", "0.25")
    get_settings.cache_clear()
    reminders = get_settings().reminders
    assert (reminders.delivery_poll_s, reminders.time_scale) == (5.0, 0.25)


@pytest.mark.parametrize(("content", "setting", "suggestion"), [
    ('[gatway]\nport = 5000\n', "gatway", "gateway"),
    ('[gateway]\ndrain_ss = 3\n', "gateway.drain_ss", "gateway.drain_s"),
    ('langg = "en"\n', "langg", "lang"),
    ('[llm]\nmodell = "ollama/x"\n', "llm.modell", "llm.model"),
])
def test_a_misspelled_key_is_named_with_the_closest_one(
        home: Path, content: str, setting: str, suggestion: str) -> None:
    """Issue 27, loose end: pydantic's "Extra inputs are not permitted" became plain words:
    the file, the key as written and the known key it is closest to, in the reader's
    language."""
    (home / "metnos.toml").write_text(content)
    with pytest.raises(ConfigError) as info:
        get_settings()
    assert info.value.key == "ERR_CONFIG_UNKNOWN_KEY_SUGGEST"
    assert info.value.vars == {"file": str(home / "metnos.toml"), "setting": setting,
                               "suggestion": suggestion}
    for lang in ("en", "it"):
        said = i18n.message(info.value, lang)
        assert str(home / "metnos.toml") in said and f"“{suggestion}”" in said
        assert "Extra inputs" not in said
    assert i18n.message(info.value, "it") != i18n.message(info.value, "en")


def test_a_key_like_none_lists_the_table_keys(home: Path) -> None:
    (home / "metnos.toml").write_text('[gateway]\nqqqqzz = 1\n')
    with pytest.raises(ConfigError) as info:
        get_settings()
    assert info.value.key == "ERR_CONFIG_UNKNOWN_KEY"
    assert "drain_s" in info.value.vars["known"] and "port" in info.value.vars["known"]


def test_broken_settings_are_said_in_the_machine_language(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from metnos.faces.cli._lang import cli_lang

    (home / "metnos.toml").write_text('[gateway]\ndrain_ss = 3\n')
    monkeypatch.setenv("LANG", "it_IT.UTF-8")
    with pytest.raises(ConfigError) as info:
        get_settings()
    assert i18n.message(info.value, cli_lang()).startswith(f"In {home / 'metnos.toml'}, “gateway")
    assert "Forse intendevi “gateway.drain_s”?" in i18n.message(info.value, cli_lang())
