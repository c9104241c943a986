// weft-grpc-interop-client: grpc's interop client (doc/interop-test-descriptions.md) on weft's
// generated stubs. Runs one case, or every case with --test_case=all, against an interop server;
// prints one line per case and exits 0 when every case passed, 1 otherwise (2: bad arguments).
//
//   weft-grpc-interop-client --server_host=127.0.0.1 --server_port=10000 --test_case=large_unary

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "interop/interop_cases.h"
#include "weft/weft.h"

namespace {

struct Options {
  std::string host = "127.0.0.1";
  long port = 10000;
  std::string test_case = "large_unary";
};

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: weft-grpc-interop-client [--server_host=H] [--server_port=N] [--test_case=NAME|all]\n"
               "  --server_host H   default 127.0.0.1 (localhost is 127.0.0.1)\n"
               "  --server_port N   default 10000\n"
               "  --test_case NAME  default large_unary; all: every case; the cases:\n");
  for (std::string_view name : weft::grpc::interop::case_names()) {
    std::fprintf(code == 0 ? stdout : stderr, "                    %.*s\n", static_cast<int>(name.size()), name.data());
  }
  std::exit(code);
}

// grpc's flags: --name=value, or --name value.
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    if (flag == "--help" || flag == "-h") usage(0);
    if (const std::size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "weft-grpc-interop-client: %s needs a value\n", flag.c_str());
      usage(2);
    }
    if (flag == "--server_host") {
      o.host = value == "localhost" ? "127.0.0.1" : value;
    } else if (flag == "--server_port") {
      char* end = nullptr;
      o.port = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || o.port < 1 || o.port > 65535) {
        std::fprintf(stderr, "weft-grpc-interop-client: --server_port: '%s' is not a port\n", value.c_str());
        std::exit(2);
      }
    } else if (flag == "--test_case") {
      o.test_case = value;
    } else if (flag == "--use_tls" && value == "false") {
      // plaintext, the only mode here
    } else {
      std::fprintf(stderr, "weft-grpc-interop-client: unknown flag %s=%s\n", flag.c_str(), value.c_str());
      usage(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  std::vector<std::string_view> cases;
  for (std::string_view name : weft::grpc::interop::case_names()) {
    if (options.test_case == "all" || options.test_case == name) cases.push_back(name);
  }
  if (cases.empty()) {
    std::fprintf(stderr, "weft-grpc-interop-client: unknown test case '%s'\n", options.test_case.c_str());
    usage(2);
  }
  weft::EventLoopGroup loops(weft::epoll(), 1);
  int failed = 0;
  try {
    const weft::SocketAddress address =
        weft::SocketAddress::from(options.host, static_cast<std::uint16_t>(options.port));
    std::shared_ptr<weft::grpc::Client> client = weft::grpc::Client::connect(loops, address).get();
    for (std::string_view name : cases) {
      const std::string wrong = weft::spawn(client->loop(), weft::grpc::interop::run_case(client, name)).get();
      if (wrong.empty()) {
        std::printf("%.*s: passed\n", static_cast<int>(name.size()), name.data());
      } else {
        std::printf("%.*s: FAILED: %s\n", static_cast<int>(name.size()), name.data(), wrong.c_str());
        ++failed;
      }
      std::fflush(stdout);
    }
    client->close().wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-grpc-interop-client: %s\n", e.what());
    return 1;
  }
  loops.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  return failed == 0 ? 0 : 1;
}
