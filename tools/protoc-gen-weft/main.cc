// protoc-gen-weft: protoc's plugin for weft's gRPC services and stubs.
//
//   protoc -I protos --cpp_out=gen --weft_out=gen --plugin=protoc-gen-weft=$(command -v protoc-gen-weft)
//   route_guide.proto
//
// writes gen/route_guide.weft.h beside protobuf's gen/route_guide.pb.h. CMake users call
// weft_grpc_generate() instead (docs/grpc.md, "From a .proto").

#include <google/protobuf/compiler/plugin.h>

#include "service_generator.h"

int main(int argc, char* argv[]) {
  weft::protoc_plugin::ServiceGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
