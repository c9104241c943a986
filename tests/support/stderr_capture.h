#pragma once
// Captures what the process writes to stderr -- weft's log() writes there -- from construction to
// stop(): the descriptor itself is redirected to a temporary file, so lines from every thread are
// caught. stop() writes what it caught to the real stderr as well, so nothing is hidden from the
// test's output. Create and stop on one thread; one capture at a time.

#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace weft::test {

class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()) {
    if (file_ == nullptr) throw std::runtime_error("StderrCapture: no temporary file");
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    if (saved_ < 0 || ::dup2(::fileno(file_), STDERR_FILENO) < 0) throw std::runtime_error("StderrCapture: dup failed");
  }
  ~StderrCapture() {
    if (saved_ >= 0) stop();
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores stderr and returns what was written meanwhile.
  std::string stop() {
    if (saved_ < 0) return text_;
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    saved_ = -1;
    std::rewind(file_);
    char chunk[4096];
    for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, file_)) > 0;) text_.append(chunk, n);
    std::fclose(file_);
    file_ = nullptr;
    [[maybe_unused]] auto written = ::write(STDERR_FILENO, text_.data(), text_.size());
    return text_;
  }

 private:
  std::FILE* file_;
  int saved_ = -1;
  std::string text_;
};

// How many times `needle` occurs in `text`.
inline int count_occurrences(std::string_view text, std::string_view needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace weft::test
