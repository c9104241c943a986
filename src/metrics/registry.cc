#include "weft/metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace weft::metrics {

namespace {

constexpr std::string_view kOverflow = "__overflow__";

bool valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool valid_label_name(std::string_view name) {
  return valid_metric_name(name) && name.find(':') == std::string_view::npos && !name.starts_with("__");
}

std::string_view type_name(Family::Type type) {
  switch (type) {
    case Family::Type::counter: return "counter";
    case Family::Type::gauge: return "gauge";
    case Family::Type::histogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

Family::Family(Type type, std::string name, std::string help, std::vector<std::string> label_names,
               std::vector<double> bounds, std::size_t max_series)
    : type_(type),
      name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)),
      max_series_(max_series) {}

Family::Series& Family::series(LabelValues values, Type wanted) {
  if (wanted != type_) {
    throw std::logic_error("metric " + name_ + " is a " + std::string(type_name(type_)) + ", not a " +
                           std::string(type_name(wanted)));
  }
  if (values.size() != label_names_.size()) {
    throw std::logic_error("metric " + name_ + " has " + std::to_string(label_names_.size()) + " label(s), given " +
                           std::to_string(values.size()) + " value(s)");
  }
  std::vector<std::string> key(values.begin(), values.end());
  auto it = series_.find(key);
  if (it != series_.end()) return it->second;
  if (series_.size() >= max_series_) {
    ++dropped_;
    key.assign(label_names_.size(), std::string(kOverflow));
    it = series_.find(key);
    if (it != series_.end()) return it->second;
  }
  Series& s = series_[key];
  s.values = std::move(key);
  return s;
}

Counter Family::counter(LabelValues values) {
  std::lock_guard lock(mutex_);
  Series& s = series(values, Type::counter);
  if (!s.cells) s.cells = std::make_unique<detail::ThreadCells>(1);
  return Counter(s.cells.get());
}

Gauge Family::gauge(LabelValues values) {
  std::lock_guard lock(mutex_);
  Series& s = series(values, Type::gauge);
  if (!s.cells) s.cells = std::make_unique<detail::ThreadCells>(1);
  return Gauge(s.cells.get());
}

Histogram Family::histogram(LabelValues values) {
  std::lock_guard lock(mutex_);
  Series& s = series(values, Type::histogram);
  // Per thread: a count per bucket (the finite bounds, then +Inf), then the sum as a double.
  if (!s.cells) s.cells = std::make_unique<detail::ThreadCells>(bounds_.size() + 2);
  return Histogram(s.cells.get(), bounds_.data(), bounds_.size());
}

void Family::set_function(LabelValues values, std::function<double()> read) {
  if (type_ == Type::histogram) throw std::logic_error("metric " + name_ + ": a histogram has no function series");
  std::lock_guard lock(mutex_);
  Series& s = series(values, type_);
  if (s.cells) throw std::logic_error("metric " + name_ + ": these labels name a series with cells already");
  s.read = std::move(read);
}

void Family::set_histogram_function(LabelValues values, std::function<HistogramValue()> read) {
  if (type_ != Type::histogram) throw std::logic_error("metric " + name_ + ": not a histogram");
  std::lock_guard lock(mutex_);
  Series& s = series(values, type_);
  if (s.cells) throw std::logic_error("metric " + name_ + ": these labels name a series with cells already");
  s.read_histogram = std::move(read);
}

void Family::remove_function(LabelValues values) {
  std::lock_guard lock(mutex_);
  auto it = series_.find(std::vector<std::string>(values.begin(), values.end()));
  if (it != series_.end() && (it->second.read || it->second.read_histogram)) series_.erase(it);
}

std::uint64_t Family::dropped_label_sets() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

Registry::Registry(std::size_t max_series_per_family) : max_series_(max_series_per_family) {}
Registry::~Registry() = default;

Registry& Registry::global() {
  static Registry* registry = new Registry;  // never destroyed: loops may still count at exit
  return *registry;
}

Family& Registry::counter(std::string_view name, std::string_view help, std::vector<std::string> label_names) {
  if (name.ends_with("_total")) name.remove_suffix(6);
  return family(Family::Type::counter, name, help, std::move(label_names), {});
}

Family& Registry::gauge(std::string_view name, std::string_view help, std::vector<std::string> label_names) {
  return family(Family::Type::gauge, name, help, std::move(label_names), {});
}

Family& Registry::histogram(std::string_view name, std::string_view help, std::vector<std::string> label_names,
                            std::vector<double> bounds) {
  if (!std::is_sorted(bounds.begin(), bounds.end()) ||
      std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end() ||
      std::any_of(bounds.begin(), bounds.end(), [](double b) { return !std::isfinite(b); })) {
    throw std::invalid_argument("histogram " + std::string(name) + ": bounds must be finite and increasing");
  }
  if (std::find(label_names.begin(), label_names.end(), "le") != label_names.end()) {
    throw std::invalid_argument("histogram " + std::string(name) + ": `le` is the bucket label");
  }
  return family(Family::Type::histogram, name, help, std::move(label_names), std::move(bounds));
}

Family& Registry::family(Family::Type type, std::string_view name, std::string_view help,
                         std::vector<std::string> label_names, std::vector<double> bounds) {
  if (!valid_metric_name(name)) throw std::invalid_argument("not a metric name: '" + std::string(name) + "'");
  for (const std::string& label : label_names) {
    if (!valid_label_name(label)) throw std::invalid_argument("not a label name: '" + label + "'");
  }
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    Family& f = *it->second;
    if (f.type_ != type || f.label_names_ != label_names || f.bounds_ != bounds) {
      throw std::invalid_argument("metric " + std::string(name) + " is registered already, differently");
    }
    return f;
  }
  auto made = std::unique_ptr<Family>(
      new Family(type, std::string(name), std::string(help), std::move(label_names), std::move(bounds), max_series_));
  return *families_.emplace(std::string(name), std::move(made)).first->second;
}

}  // namespace weft::metrics
