#pragma once
// This process's resident set size, for tests that bound what a server in the same process holds.

#include <unistd.h>

#include <cstddef>
#include <cstdio>

namespace weft::test {

// Resident bytes now (/proc/self/statm); 0 if unknown.
inline std::size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace weft::test
