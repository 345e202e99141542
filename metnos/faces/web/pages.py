"""The few HTML pages of the web login, in the request's language.

Plain, escaped markup with no script and no inline style, so the strict Content-Security-Policy
the gateway sets on HTML (`metnos.faces.gateway.security`) holds. The web chat's own pages (Jinja2
templates) replace `home` later; these stay for the login's outcomes.
"""

from __future__ import annotations

from html import escape

from metnos.ground import i18n


def login_invalid(lang: str) -> str:
    """A wrong, used, expired or missing link: one page for all, so none is revealed."""
    return _page(lang, "WEB_LOGIN_INVALID_TITLE", [i18n.get("WEB_LOGIN_INVALID_BODY", lang)])


def login_locked(lang: str, minutes: int) -> str:
    return _page(lang, "WEB_LOGIN_LOCKED_TITLE",
                 [i18n.get("WEB_LOGIN_LOCKED_BODY", lang, count=minutes)])


def login_confirm(lang: str, token: str) -> str:
    """A link followed from another site: one click on our own page logs in (a page elsewhere
    cannot make that click: framing is forbidden)."""
    form = ('<form method="get" action="/login">'
            f'<input type="hidden" name="token" value="{escape(token, quote=True)}">'
            f'<button type="submit">{escape(i18n.get("WEB_LOGIN_CONFIRM_BUTTON", lang))}</button>'
            '</form>')
    return _page(lang, "WEB_LOGIN_CONFIRM_TITLE", [i18n.get("WEB_LOGIN_CONFIRM_BODY", lang)],
                 form=form)


def logout_form(lang: str) -> str:
    return ('<form method="post" action="/api/logout">'
            f'<button type="submit">{escape(i18n.get("WEB_LOGOUT_BUTTON", lang))}</button>'
            '</form>')


def logged_out(lang: str) -> str:
    return _page(lang, "WEB_LOGGED_OUT_TITLE", [i18n.get("WEB_LOGGED_OUT_BODY", lang)])


def unauthorised(lang: str) -> str:
    return _page(lang, "WEB_UNAUTHORISED_TITLE", [i18n.get("WEB_UNAUTHORISED_BODY", lang)])


def _page(lang: str, title_key: str, paragraphs: list[str], *, form: str = "") -> str:
    title = escape(i18n.get(title_key, lang))
    body = "".join(f"<p>{escape(text)}</p>" for text in paragraphs)
    return ('<!doctype html>\n'
            f'<html lang="{escape(lang, quote=True)}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="referrer" content="no-referrer">'
            f'<title>{title}</title></head>'
            f'<body><main><h1>{title}</h1>{body}{form}</main></body></html>\n')
