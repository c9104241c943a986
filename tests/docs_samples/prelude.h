#pragma once
// What each docs sample is compiled after, unless it is a whole file (extract_samples.py): weft's
// public headers, and declarations of the names the docs use for the reader's own code.

#include <weft/codec/http2/client_stream.h>
#include <weft/grpc/channel.h>
#include <weft/grpc/client.h>
#include <weft/grpc/client_reactor.h>
#include <weft/grpc/server_reactor.h>
#include <weft/weft.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

using namespace std::chrono_literals;

namespace weft_doc_sample {

// The reader's own code, as the samples call it.
std::string query_database();
void consume(const weft::ByteBuf& data);

}  // namespace weft_doc_sample
