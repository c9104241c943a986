#pragma once
/// @file
/// Counters, gauges and histograms with labels, cheap to update on the hot path, and their
/// exposition in Prometheus text (0.0.4) or OpenMetrics 1.0 text.
///
/// A family (one metric name, its help text, its label names) holds series, one per set of label
/// values. Look a series up once -- `with({"GET", "2xx"})` takes a lock and may allocate -- and keep
/// the handle: an update through it writes only the calling thread's own cells (see
/// detail/thread_cells.h), and a scrape adds the threads' cells up. A family holds at most the
/// registry's `max_series_per_family`; past it, new label sets share one series whose every label
/// value is `__overflow__`, and `weft_metrics_dropped_label_sets_total{metric="<name>"}` counts them.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "weft/metrics/detail/thread_cells.h"

namespace weft::metrics {

/// The text formats a scrape can be written in.
enum class Format {
  prometheus,   ///< Prometheus text format 0.0.4
  openmetrics,  ///< OpenMetrics 1.0 text (ends with `# EOF`)
};

/// The format a scrape with this `Accept` header asks for: OpenMetrics when it names
/// `application/openmetrics-text`, else Prometheus text. Thread-safe.
Format format_for_accept(std::string_view accept) noexcept;
/// The Content-Type of a scrape in `format`. Thread-safe.
std::string_view content_type(Format format) noexcept;

/// A counter series: a count that only goes up. A cheap handle (a pointer); copyable. Thread-safe.
class Counter {
 public:
  /// A handle to nothing: inc() must not be called.
  Counter() noexcept = default;
  /// Adds `n`. Thread-safe; writes only the calling thread's cell.
  void inc(std::uint64_t n = 1) const noexcept { cells_->add(0, n); }
  /// The count, over every thread. Thread-safe.
  std::uint64_t value() const noexcept { return cells_->sum(0); }

 private:
  friend class Family;
  explicit Counter(detail::ThreadCells* cells) noexcept : cells_(cells) {}
  detail::ThreadCells* cells_ = nullptr;
};

/// A gauge series: a value that goes up and down, the sum of every thread's changes. A cheap handle;
/// copyable. Thread-safe.
class Gauge {
 public:
  /// A handle to nothing: add() must not be called.
  Gauge() noexcept = default;
  /// Adds `delta` (negative: subtracts). Thread-safe; writes only the calling thread's cell.
  void add(std::int64_t delta) const noexcept { cells_->add(0, static_cast<std::uint64_t>(delta)); }
  /// add(1). Thread-safe.
  void inc() const noexcept { add(1); }
  /// add(-1). Thread-safe.
  void dec() const noexcept { add(-1); }

 private:
  friend class Family;
  explicit Gauge(detail::ThreadCells* cells) noexcept : cells_(cells) {}
  detail::ThreadCells* cells_ = nullptr;
};

/// A histogram series: observations counted in fixed buckets (`le`: less than or equal to each
/// bound), with their sum and count. A cheap handle; copyable. Thread-safe.
class Histogram {
 public:
  /// A handle to nothing: observe() must not be called.
  Histogram() noexcept = default;
  /// Counts `x` in the first bucket whose bound is >= x (else +Inf) and adds it to the sum.
  /// Thread-safe; writes only the calling thread's cells.
  void observe(double x) const noexcept { observe(x, 1); }
  /// observe(x), `n` times. Thread-safe, as observe().
  void observe(double x, std::uint64_t n) const noexcept {
    std::size_t i = 0;
    while (i < bound_count_ && x > bounds_[i]) ++i;
    cells_->add_and_add_double(i, n, bound_count_ + 1, x * static_cast<double>(n));
  }
  /// Whether this handle names a series (a default-constructed one does not). Thread-safe.
  bool valid() const noexcept { return cells_ != nullptr; }
  /// Observations so far, over every thread. Thread-safe.
  std::uint64_t count() const noexcept {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i <= bound_count_; ++i) n += cells_->sum(i);
    return n;
  }

 private:
  friend class Family;
  Histogram(detail::ThreadCells* cells, const double* bounds, std::size_t count) noexcept
      : cells_(cells), bounds_(bounds), bound_count_(count) {}
  detail::ThreadCells* cells_ = nullptr;
  const double* bounds_ = nullptr;
  std::size_t bound_count_ = 0;
};

/// Label values, in the order of the family's label names.
using LabelValues = std::initializer_list<std::string_view>;

