#pragma once
// The value of one series in the global registry's Prometheus scrape, for tests that count what a
// peer made the code report (0 before the series' first count).

#include <string>

#include "weft/metrics/registry.h"

namespace weft::test {

// `series` is the name with its labels as the scrape writes them, e.g. `x_total{code="CANCEL"}`.
inline double metric_value(const std::string& series) {
  const std::string text = metrics::Registry::global().scrape();
  const std::string line = "\n" + series + " ";
  const auto at = text.find(line);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + line.size()));
}

}  // namespace weft::test
