#pragma once
// protoc-gen-weft's generator: for each .proto with services, a header `<name>.weft.h` beside
// protobuf's `<name>.pb.h` (docs/grpc.md, "From a .proto").

#include <google/protobuf/compiler/code_generator.h>

#include <string>

namespace weft::protoc_plugin {

/// Generates `<name>.weft.h` for a .proto file. Stateless: thread-safe as protoc requires.
class ServiceGenerator final : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file, const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context, std::string* error) const override;
  // proto3 `optional` fields concern the messages only, which protoc's C++ generator writes.
  std::uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }
};

}  // namespace weft::protoc_plugin
