"""grpcio (Python) as a reflection client of a weft server: python3 reflection_client.py GEN_DIR PORT.

GEN_DIR holds reflection_pb2*.py, generated from reflection.proto by the test. Prints one line per
check that failed, then "OK" when none did; exits 0 either way unless the call itself failed.
"""
import sys

import grpc
from google.protobuf import descriptor_pb2

sys.path.insert(0, sys.argv[1])
import reflection_pb2  # noqa: E402
import reflection_pb2_grpc  # noqa: E402

Request = reflection_pb2.ServerReflectionRequest


def main():
    channel = grpc.insecure_channel("127.0.0.1:" + sys.argv[2])
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    requests = [
        Request(list_services=""),
        Request(file_containing_symbol="weft_test.shapes.Shapes.Double"),
        Request(file_by_filename="weft_test/notes.proto"),
        Request(file_containing_symbol="no.such.Symbol"),
        Request(file_containing_extension=reflection_pb2.ExtensionRequest(
            containing_type="weft_test.shapes.Number", extension_number=99)),
        Request(all_extension_numbers_of_type="weft_test.shapes.Number"),
    ]
    responses = list(stub.ServerReflectionInfo(iter(requests), timeout=60))
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    check(len(responses) == len(requests), "%d responses to %d requests" % (len(responses), len(requests)))
    for i, response in enumerate(responses):
        check(response.original_request == requests[i], "response %d does not echo its request" % i)
    listed = sorted(s.name for s in responses[0].list_services_response.service)
    # weft_test.shapes.Empty has no methods: not listed (nor by grpc++, which names a service by its methods).
    check(listed == ["PlainPinger", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection",
                     "weft_test.shapes.Shapes"], "list_services: %s" % listed)
    files = [descriptor_pb2.FileDescriptorProto.FromString(b)
             for b in responses[1].file_descriptor_response.file_descriptor_proto]
    names = [f.name for f in files]
    check(names == ["weft_test/shapes.proto", "weft_test/notes.proto"], "file_containing_symbol: files %s" % names)
    if files:
        shapes = [s for s in files[0].service if s.name == "Shapes"]
        methods = [(m.name, m.client_streaming, m.server_streaming) for m in shapes[0].method] if shapes else []
        check(("Shout", True, True) in methods and ("Count", False, True) in methods and len(methods) == 6,
              "file_containing_symbol: Shapes' methods %s" % methods)
        check(list(files[0].dependency) == ["weft_test/notes.proto"], "dependencies %s" % list(files[0].dependency))
    # Sent on this stream already: an empty list, as grpc++ answers.
    check(responses[2].HasField("file_descriptor_response") and
          not responses[2].file_descriptor_response.file_descriptor_proto, "file_by_filename of a file sent already")
    check(responses[3].error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0], "unknown symbol: %s" % responses[3])
    check(responses[4].error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0], "unknown extension: %s" % responses[4])
    numbers = responses[5].all_extension_numbers_response
    check(numbers.base_type_name == "weft_test.shapes.Number" and not numbers.extension_number,
          "all_extension_numbers_of_type: %s" % numbers)
    for failure in failures:
        print(failure)
    print("OK" if not failures else "FAILED")


if __name__ == "__main__":
    main()
