"""The web login of the gateway (SPEC §3): one-time login links and cookie sessions.

`metnos login` writes a login token straight into the database (`service.issue_login_token`);
`GET /login?token=...` trades it for a web session (`service.redeem`), whose cookie then
authenticates the browser as the owner (`service.session_owner`). Only SHA-256 digests of the
token and of the session id are stored.
"""
