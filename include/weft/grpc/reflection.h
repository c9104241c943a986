#pragma once
/// @file
/// gRPC server reflection (grpc.reflection.v1 and v1alpha, ServerReflectionInfo), opt-in: what
/// grpcurl, grpc_cli, Postman and friends ask a server for its services and their .proto
/// descriptors. Header-only and on protobuf's headers (the application links libprotobuf): the
/// descriptors are those of the generated code linked into the program (protobuf's generated pool).
///
///   weft::grpc::ServiceRegistry services;
///   RouteGuide::Service::add_to(services, std::make_shared<MyRouteGuide>());
///   weft::grpc::add_reflection(services);   // last: it lists the services registered before it
///
/// As grpc++'s reflection service: list_services names the registry's services (reflection's own
/// included; a service without methods has no path in the registry, and is not named); file_by_filename and
/// file_containing_symbol answer the file's FileDescriptorProto and those of the files it imports, each file once per
/// stream; file_containing_extension and all_extension_numbers_of_type answer from the pool's extensions; a name the
/// pool lacks is an error_response NOT_FOUND, a request of no known kind one UNIMPLEMENTED. Each request of the stream
/// gets its response in order, with the request echoed (original_request).

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/buffer/byte_buf.h"
#include "weft/buffer/byte_buf_allocator.h"
#include "weft/core/task.h"
#include "weft/grpc/server_call.h"
#include "weft/grpc/service_registry.h"
#include "weft/grpc/status.h"

