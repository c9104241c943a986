#include "proto_request.h"

#include <fmt/format.h>

#include "report.h"

#ifdef WEFT_LOAD_PROTOBUF
#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>

#include <filesystem>
#include <memory>
#include <string_view>
#endif

namespace weft::load {

const char* ProtoMethod::kind() const noexcept {
  if (client_streaming && server_streaming) return "bidi streaming";
  if (client_streaming) return "client streaming";
  if (server_streaming) return "server streaming";
  return "unary";
}

#ifdef WEFT_LOAD_PROTOBUF

namespace {

namespace pb = google::protobuf;

// The first line of `text` (protobuf's JSON errors may add the input and a caret below it).
std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

// Keeps the first error protoc would print, as "file:line:column: message" (1-based, as protoc's).
class FirstError final : public pb::compiler::MultiFileErrorCollector {
 public:
  void AddError(const std::string& filename, int line, int column, const std::string& message) override {
    if (!first.empty()) return;
    first = line < 0 ? fmt::format("{}: {}", filename, first_line(message))
                     : fmt::format("{}:{}:{}: {}", filename, line + 1, column + 1, first_line(message));
  }
  std::string first;
};

// "a, b, c", or "none".
template <class Names>
std::string listed(const Names& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

bool proto_supported() noexcept { return true; }

ProtoMethod load_proto_method(const std::string& proto_file, const std::vector<std::string>& import_dirs,
                              const std::string& method, const std::string& json) {
  namespace fs = std::filesystem;
  if (proto_file.empty()) throw LoadError("grpc method needs --proto FILE.proto");
  // "pkg.Service/Method", or "pkg.Service.Method" (the last dot parts them).
  std::size_t cut = method.rfind('/');
  if (cut == std::string::npos) cut = method.rfind('.');
  if (cut == std::string::npos || cut == 0 || cut + 1 == method.size()) {
    throw LoadError(fmt::format("--call '{}' must be pkg.Service/Method or pkg.Service.Method", method));
  }
  std::string service_name = method.substr(0, cut);
  if (!service_name.empty() && service_name.front() == '/') service_name.erase(0, 1);
  const std::string method_name = method.substr(cut + 1);

  // The -I directories first, then the file's own: its virtual name is then relative to the -I
  // directory that holds it, as protoc names it, and its imports resolve the same way.
  pb::compiler::DiskSourceTree tree;
  for (const std::string& dir : import_dirs) tree.MapPath("", dir);
  std::string dir = fs::path(proto_file).parent_path().string();
  tree.MapPath("", dir.empty() ? "." : dir);
  std::string virtual_file;
  std::string shadowing;
  switch (tree.DiskFileToVirtualFile(proto_file, &virtual_file, &shadowing)) {
    case pb::compiler::DiskSourceTree::SUCCESS: break;
    case pb::compiler::DiskSourceTree::SHADOWED:
      throw LoadError(
          fmt::format("{} is shadowed by {}, which has the same name under an -I directory", proto_file, shadowing));
    case pb::compiler::DiskSourceTree::CANNOT_OPEN:
      throw LoadError(fmt::format("cannot read the .proto file {}", proto_file));
    case pb::compiler::DiskSourceTree::NO_MAPPING:
      throw LoadError(fmt::format("{} is under no -I directory", proto_file));
  }

  FirstError errors;
  pb::compiler::Importer importer(&tree, &errors);
  const pb::FileDescriptor* file = importer.Import(virtual_file);
  if (file == nullptr) {
    throw LoadError(errors.first.empty() ? fmt::format("cannot parse {}", proto_file)
                                         : fmt::format("cannot parse {}", errors.first));
  }
  const pb::ServiceDescriptor* service = importer.pool()->FindServiceByName(service_name);
  if (service == nullptr) {
    std::vector<std::string> names;
    for (int i = 0; i < file->service_count(); ++i) names.push_back(file->service(i)->full_name());
    throw LoadError(fmt::format("no service {} in {} (its services: {})", service_name, proto_file, listed(names)));
  }
  const pb::MethodDescriptor* descriptor = service->FindMethodByName(method_name);
  if (descriptor == nullptr) {
    std::vector<std::string> names;
    for (int i = 0; i < service->method_count(); ++i) names.push_back(service->method(i)->name());
    throw LoadError(
        fmt::format("no method {} in service {} (its methods: {})", method_name, service->full_name(), listed(names)));
  }

  pb::DynamicMessageFactory factory(importer.pool());
  const pb::Message* prototype = factory.GetPrototype(descriptor->input_type());
  std::unique_ptr<pb::Message> request(prototype->New());
  const pb::util::Status parsed = pb::util::JsonStringToMessage(json.empty() ? "{}" : json, request.get());
  if (!parsed.ok()) {
    throw LoadError(fmt::format("the request data does not fit {}: {}", descriptor->input_type()->full_name(),
                                first_line(parsed.message().ToString())));
  }
  ProtoMethod out;
  out.path = fmt::format("/{}/{}", service->full_name(), descriptor->name());
  out.client_streaming = descriptor->client_streaming();
  out.server_streaming = descriptor->server_streaming();
  if (!request->SerializeToString(&out.request)) {
    throw LoadError(
        fmt::format("cannot encode the request ({} lacks a required field)", descriptor->input_type()->full_name()));
  }
  return out;
}

#else

bool proto_supported() noexcept { return false; }

ProtoMethod load_proto_method(const std::string&, const std::vector<std::string>&, const std::string&,
                              const std::string&) {
  throw LoadError("weft-load was built without protobuf: --proto needs libprotobuf-dev");
}

#endif

}  // namespace weft::load
