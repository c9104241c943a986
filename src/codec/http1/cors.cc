#include "weft/codec/http1/cors.h"

#include <algorithm>
#include <string>

#include "weft/codec/http1/http_types.h"

namespace weft::http {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::string_view cors_trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Cors::Cors(CorsOptions options)
    : options_(std::move(options)),
      methods_(join(options_.allowed_methods)),
      allowed_headers_(join(options_.allowed_headers)),
      exposed_(join(options_.exposed_headers)),
      max_age_(std::to_string(options_.max_age.count())) {
  any_origin_ = std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(), "*") !=
                options_.allowed_origins.end();
  HttpResponse probe;  // every value we will send, validated now (throws std::invalid_argument)
  for (const std::string& origin : options_.allowed_origins) probe.header("Access-Control-Allow-Origin", origin);
  probe.header("Access-Control-Allow-Methods", methods_).header("Access-Control-Allow-Headers", allowed_headers_);
  probe.header("Access-Control-Expose-Headers", exposed_);
}

bool Cors::origin_allowed(std::string_view origin) const noexcept {
  return any_origin_ || std::find(options_.allowed_origins.begin(), options_.allowed_origins.end(), origin) !=
                            options_.allowed_origins.end();
}

bool Cors::headers_allowed(std::string_view requested) const noexcept {
  if (options_.allowed_headers.empty()) return true;
  while (!requested.empty()) {
    const std::size_t comma = requested.find(',');
    const std::string_view name = cors_trim(requested.substr(0, comma));
    requested.remove_prefix(comma == std::string_view::npos ? requested.size() : comma + 1);
    if (name.empty()) continue;
    if (std::none_of(options_.allowed_headers.begin(), options_.allowed_headers.end(),
                     [name](const std::string& h) { return iequals(h, name); })) {
      return false;
    }
  }
  return true;
}

std::string_view Cors::allow_origin_value(std::string_view origin) const noexcept {
  return any_origin_ && !options_.allow_credentials ? std::string_view("*") : origin;
}

std::optional<HttpResponse> Cors::before(Request& request) {
  if (request.method() != "OPTIONS") return std::nullopt;
  const std::optional<std::string_view> origin = request.header("Origin");
  const std::optional<std::string_view> method = request.header("Access-Control-Request-Method");
  if (!origin || !method) return std::nullopt;  // a plain OPTIONS request: the routes answer it
  const std::string_view requested_headers = request.header("Access-Control-Request-Headers").value_or("");
  const bool method_ok = std::find(options_.allowed_methods.begin(), options_.allowed_methods.end(), *method) !=
                         options_.allowed_methods.end();
  if (!origin_allowed(*origin) || !method_ok || !headers_allowed(requested_headers)) {
    return std::move(HttpResponse(403).header("Vary", "Origin"));
  }
  HttpResponse answer(204);
  answer.header("Access-Control-Allow-Origin", allow_origin_value(*origin));
  answer.header("Access-Control-Allow-Methods", methods_);
  const std::string_view headers = options_.allowed_headers.empty() ? requested_headers : allowed_headers_;
  if (!headers.empty()) answer.header("Access-Control-Allow-Headers", headers);
  answer.header("Access-Control-Max-Age", max_age_);
  if (options_.allow_credentials) answer.header("Access-Control-Allow-Credentials", "true");
  answer.header("Vary", "Origin");
  return answer;
}

void Cors::after(Request& request, HttpResponse& response) {
  const std::optional<std::string_view> origin = request.header("Origin");
  if (!origin) return;
  if (!origin_allowed(*origin)) {
    if (!any_origin_) response.header("Vary", "Origin");
    return;
  }
  const std::string_view value = allow_origin_value(*origin);
  response.header("Access-Control-Allow-Origin", value);
  if (value != "*") response.header("Vary", "Origin");
  if (options_.allow_credentials) response.header("Access-Control-Allow-Credentials", "true");
  if (!exposed_.empty()) response.header("Access-Control-Expose-Headers", exposed_);
}

}  // namespace weft::http
