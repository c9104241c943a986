"""grpcio's health client against a weft server: Check, then Watch across the server's SIGTERM.

Usage: health_client.py PORT SERVER_PID STUB_DIR. Prints one line per answer; the test compares them.
"""
import os
import signal
import sys

import grpc

port, server_pid, stubs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, stubs)
import health_pb2  # noqa: E402
import health_pb2_grpc  # noqa: E402

status_name = health_pb2.HealthCheckResponse.ServingStatus.Name

with grpc.insecure_channel("127.0.0.1:" + port) as channel:
    health = health_pb2_grpc.HealthStub(channel)
    print("check '':", status_name(health.Check(health_pb2.HealthCheckRequest(), timeout=30).status))
    try:
        health.Check(health_pb2.HealthCheckRequest(service="no.Such"), timeout=30)
        print("check no.Such: answered")
    except grpc.RpcError as e:
        print("check no.Such:", e.code().name)
    watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
    for i, response in enumerate(watch):
        print("watch:", status_name(response.status))
        if i == 0:
            os.kill(server_pid, signal.SIGTERM)  # the server drains
    print("watch ended:", watch.code().name)
