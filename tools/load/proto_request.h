#pragma once
// weft-load grpc method: a method of any service, described by a .proto read at run time (ghz's
// manner). This header is protobuf-free; proto_request.cc loads the file with libprotobuf
// (compiler::Importer over a DiskSourceTree) when weft-load is built with it (WEFT_LOAD_PROTOBUF),
// and otherwise throws the LoadError that says so.

#include <string>
#include <vector>

namespace weft::load {

// A method's call path, its shape, and its one request message, serialized.
struct ProtoMethod {
  std::string path;  // "/pkg.Service/Method"
  bool client_streaming = false;
  bool server_streaming = false;
  std::string request;  // the request message in protobuf's encoding

  // "unary", "server streaming", "client streaming" or "bidi streaming".
  const char* kind() const noexcept;
};

// Whether this weft-load can read .proto files (it was built with libprotobuf). Thread-safe.
bool proto_supported() noexcept;

// Reads `proto_file` (imports from its own directory and from `import_dirs`, as protoc's -I), finds
// `method` ("pkg.Service/Method" or "pkg.Service.Method") and makes its request from `json`
// (protobuf's JSON mapping; empty: "{}"). Throws LoadError with a one-line reason: the file cannot be
// read or parsed (file:line:column: message), the service or method is not there (the names that
// are), the JSON does not fit the request type, or weft-load was built without protobuf.
// Thread-safe.
ProtoMethod load_proto_method(const std::string& proto_file, const std::vector<std::string>& import_dirs,
                              const std::string& method, const std::string& json);

}  // namespace weft::load
