// The text formats: Prometheus 0.0.4 and OpenMetrics 1.0.
//   https://github.com/prometheus/docs/blob/main/content/docs/instrumenting/exposition_formats.md
//   https://github.com/OpenObservability/OpenMetrics/blob/main/specification/OpenMetrics.md
// They differ here in: a counter's HELP/TYPE name (`x_total` in 0.0.4, `x` in OpenMetrics), the
// escaping of `"` in HELP (OpenMetrics only), and `# EOF` at the end (OpenMetrics).

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "weft/metrics/registry.h"

namespace weft::metrics {

namespace {

void append_escaped(std::string& out, std::string_view text, bool escape_quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

// A bucket bound as a float both formats accept canonically ("1.0", not "1").
std::string bound_text(double bound) {
  std::string s = fmt::format("{}", bound);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// name{a="x",b="y"[,le="..."]} (nothing when there are no labels).
void append_labels(std::string& out, const std::vector<std::string>& names, const std::vector<std::string>& values,
                   std::string_view le = {}) {
  if (names.empty() && le.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    append_escaped(out, values[i], true);
    out += '"';
  }
  if (!le.empty()) {
    if (!names.empty()) out += ',';
    out += "le=\"";
    out += le;
    out += '"';
  }
  out += '}';
}

void append_header(std::string& out, std::string_view name, std::string_view type, std::string_view help,
                   Format format) {
  out += "# HELP ";
  out += name;
  out += ' ';
  append_escaped(out, help, format == Format::openmetrics);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

}  // namespace

Format format_for_accept(std::string_view accept) noexcept {
  return accept.find("application/openmetrics-text") != std::string_view::npos ? Format::openmetrics
                                                                               : Format::prometheus;
}

std::string_view content_type(Format format) noexcept {
  return format == Format::openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                       : "text/plain; version=0.0.4; charset=utf-8";
}

void Family::write(std::string& out, Format format) const {
  std::lock_guard lock(mutex_);
  if (series_.empty()) return;
  const std::string total = name_ + "_total";
  const bool counter = type_ == Type::counter;
  append_header(out, counter && format == Format::prometheus ? total : name_,
                counter                ? "counter"
                : type_ == Type::gauge ? "gauge"
                                       : "histogram",
                help_, format);
  for (const auto& [values, s] : series_) {
    if (type_ != Type::histogram) {
      out += counter ? total : name_;
      append_labels(out, label_names_, values);
      out += ' ';
      if (s.read) {
        append_number(out, s.read());
      } else if (counter) {
        fmt::format_to(std::back_inserter(out), "{}", s.cells->sum(0));
      } else {
        fmt::format_to(std::back_inserter(out), "{}", static_cast<std::int64_t>(s.cells->sum(0)));
      }
      out += '\n';
      continue;
    }
    // Buckets are cumulative in the exposition; the cells (or a function's counts) count each alone.
    const HistogramValue read = s.read_histogram ? s.read_histogram() : HistogramValue{};
    auto count = [&read, &series = s](std::size_t i) -> std::uint64_t {
      if (!series.read_histogram) return series.cells->sum(i);
      return i < read.counts.size() ? read.counts[i] : 0;
    };
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += count(i);
      out += name_;
      out += "_bucket";
      append_labels(out, label_names_, values, i < bounds_.size() ? bound_text(bounds_[i]) : "+Inf");
      fmt::format_to(std::back_inserter(out), " {}\n", cumulative);
    }
    out += name_;
    out += "_sum";
    append_labels(out, label_names_, values);
    out += ' ';
    append_number(out, s.read_histogram ? read.sum : s.cells->sum_double(bounds_.size() + 1));
    out += '\n';
    out += name_;
    out += "_count";
    append_labels(out, label_names_, values);
    fmt::format_to(std::back_inserter(out), " {}\n", cumulative);
  }
}

std::string Registry::scrape(Format format) const {
  constexpr std::string_view kDropped = "weft_metrics_dropped_label_sets";
  std::string out;
  std::string dropped;  // the family counting label sets past the cap, where any were
  std::lock_guard lock(mutex_);
  for (const auto& [name, family] : families_) {
    if (const std::uint64_t n = family->dropped_label_sets()) {
      if (dropped.empty()) {
        append_header(dropped, format == Format::prometheus ? std::string(kDropped) + "_total" : std::string(kDropped),
                      "counter", "Label sets folded into a metric's __overflow__ series (the series cap was reached).",
                      format);
      }
      fmt::format_to(std::back_inserter(dropped), "{}_total{{metric=\"{}\"}} {}\n", kDropped, name, n);
    }
  }
  bool dropped_written = dropped.empty();
  for (const auto& [name, family] : families_) {
    if (!dropped_written && name > kDropped) {
      out += dropped;
      dropped_written = true;
    }
    family->write(out, format);
  }
  if (!dropped_written) out += dropped;
  if (format == Format::openmetrics) out += "# EOF\n";
  return out;
}

}  // namespace weft::metrics
