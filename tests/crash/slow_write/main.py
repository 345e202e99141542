"""slow_write (crash tests only): write a file in place, pausing before and half-way.

Not atomic on purpose: killed half-way, it leaves the file torn, the worst case an undo must
repair. Protocol as every executor: {"args": ...} on stdin, one JSON object on stdout.
"""

import json
import os
import sys
import time

args = json.loads(sys.stdin.read())["args"]
time.sleep(float(args.get("pause_before") or 0))
data = args["content"].encode("utf-8")
half = len(data) // 2
fd = os.open(args["path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, data[:half])
os.fsync(fd)
time.sleep(float(args.get("pause_middle") or 0))
os.write(fd, data[half:])
os.fsync(fd)
os.close(fd)
print(json.dumps({"ok": True, "result": {"path": args["path"], "bytes_written": len(data)}}))
