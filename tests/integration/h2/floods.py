#!/usr/bin/env python3
# Floods played with raw frames (hyperframe and hpack, python3-h2's own dependencies), each in one
# write after the preface; prints the error code of the GOAWAY the server answers with ("none" if
# it sends none).
# usage: floods.py PORT KIND [ROUNDS]
#   continuation   HEADERS without END_HEADERS, then CONTINUATION frames that never end the block
#   window_update  WINDOW_UPDATE(1) on the connection, for no DATA
#   settings       SETTINGS frames
#   empty_data     empty DATA frames without END_STREAM on an open stream
import socket
import struct
import sys

import hpack
from hyperframe.frame import ContinuationFrame, DataFrame, HeadersFrame, SettingsFrame, WindowUpdateFrame

port = int(sys.argv[1])
kind = sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 300
block = hpack.Encoder().encode([(":method", "GET"), (":path", "/plaintext"), (":scheme", "http"),
                                (":authority", "test")])
out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize()
if kind == "continuation":
    out += HeadersFrame(1, data=block, flags=["END_STREAM"]).serialize()
    field = hpack.Encoder().encode([("x-c", "continued")])
    out += b"".join(ContinuationFrame(1, data=field).serialize() for _ in range(rounds))
elif kind == "window_update":
    out += b"".join(WindowUpdateFrame(0, window_increment=1).serialize() for _ in range(rounds))
elif kind == "settings":
    out += b"".join(SettingsFrame(0, settings={SettingsFrame.MAX_CONCURRENT_STREAMS: 100}).serialize()
                    for _ in range(rounds))
elif kind == "empty_data":
    out += HeadersFrame(1, data=block, flags=["END_HEADERS"]).serialize()
    out += b"".join(DataFrame(1, data=b"").serialize() for _ in range(rounds))
else:
    sys.exit("unknown kind " + kind)
sock = socket.create_connection(("127.0.0.1", port))
sock.settimeout(20)
try:
    sock.sendall(out)
except OSError:
    pass
data = b""
while True:
    try:
        chunk = sock.recv(65536)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
code = None
at = 0
while at + 9 <= len(data):
    length = int.from_bytes(data[at:at + 3], "big")
    ftype = data[at + 3]
    if ftype == 7 and at + 9 + 8 <= len(data):
        code = struct.unpack(">I", data[at + 13:at + 17])[0]
    at += 9 + length
print(code if code is not None else "none")
