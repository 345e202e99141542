"""Proposals Metnos makes on its own, the Vaglio they pass, and the owner's answer."""
