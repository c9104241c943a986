#include "weft/version.h"

#include <gtest/gtest.h>

#include <string>

namespace weft {
namespace {

TEST(VersionTest, LibraryVersionIsTheHeadersVersion) { EXPECT_STREQ(version(), WEFT_VERSION_STRING); }

TEST(VersionTest, StringIsMadeOfTheNumbers) {
  EXPECT_EQ(std::string(WEFT_VERSION_STRING), std::to_string(WEFT_VERSION_MAJOR) + "." +
                                                   std::to_string(WEFT_VERSION_MINOR) + "." +
                                                   std::to_string(WEFT_VERSION_PATCH));
  EXPECT_EQ(WEFT_VERSION, WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH);
}

}  // namespace
}  // namespace weft
