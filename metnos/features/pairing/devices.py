"""Devices over the overlay (issue 30): the ceremony that admits a browser on a family
member's phone or laptop, and the credential it presents afterwards.

- `ask`: a browser that reached the exposed address asks to be let in. It gets a device row,
  a pairing request (channel `device`, the device id as its sender) whose code it shows, and
  its credential. The owner approves the code as any pairing code (`pairing.approve`, with
  the person it belongs to); nothing else makes a device admitted.
- The credential is `<device id>.<signature>`: the instance's `devices` key (Ed25519, under
  METNOS_HOME/keys, a forbidden path) signs `device|<id>|<address>`. Nobody makes one without
  that key, and one is worth something only from the address its device asked from (an
  overlay gives each device its own, stable address): another device's stolen cookie is
  refused.
- `check`: what a presented credential is worth, read from the database on every request
  (signature, row, address, pairing), so a revocation holds at the very next request. Every
  refusal of a credential leaves an audit line.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from cryptography.exceptions import InvalidSignature
from sqlmodel import Session, col, select

from metnos.features.pairing.models import Device, PairedSender, PairingRequest
from metnos.features.pairing.service import (
    DEVICE_CHANNEL,
    PairingError,
    admit,
    approve,
    drop,
    find_paired,
)
from metnos.ground import keys
from metnos.ground.db.models import new_id, utcnow
from metnos.ground.settings import PolicySettings
from metnos.mechanisms.audit import AuditLog

ACTION = "device"
KEY_PURPOSE = "devices"
_CREDENTIAL = re.compile(r"([0-9a-f-]{36})\.([A-Za-z0-9_-]{86})")
_SEEN_EVERY = timedelta(minutes=1)  # `last_seen_at` is written at most this often
MAX_LABEL = 60

Status = Literal["admitted", "pending", "refused"]


class DeviceRefused(PairingError):
    """The ceremony cannot start now (too many devices wait, or this one was dropped)."""

    key = "ERR_DEVICE_TOO_MANY_WAITING"


@dataclass(frozen=True)
class Asked:
    device_id: str
    code: str = field(repr=False)
    credential: str = field(repr=False)
    expires_at: datetime
    request_id: str


@dataclass(frozen=True)
class Presented:
    """`admitted`: the device is `user_id`'s (`role`). `pending`: it waits for the owner.
    `refused`: `reason` (an i18n key) says why; the caller answers as for no credential."""

    status: Status
    device_id: str | None = None
    user_id: str | None = None
    role: str | None = None
    reason: str | None = None


def ask(db: Session, *, label: str, address: str, user_agent: str, keys_dir: Path,
        settings: PolicySettings, audit: AuditLog | None = None,
        withdraw: str | None = None) -> Asked:
    """Start the ceremony for a browser at `address` (commits). A request still pending from
    that address (or the browser's own earlier one, `withdraw`) is dropped first: one device
    waits per address, so a peer cannot fill the queue alone."""
    label = clean_label(label)
    _withdraw(db, address, withdraw, audit)
    device_id = new_id()
    admission = admit(db, channel=DEVICE_CHANNEL, sender_id=device_id, settings=settings,
                      audit=audit)
    if admission.status != "code_sent" or admission.code is None:
        raise DeviceRefused()
    request = db.get(PairingRequest, admission.request_id)
    db.add(Device(id=device_id, label=label, address=address, user_agent=user_agent[:200]))
    db.commit()
    _audit(audit, sender=address, decision="info", reason="MSG_DEVICE_ASKED",
           outcome=f"asked {device_id} {label!r}", action_id=device_id)
    expires = request.expires_at if request is not None else utcnow()
    return Asked(device_id, admission.code, credential(keys_dir, device_id, address), expires,
                 admission.request_id or "")


def add(db: Session, *, label: str, address: str, approver: str, person: str | None,
        keys_dir: Path, settings: PolicySettings, audit: AuditLog | None = None) -> Asked:
    """A device the owner names from a trusted surface (an app with no browser for the
    ceremony: Open WebUI on a laptop, a phone client): asked and approved at once, with the
    same rules and audit lines as the ceremony; `person` as in `pairing.approve`."""
    asked = ask(db, label=label, address=address, user_agent="", keys_dir=keys_dir,
                settings=settings, audit=audit)
    approve(db, asked.code, approver=approver, settings=settings, audit=audit, person=person)
    return asked


def token_of(db: Session, device_id: str, keys_dir: Path) -> str | None:
    """An admitted device's token (its credential, for an app's `Authorization: Bearer`);
    None when it is not admitted."""
    device = db.get(Device, device_id)
    if device is None or find_paired(db, DEVICE_CHANNEL, device.id) is None:
        return None
    return credential(keys_dir, device.id, device.address)


def credential(keys_dir: Path, device_id: str, address: str) -> str:
    keys.ensure_keypair(keys_dir, KEY_PURPOSE)
    signature = keys.load_private_key(keys_dir, KEY_PURPOSE).sign(_signed(device_id, address))
    return f"{device_id}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def check(db: Session, presented: str | None, address: str, *, keys_dir: Path,
          audit: AuditLog | None = None, now: datetime | None = None) -> Presented:
    """What `presented` (the device cookie) is worth for a request from `address`."""
    match = _CREDENTIAL.fullmatch(presented or "")
    device = db.get(Device, match.group(1)) if match else None
    if match is None or device is None or not _signed_by_us(keys_dir, match, device.address):
        return _refused(audit, address, None, "ERR_DEVICE_CREDENTIAL_INVALID")
    if device.address != address:  # a cookie carried to another device
        return _refused(audit, address, device.id, "ERR_DEVICE_ADDRESS_MISMATCH")
    paired = find_paired(db, DEVICE_CHANNEL, device.id)
    if paired is not None:
        _seen(db, device, now or utcnow())
        return Presented("admitted", device.id, paired.user_id, paired.role)
    if _waiting(db, device.id, now or utcnow()):
        return Presented("pending", device.id)
    return _refused(audit, address, device.id, "ERR_DEVICE_REVOKED")


@dataclass(frozen=True)
class Listed:
    device: Device
    paired: PairedSender | None  # None: never approved, or revoked
    waiting: bool


def list_devices(db: Session) -> list[Listed]:
    """Every device that asked, newest first, with its pairing (approved, waiting, or not)."""
    now = utcnow()
    devices = db.exec(select(Device).order_by(col(Device.created_at).desc())).all()
    return [Listed(d, find_paired(db, DEVICE_CHANNEL, d.id), _waiting(db, d.id, now))
            for d in devices]


def clean_label(label: str) -> str:
    """The name a person gave the device, as plain one-line text (shown escaped anyway)."""
    kept = "".join(c if c.isprintable() else " " for c in label)
    return " ".join(kept.split())[:MAX_LABEL]


# -- private --------------------------------------------------------------------------------
def _signed(device_id: str, address: str) -> bytes:
    return f"device|{device_id}|{address}".encode()


def _signed_by_us(keys_dir: Path, match: re.Match[str], address: str) -> bool:
    try:
        signature = base64.urlsafe_b64decode(match.group(2) + "==")
        keys.load_public_key(keys_dir, KEY_PURPOSE).verify(
            signature, _signed(match.group(1), address))
    except (InvalidSignature, binascii.Error, ValueError, OSError):
        return False
    return True


def _waiting(db: Session, device_id: str, now: datetime) -> bool:
    query = select(PairingRequest.id).where(
        PairingRequest.channel == DEVICE_CHANNEL, PairingRequest.sender_id == device_id,
        PairingRequest.status == "pending", PairingRequest.expires_at > now)
    return db.exec(query).first() is not None


def _withdraw(db: Session, address: str, own: str | None, audit: AuditLog | None) -> None:
    now = utcnow()
    same_place = db.exec(select(Device.id).where(Device.address == address)).all()
    for device_id in {*same_place, *([own] if own else [])}:
        if _waiting(db, device_id, now):
            drop(db, channel=DEVICE_CHANNEL, sender_id=device_id, audit=audit, dropper=address)


def _seen(db: Session, device: Device, now: datetime) -> None:
    if device.last_seen_at is None or now - device.last_seen_at >= _SEEN_EVERY:
        device.last_seen_at = now
        db.add(device)
        db.commit()


def _refused(audit: AuditLog | None, address: str, device_id: str | None,
             reason: str) -> Presented:
    _audit(audit, sender=address, decision="deny", reason=reason, outcome="refused",
           action_id=device_id)
    return Presented("refused", device_id, reason=reason)


def _audit(audit: AuditLog | None, **fields: object) -> None:
    if audit is not None:
        audit.append(action=ACTION, channel=DEVICE_CHANNEL, **fields)