namespace weft::grpc {

namespace detail::reflection {

// The few protobuf wire rules the reflection messages need (they are not generated: the
// application's protobuf may not have reflection.proto).
enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

inline void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}
inline void put_bytes(std::string& out, std::uint32_t field, std::string_view bytes) {
  put_varint(out, (std::uint64_t{field} << 3) | kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}
inline void put_int(std::string& out, std::uint32_t field, std::int64_t value) {
  put_varint(out, (std::uint64_t{field} << 3) | kVarint);
  put_varint(out, static_cast<std::uint64_t>(value));
}

// Reads a message's fields in turn; false (ok() false after) when the bytes break the wire format.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) noexcept : bytes_(bytes) {}
  bool ok() const noexcept { return ok_; }
  // The next field: its number, and its value (a varint's in `number_value`, a length-delimited
  // field's bytes in `bytes_value`; the other wire types are skipped). false at the end or on an error.
  bool next(std::uint32_t& field, std::uint64_t& number_value, std::string_view& bytes_value) {
    while (ok_ && !bytes_.empty()) {
      std::uint64_t key = 0;
      if (!varint(key) || (key >> 3) == 0 || (key >> 3) > 0x1FFFFFFF) return fail();
      field = static_cast<std::uint32_t>(key >> 3);
      switch (key & 7) {
        case kVarint:
          if (!varint(number_value)) return fail();
          return true;
        case kLengthDelimited: {
          std::uint64_t length = 0;
          if (!varint(length) || length > bytes_.size()) return fail();
          bytes_value = bytes_.substr(0, length);
          bytes_.remove_prefix(length);
          return true;
        }
        case kFixed64:
          if (bytes_.size() < 8) return fail();
          bytes_.remove_prefix(8);
          break;
        case kFixed32:
          if (bytes_.size() < 4) return fail();
          bytes_.remove_prefix(4);
          break;
        default:  // groups (3, 4) are not in these messages' schema; 6 and 7 are not wire types
          return fail();
      }
    }
    return false;
  }

 private:
  bool varint(std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && !bytes_.empty(); shift += 7) {
      const auto byte = static_cast<std::uint8_t>(bytes_.front());
      bytes_.remove_prefix(1);
      value |= std::uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool fail() noexcept {
    ok_ = false;
    return false;
  }
  std::string_view bytes_;
  bool ok_ = true;
};

// ServerReflectionRequest: the kind of request (its field number) and its argument.
struct Request {
  std::uint32_t kind = 0;  // 3 file_by_filename, 4 file_containing_symbol, 5 ..._extension, 6, 7
  std::string name;        // the file, symbol or type name
  std::int32_t extension_number = 0;
};

inline std::optional<Request> parse_request(std::string_view bytes) {
  Request request;
  FieldReader reader(bytes);
  std::uint32_t field = 0;
  std::uint64_t number = 0;
  std::string_view text;
  while (reader.next(field, number, text)) {
    if (field == 3 || field == 4 || field == 6 || field == 7) {
      request.kind = field;
      request.name = std::string(text);
    } else if (field == 5) {  // ExtensionRequest{containing_type = 1, extension_number = 2}
      request.kind = field;
      FieldReader extension(text);
      std::string_view type;
      while (extension.next(field, number, type)) {
        if (field == 1) request.name = std::string(type);
        if (field == 2) request.extension_number = static_cast<std::int32_t>(number);
      }
      if (!extension.ok()) return std::nullopt;
    }
  }
  if (!reader.ok()) return std::nullopt;
  return request;
}

// The state of one ServerReflectionInfo stream: the files sent on it already.
class Responder {
 public:
  explicit Responder(const std::vector<std::string>& services) : services_(services) {}

  // The ServerReflectionResponse to `request_bytes`.
  std::string respond(std::string_view request_bytes) {
    std::string response;
    put_bytes(response, 2, request_bytes);  // original_request
    std::optional<Request> request = parse_request(request_bytes);
    if (!request) return error(std::move(response), StatusCode::invalid_argument, "the request did not parse");
    const google::protobuf::DescriptorPool& pool = *google::protobuf::DescriptorPool::generated_pool();
    switch (request->kind) {
      case 3: return files(std::move(response), pool.FindFileByName(request->name), "file not found");
      case 4: return files(std::move(response), pool.FindFileContainingSymbol(request->name), "symbol not found");
      case 5: {
        const google::protobuf::Descriptor* type = pool.FindMessageTypeByName(request->name);
        const google::protobuf::FieldDescriptor* extension =
            type == nullptr ? nullptr : pool.FindExtensionByNumber(type, request->extension_number);
        return files(std::move(response), extension == nullptr ? nullptr : extension->file(), "extension not found");
      }
      case 6: return extension_numbers(std::move(response), pool, request->name);
      case 7: {
        std::string list;
        for (const std::string& name : services_) {
          std::string service;
          put_bytes(service, 1, name);
          put_bytes(list, 1, service);
        }
        put_bytes(response, 6, list);  // list_services_response
        return response;
      }
      default: return error(std::move(response), StatusCode::unimplemented, "the request's kind is not implemented");
    }
  }

 private:
  static std::string error(std::string response, StatusCode code, std::string_view message) {
    std::string body;
    put_int(body, 1, static_cast<std::int64_t>(code));
    put_bytes(body, 2, message);
    put_bytes(response, 7, body);  // error_response
    return response;
  }
  std::string files(std::string response, const google::protobuf::FileDescriptor* file, std::string_view not_found) {
    if (file == nullptr) return error(std::move(response), StatusCode::not_found, not_found);
    std::string list;
    add_file(list, file);
    put_bytes(response, 4, list);  // file_descriptor_response
    return response;
  }
  // `file`, then the files it imports, each once per stream (as grpc++ does).
  void add_file(std::string& list, const google::protobuf::FileDescriptor* file) {
    if (!sent_.insert(file->name()).second) return;
    google::protobuf::FileDescriptorProto proto;
    file->CopyTo(&proto);
    put_bytes(list, 1, proto.SerializeAsString());
    for (int i = 0; i < file->dependency_count(); ++i) add_file(list, file->dependency(i));
  }
  static std::string extension_numbers(std::string response, const google::protobuf::DescriptorPool& pool,
                                       const std::string& type_name) {
    const google::protobuf::Descriptor* type = pool.FindMessageTypeByName(type_name);
    if (type == nullptr) return error(std::move(response), StatusCode::not_found, "type not found");
    std::vector<const google::protobuf::FieldDescriptor*> extensions;
    pool.FindAllExtensions(type, &extensions);
    std::string body;
    put_bytes(body, 1, type->full_name());
    for (const google::protobuf::FieldDescriptor* extension : extensions) put_int(body, 2, extension->number());
    put_bytes(response, 5, body);  // all_extension_numbers_response
    return response;
  }

  const std::vector<std::string>& services_;
  std::set<std::string> sent_;
};

}  // namespace detail::reflection

/// The services reflection serves, v1 first (grpcurl asks for it, then for v1alpha).
inline constexpr std::string_view kReflectionServices[] = {"grpc.reflection.v1.ServerReflection",
                                                           "grpc.reflection.v1alpha.ServerReflection"};

/// Not thread-safe (register before serving, after the services it is to list). Adds server
/// reflection, v1 and v1alpha, to `services` (see the file's description). It lists the services
/// registered when it is added, and itself.
inline void add_reflection(ServiceRegistry& services) {
  auto names = std::make_shared<std::vector<std::string>>(services.services());
  for (std::string_view service : kReflectionServices) names->emplace_back(service);
  std::sort(names->begin(), names->end());
  for (std::string_view service : kReflectionServices) {
    services.add("/" + std::string(service) + "/ServerReflectionInfo", [names](ServerCall& call) -> Task<> {
      detail::reflection::Responder responder(*names);
      while (std::optional<ByteBuf> request = co_await call.read()) {
        const std::string response = responder.respond(
            std::string_view(reinterpret_cast<const char*>(request->read_ptr()), request->readable_bytes()));
        co_await call.write(ByteBuf::copy_of(response));
      }
    });
  }
}

}  // namespace weft::grpc
