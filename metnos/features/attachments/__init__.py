"""Photos and documents sent in the chat (web and Telegram): kept, filed by a turn, described
to the model as data (`store`); their kind decided from their bytes (`kinds`)."""

from metnos.features.attachments.models import Attachment
from metnos.features.attachments.store import (
    AttachmentRefused,
    Filed,
    file_all,
    keep,
    mark_filed,
    owned,
)

__all__ = ["Attachment", "AttachmentRefused", "Filed", "file_all", "keep", "mark_filed", "owned"]
