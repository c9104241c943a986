#include "weft/codec/http1/query.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace weft::http {
namespace {

TEST(PercentDecodeTest, DecodesEscapesOfEitherCase) {
  EXPECT_EQ(percent_decode("a%20b%2fc%2F%7e"), "a b/c/~");
  EXPECT_EQ(percent_decode("%E2%82%ac"), "\xE2\x82\xAC");
  EXPECT_EQ(percent_decode(""), "");
  EXPECT_EQ(percent_decode("plain"), "plain");
}

TEST(PercentDecodeTest, DecodedBytesAreReturnedAsTheyAre) {
  EXPECT_EQ(percent_decode("a%00b"), std::string("a\0b", 3));
  EXPECT_EQ(percent_decode("%FF%fe"), "\xFF\xFE");  // not UTF-8: the caller checks what it needs
  EXPECT_EQ(percent_decode("%2541"), "%41");        // decoded once, not twice
}

TEST(PercentDecodeTest, PlusIsLiteralInPathsAndASpaceInQueries) {
  EXPECT_EQ(percent_decode("a+b%2B"), "a+b+");
  EXPECT_EQ(percent_decode("a+b%2B", PlusDecoding::space), "a b+");
}

TEST(PercentDecodeTest, MalformedEscapesMakeTheWholeTextMalformed) {
  for (std::string_view bad : {"%", "%2", "a%", "a%2", "%zz", "%2g", "%g2", "100%", "%%41", "ok%-1"}) {
    EXPECT_EQ(percent_decode(bad), std::nullopt) << bad;
    EXPECT_EQ(percent_decode(bad, PlusDecoding::space), std::nullopt) << bad;
  }
}

TEST(PercentDecodeTest, AppendKeepsWhatCameBeforeAndReportsFailure) {
  std::string out = "x:";
  EXPECT_TRUE(percent_decode_append("a%41", out));
  EXPECT_EQ(out, "x:aA");
  EXPECT_FALSE(percent_decode_append("b%4", out));
  EXPECT_EQ(out, "x:aAb");  // what was decoded before the bad escape
}

std::vector<std::pair<std::string, std::string>> pairs(const QueryParams& q) {
  std::vector<std::pair<std::string, std::string>> all;
  for (QueryParam p : q) all.emplace_back(p.name, p.value);
  return all;
}

TEST(QueryParamsTest, SplitsDecodesAndKeepsOrder) {
  auto q = QueryParams::parse("name=J%C3%BCrgen+M&city=K%C3%B6ln&empty=&flag");
  ASSERT_TRUE(q);
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(pairs(*q), (std::vector<P>{{"name", "J\xC3\xBCrgen M"}, {"city", "K\xC3\xB6ln"}, {"empty", ""}, {"flag", ""}}));
  EXPECT_EQ(q->size(), 4u);
  EXPECT_EQ(q->get("city"), "K\xC3\xB6ln");
  EXPECT_EQ(q->get("flag"), "");
  EXPECT_TRUE(q->contains("empty"));
  EXPECT_EQ(q->get("nope"), std::nullopt);
  EXPECT_EQ(q->get("Name"), std::nullopt);  // names are case-sensitive
}

TEST(QueryParamsTest, EdgeCasesHaveDefinedAnswers) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(pairs(*QueryParams::parse("&&a=1&&b=2&")), (std::vector<P>{{"a", "1"}, {"b", "2"}}));  // empty pairs skipped
  EXPECT_EQ(pairs(*QueryParams::parse("a=b=c")), (std::vector<P>{{"a", "b=c"}}));                  // first '=' splits
  EXPECT_EQ(pairs(*QueryParams::parse("=v")), (std::vector<P>{{"", "v"}}));                         // empty name kept
  EXPECT_EQ(pairs(*QueryParams::parse("a%3Db=c%26d")), (std::vector<P>{{"a=b", "c&d"}}));          // escaped separators
  EXPECT_TRUE(QueryParams::parse("")->empty());
  auto repeated = QueryParams::parse("k=1&k=2");
  EXPECT_EQ(repeated->get("k"), "1");  // the first; iteration gives both
  EXPECT_EQ(repeated->size(), 2u);
  EXPECT_EQ((*repeated)[1].value, "2");
}

TEST(QueryParamsTest, AMalformedEscapeAnywhereRefusesTheQuery) {
  for (std::string_view bad : {"a=%", "a=1&b=%zz", "%4=x", "ok=1&bad%=2"}) {
    EXPECT_EQ(QueryParams::parse(bad), std::nullopt) << bad;
  }
}

TEST(QueryParamsTest, ViewsStayValidWhenTheParamsMove) {
  auto q = QueryParams::parse("a=1");  // short: its decoded bytes live inside the string object
  QueryParams moved = std::move(*q);
  QueryParams again = std::move(moved);
  EXPECT_EQ(again.get("a"), "1");
  EXPECT_EQ(again[0].name, "a");
}

TEST(QueryParamsTest, LongQueriesParseInOnePass) {
  std::string query;
  for (int i = 0; i < 10'000; ++i) query += "k" + std::to_string(i) + "=v%20" + std::to_string(i) + "&";
  auto q = QueryParams::parse(query);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->size(), 10'000u);
  EXPECT_EQ(q->get("k9999"), "v 9999");
}

}  // namespace
}  // namespace weft::http
