#!/usr/bin/env python3
"""Python grpcio's side of the interop suite: grpc's interop cases (doc/interop-test-descriptions.md)
as a grpcio 1.51 client makes them, against an interop server (weft's). One line per case, exit
status 0 when every case passed. Stubs: protoc --python_out --grpc_python_out of
examples/grpc_interop/protos into STUBS (weft's test makes them). grpcio does not show a response's
compressed flag: server_compressed_unary checks the responses only.

  client.py STUBS --server_port=N --test_case=NAME|all [--use_tls=true --ca_file=PEM --server_host_override=NAME]
"""
import os
import queue
import sys

import grpc

# The stubs are modules of the package grpc.testing (the protos' package path): found in STUBS/grpc.
grpc.__path__.append(os.path.join(sys.argv[1], "grpc"))
from grpc.testing import empty_pb2, messages_pb2, test_pb2_grpc  # noqa: E402

REQUEST_BYTES = [27182, 8, 1828, 45904]
RESPONSE_BYTES = [31415, 9, 2653, 58979]
TRAILING = b"\xab\xab\xab"


def zeros(n):
    return messages_pb2.Payload(body=b"\0" * n)


def large_request(**fields):
    return messages_pb2.SimpleRequest(response_size=314159, payload=zeros(271828), **fields)


def streaming_request(response_bytes, request_bytes):
    return messages_pb2.StreamingOutputCallRequest(
        response_parameters=[messages_pb2.ResponseParameters(size=response_bytes)], payload=zeros(request_bytes))


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def expect_code(call_or_error, code):
    expect(call_or_error.code() == code, "status %s %r" % (call_or_error.code(), call_or_error.details()))