/// A histogram series' value read when scraped (Family::set_histogram_function).
struct HistogramValue {
  /// Observations per bucket, not cumulative: one per finite bound of the family, then +Inf.
  std::vector<std::uint64_t> counts;
  double sum = 0;  ///< the observations' sum
};

/// One metric name and its series. Made by Registry; lives as long as it. Thread-safe.
class Family {
 public:
  /// What the family counts.
  enum class Type {
    counter,    ///< counts that only go up
    gauge,      ///< a value that goes up and down
    histogram,  ///< observations in buckets, with their sum and count
  };

  /// Not copyable: handles point into it.
  Family(const Family&) = delete;
  /// Not copyable.
  Family& operator=(const Family&) = delete;

  /// The counter series with these label values (made on first use). Throws std::logic_error if
  /// the family is not a counter or the number of values is wrong. Thread-safe; takes a lock.
  Counter counter(LabelValues values = {});
  /// The gauge series with these label values, as counter(). Thread-safe; takes a lock.
  Gauge gauge(LabelValues values = {});
  /// The histogram series with these label values, as counter(). Thread-safe; takes a lock.
  Histogram histogram(LabelValues values = {});
  /// A series whose value `read` returns at each scrape (a counter or gauge family): for values
  /// kept elsewhere, such as an event loop's times. `read` runs on the scraping thread, under the
  /// family's lock, and must stay valid until remove_function() or the registry's end. Replaces an
  /// earlier function of the same labels. Thread-safe.
  void set_function(LabelValues values, std::function<double()> read);
  /// A histogram series whose value `read` returns at each scrape, as set_function(); `read` returns
  /// a count per bucket of this family's bounds (missing ones count zero). Throws std::logic_error
  /// if the family is not a histogram. Thread-safe.
  void set_histogram_function(LabelValues values, std::function<HistogramValue()> read);
  /// Removes the function series with these label values, if any. Thread-safe.
  void remove_function(LabelValues values);

  /// The name (a counter's without `_total`).
  const std::string& name() const noexcept { return name_; }
  /// The type.
  Type type() const noexcept { return type_; }
  /// Label sets folded into the overflow series since the family was made. Thread-safe.
  std::uint64_t dropped_label_sets() const;

 private:
  friend class Registry;
  struct Series {
    std::vector<std::string> values;
    std::unique_ptr<detail::ThreadCells> cells;  // or:
    std::function<double()> read;                // or:
    std::function<HistogramValue()> read_histogram;
  };
  Family(Type type, std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds, std::size_t max_series);
  Series& series(LabelValues values, Type wanted);
  void write(std::string& out, Format format) const;

  const Type type_;
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;  // histogram: the finite bucket bounds, increasing
  const std::size_t max_series_;
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, Series> series_;  // by label values: written in a stable order
  std::uint64_t dropped_ = 0;                          // mutex_
};

/// A set of families and their exposition. Thread-safe.
class Registry {
 public:
  /// A registry whose families hold at most `max_series_per_family` series each (plus the overflow).
  explicit Registry(std::size_t max_series_per_family = 1000);
  /// Frees every series: no handle may be used afterwards.
  ~Registry();
  /// Not copyable: handles point into it.
  Registry(const Registry&) = delete;
  /// Not copyable.
  Registry& operator=(const Registry&) = delete;

  /// The process's registry: where weft's own metrics go. Thread-safe.
  static Registry& global();

  /// The counter family `name` (a trailing `_total` is dropped: expositions add it), made on first
  /// use; a second call with the same name returns the same family. Throws std::invalid_argument
  /// for a name or label name Prometheus does not allow, or a name already used differently. Thread-safe.
  Family& counter(std::string_view name, std::string_view help, std::vector<std::string> label_names = {});
  /// The gauge family `name`, as counter(). Thread-safe.
  Family& gauge(std::string_view name, std::string_view help, std::vector<std::string> label_names = {});
  /// The histogram family `name` with finite bucket bounds `bounds` (increasing; +Inf is added), as
  /// counter(); `le` is not a label name it may have. Thread-safe.
  Family& histogram(std::string_view name, std::string_view help, std::vector<std::string> label_names,
                    std::vector<double> bounds);

  /// Every family and series, sorted by name, in `format`. Thread-safe: may run while other threads
  /// update series; each value read is one a thread wrote (a histogram's sum may lag its buckets).
  std::string scrape(Format format = Format::prometheus) const;

 private:
  Family& family(Family::Type type, std::string_view name, std::string_view help, std::vector<std::string> label_names,
                 std::vector<double> bounds);

  const std::size_t max_series_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_;
};

}  // namespace weft::metrics
