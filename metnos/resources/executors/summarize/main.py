"""summarize: two lines per message worth attention, extractive (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
No network, no files. `messages` is a JSON array of {"uid", "from", "subject", "snippet"}
(mail headers and a snippet: untrusted data). Each message gets two lines: the sender and
the subject, then the first meaningful sentence of the snippet, cut; control characters and
chat-template tokens are stripped. The host may have the `fast` model rewrite them
(`metnos.features.mail.summary`, the manifest's effect "summarize"); these lines are its fallback.
"""

import json
import re
import sys
import unicodedata

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import Refused, serve  # noqa: E402

MAX_STDIN = 256 << 10
MAX_MESSAGES = 50
MAX_LINE = 160
MAX_FIELD = 2000
ARGS = {"messages"}
# chat-template and role tokens a model could read as structure ("<|im_start|>", "[INST]"...)
TOKENS = re.compile(r"<\|[^<>|]{0,40}\|>|</?s>|\[/?INST\]|<</?SYS>>|</?(start|end)_of_turn>"
                    r"|^\s*#{1,6}\s*(system|assistant|user)\b:?", re.IGNORECASE | re.MULTILINE)
GREETING = re.compile(r"^(ciao|salve|buongiorno|buonasera|gentile|caro|cara|egregio|hi|hello|"
                      r"hey|dear|good (morning|afternoon|evening))\b[^.!?]{0,40}[,!:]?$",
                      re.IGNORECASE)
GREETING_START = re.compile(r"^(ciao|salve|buongiorno|buonasera|gentile|caro|cara|hi|hello|"
                            r"hey|dear)\b[^.!?,:]{0,30}[,!:]\s+", re.IGNORECASE)
SENTENCE = re.compile(r"(.+?[.!?])(\s|$)")
ADDRESS = re.compile(r"<([^<>@\s]+@[^<>\s]+)>")


def clean(text):
    """One line of plain text: no control or format characters, no template tokens."""
    text = TOKENS.sub(" ", str(text)[:MAX_FIELD])
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
                   for c in text)
    return " ".join(TOKENS.sub(" ", text).split())


def cut(text, limit=MAX_LINE):
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:") + "…"


def sender(raw):
    """The sender as a person names them: the display name, else the address."""
    raw = clean(raw)
    found = ADDRESS.search(raw)
    name = ADDRESS.sub("", raw).strip().strip('"').strip()
    return name or (found.group(1) if found else raw) or "?"


def first_sentence(snippet):
    """The first line of the snippet that says something (no greeting, no quote), its first
    sentence."""
    for line in str(snippet)[:MAX_FIELD * 2].splitlines():
        line = clean(line)
        if not line or line.startswith(">") or GREETING.match(line) or len(line) < 3:
            continue
        line = GREETING_START.sub("", line, count=1)
        found = SENTENCE.match(line)
        return cut(found.group(1) if found else line)
    return ""


def lines_of(message):
    who, subject = sender(message.get("from", "")), clean(message.get("subject", ""))
    first = cut(f"{who}: {subject}" if subject else who)
    second = first_sentence(message.get("snippet", "")) or "…"
    return [first, second]


def run(args):
    try:
        messages = json.loads(args.get("messages") or "")
    except (TypeError, ValueError):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="messages") from None
    if not isinstance(messages, list) or len(messages) > MAX_MESSAGES:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="messages")
    summaries, seen = [], set()
    for message in messages:
        uid = message.get("uid") if isinstance(message, dict) else None
        if not isinstance(uid, int) or isinstance(uid, bool) or uid < 1 or uid in seen:
            raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="messages")
        seen.add(uid)
        summaries.append({"uid": uid, "lines": lines_of(message)})
    return {"summaries": summaries}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN)
