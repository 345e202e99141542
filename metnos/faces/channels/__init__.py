"""Chat channels that run inside the gateway process (SPEC §11): Telegram.

Every channel opens turns through the same turn handle (`metnos.turns.handle.TurnHandle`)
and runner the HTTP API uses, and renders its messages from Jinja2 templates per language
(`metnos.faces.channels.render`).
"""
