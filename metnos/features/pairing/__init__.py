"""DM pairing (SPEC §4): unknown senders get a one-time code the owner approves."""

from metnos.features.pairing.codes import ALPHABET, CODE_LENGTH
from metnos.features.pairing.models import Device, PairedSender, PairingAttempt, PairingRequest
from metnos.features.pairing.service import (
    DEVICE_CHANNEL,
    OWNER_USER_ID,
    Admission,
    PairingCodeExpired,
    PairingCodeUnknown,
    PairingError,
    PairingLocked,
    PairingPersonUnknown,
    admit,
    approve,
    find_paired,
    list_paired,
    list_pending,
    paired_user,
    revoke,
)

__all__ = [
    "ALPHABET",
    "CODE_LENGTH",
    "Device",
    "DEVICE_CHANNEL",
    "OWNER_USER_ID",
    "Admission",
    "PairedSender",
    "PairingAttempt",
    "PairingCodeExpired",
    "PairingCodeUnknown",
    "PairingError",
    "PairingLocked",
    "PairingPersonUnknown",
    "PairingRequest",
    "admit",
    "approve",
    "find_paired",
    "list_paired",
    "list_pending",
    "paired_user",
    "revoke",
]
