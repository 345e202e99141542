"""The policy (SPEC §4): forbidden paths, argument checks, the autonomy × risk decision."""

from metnos.mechanisms.policy.args import json_schema, resolve_path_args, validate_args
from metnos.mechanisms.policy.decide import AUTONOMY_LEVELS, RISKS, Decision, decide
from metnos.mechanisms.policy.paths import forbidden_roots, printable, resolve_in_workspace

__all__ = [
    "AUTONOMY_LEVELS",
    "RISKS",
    "Decision",
    "decide",
    "forbidden_roots",
    "json_schema",
    "printable",
    "resolve_in_workspace",
    "resolve_path_args",
    "validate_args",
]
