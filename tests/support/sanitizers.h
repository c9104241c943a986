#pragma once

// Which sanitizer the tests are built under, for the few checks a sanitizer changes (RSS bounds, which
// its quarantine breaks; workloads cut to keep the sanitizer phases of CI short). gcc says so with
// __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__; clang 14 only through __has_feature.
//   WEFT_TEST_ASAN, WEFT_TEST_TSAN: defined (as 1) under that sanitizer
//   WEFT_TEST_SANITIZED: defined under either

#if defined(__SANITIZE_ADDRESS__)
#define WEFT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define WEFT_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TEST_TSAN 1
#endif
#endif

#if defined(WEFT_TEST_ASAN) || defined(WEFT_TEST_TSAN)
#define WEFT_TEST_SANITIZED 1
#endif