def run(stub, channel, name):
    if name == "empty_unary":
        expect(isinstance(stub.EmptyCall(empty_pb2.Empty()), empty_pb2.Empty), "no Empty")
    elif name == "large_unary":
        expect(stub.UnaryCall(large_request()).payload.body == b"\0" * 314159, "the payload")
    elif name == "client_streaming":
        requests = (messages_pb2.StreamingInputCallRequest(payload=zeros(n)) for n in REQUEST_BYTES)
        expect(stub.StreamingInputCall(requests).aggregated_payload_size == 74922, "aggregated_payload_size")
    elif name == "server_streaming":
        request = messages_pb2.StreamingOutputCallRequest(
            response_parameters=[messages_pb2.ResponseParameters(size=n) for n in RESPONSE_BYTES])
        sizes = [len(r.payload.body) for r in stub.StreamingOutputCall(request)]
        expect(sizes == RESPONSE_BYTES, "sizes %s" % sizes)
    elif name == "ping_pong":
        pending = queue.Queue()
        call = stub.FullDuplexCall(iter(pending.get, None))
        for response_bytes, request_bytes in zip(RESPONSE_BYTES, REQUEST_BYTES):
            pending.put(streaming_request(response_bytes, request_bytes))
            expect(len(next(call).payload.body) == response_bytes, "a response's size")
        pending.put(None)
        expect(next(call, None) is None, "a response after the last")
        expect_code(call, grpc.StatusCode.OK)
    elif name == "empty_stream":
        expect(list(stub.FullDuplexCall(iter([]))) == [], "a response")
    elif name == "custom_metadata":
        metadata = (("x-grpc-test-echo-initial", "test_initial_metadata_value"),
                    ("x-grpc-test-echo-trailing-bin", TRAILING))
        response, call = stub.UnaryCall.with_call(large_request(), metadata=metadata)
        expect(("x-grpc-test-echo-initial", "test_initial_metadata_value") in call.initial_metadata(),
               "UnaryCall: initial metadata")
        expect(("x-grpc-test-echo-trailing-bin", TRAILING) in call.trailing_metadata(), "UnaryCall: trailing metadata")
        call = stub.FullDuplexCall(iter([streaming_request(314159, 271828)]), metadata=metadata)
        expect([len(r.payload.body) for r in call] == [314159], "FullDuplexCall: the response")
        expect(("x-grpc-test-echo-initial", "test_initial_metadata_value") in call.initial_metadata(),
               "FullDuplexCall: initial metadata")
        expect(("x-grpc-test-echo-trailing-bin", TRAILING) in call.trailing_metadata(),
               "FullDuplexCall: trailing metadata")
    elif name in ("status_code_and_message", "special_status_message"):
        message = ("test status message" if name == "status_code_and_message" else
                   "\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n")
        status = messages_pb2.EchoStatus(code=2, message=message)
        try:
            stub.UnaryCall(messages_pb2.SimpleRequest(response_status=status))
            raise AssertionError("UnaryCall: OK")
        except grpc.RpcError as e:
            expect(e.code() == grpc.StatusCode.UNKNOWN and e.details() == message, "UnaryCall: %s" % e)
        if name == "status_code_and_message":
            call = stub.FullDuplexCall(iter([messages_pb2.StreamingOutputCallRequest(response_status=status)]))
            try:
                list(call)
            except grpc.RpcError:
                pass
            expect(call.code() == grpc.StatusCode.UNKNOWN and call.details() == message, "FullDuplexCall")
    elif name in ("unimplemented_method", "unimplemented_service"):
        target = stub if name == "unimplemented_method" else test_pb2_grpc.UnimplementedServiceStub(channel)
        try:
            target.UnimplementedCall(empty_pb2.Empty())
            raise AssertionError("OK")
        except grpc.RpcError as e:
            expect_code(e, grpc.StatusCode.UNIMPLEMENTED)
    elif name == "cancel_after_begin":
        pending = queue.Queue()  # nothing sent until the end
        future = stub.StreamingInputCall.future(iter(pending.get, None))
        future.cancel()
        pending.put(None)
        expect(future.cancelled(), "not cancelled")
    elif name == "cancel_after_first_response":
        pending = queue.Queue()
        pending.put(streaming_request(31415, 27182))
        call = stub.FullDuplexCall(iter(pending.get, None))
        expect(len(next(call).payload.body) == 31415, "the first response")
        call.cancel()
        pending.put(None)
        expect_code(call, grpc.StatusCode.CANCELLED)
    elif name == "timeout_on_sleeping_server":
        pending = queue.Queue()  # one request, and no half-close: the server waits for more
        pending.put(messages_pb2.StreamingOutputCallRequest(payload=zeros(27182)))
        call = stub.FullDuplexCall(iter(pending.get, None), timeout=0.001)
        try:
            list(call)
        except grpc.RpcError:
            pass
        pending.put(None)
        expect_code(call, grpc.StatusCode.DEADLINE_EXCEEDED)
    elif name == "client_compressed_unary":
        try:
            stub.UnaryCall(large_request(expect_compressed=messages_pb2.BoolValue(value=True)))
            raise AssertionError("the probe: OK")
        except grpc.RpcError as e:
            expect_code(e, grpc.StatusCode.INVALID_ARGUMENT)
        for compressed in (True, False):
            request = large_request(expect_compressed=messages_pb2.BoolValue(value=compressed))
            compression = grpc.Compression.Gzip if compressed else grpc.Compression.NoCompression
            expect(stub.UnaryCall(request, compression=compression).payload.body == b"\0" * 314159, "the payload")
    elif name == "server_compressed_unary":
        for compressed in (True, False):
            request = large_request(response_compressed=messages_pb2.BoolValue(value=compressed))
            expect(stub.UnaryCall(request).payload.body == b"\0" * 314159, "the payload")
    else:
        raise KeyError(name)


CASES = ["empty_unary", "large_unary", "client_streaming", "server_streaming", "ping_pong", "empty_stream",
         "custom_metadata", "status_code_and_message", "special_status_message", "unimplemented_method",
         "unimplemented_service", "cancel_after_begin", "cancel_after_first_response", "timeout_on_sleeping_server",
         "client_compressed_unary", "server_compressed_unary"]


def main():
    flags = dict(a[2:].split("=", 1) for a in sys.argv[2:] if a.startswith("--") and "=" in a)
    test_case = flags.get("test_case", "all")
    cases = CASES if test_case == "all" else [c for c in CASES if c == test_case]
    if not cases:
        print("unknown test case %s" % test_case, file=sys.stderr)
        return 2
    failed = 0
    target = "127.0.0.1:%s" % flags.get("server_port", "10000")
    if flags.get("use_tls") == "true":
        with open(flags["ca_file"], "rb") as ca:
            credentials = grpc.ssl_channel_credentials(root_certificates=ca.read())
        override = (("grpc.ssl_target_name_override", flags.get("server_host_override", "localhost")),)
        channel = grpc.secure_channel(target, credentials, options=override)
    else:
        channel = grpc.insecure_channel(target)
    with channel:
        stub = test_pb2_grpc.TestServiceStub(channel)
        for name in cases:
            try:
                run(stub, channel, name)
                print("%s: passed" % name, flush=True)
            except Exception as e:  # noqa: BLE001 - a case's failure, whatever it is
                print("%s: FAILED: %s" % (name, e), flush=True)
                failed += 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
