// Engine names (docs/contract.md §2): "ipv4", "ipv4:port", "[ipv6]", "[ipv6]:port",
// numeric addresses only, decimal port in [0, 65535].
#include "common/engine_name.h"

#include <gtest/gtest.h>

#include <string>

namespace adxl {
namespace {

// Parses a name that must be accepted.
EngineName MustParse(const std::string &text) {
  EngineName n;
  std::string why;
  EXPECT_TRUE(ParseEngineName(text, &n, &why)) << "'" << text << "' rejected: " << why;
  return n;
}

// Checks that a name is rejected with a reason and that *out is untouched.
void ExpectRejected(const std::string &text) {
  EngineName n;
  n.text = "sentinel";
  n.host = "sentinel-host";
  n.port = 4242;
  std::string why;
  EXPECT_FALSE(ParseEngineName(text, &n, &why)) << "'" << text << "' accepted";
  EXPECT_FALSE(why.empty()) << "no reason given for '" << text << "'";
  EXPECT_EQ(n.text, "sentinel") << "output changed on rejection of '" << text << "'";
  EXPECT_EQ(n.host, "sentinel-host");
  EXPECT_EQ(n.port, 4242);
}

TEST(EngineNameTest, Ipv4WithoutPortIsClientOnly) {
  EngineName n = MustParse("10.1.2.3");
  EXPECT_EQ(n.text, "10.1.2.3");
  EXPECT_EQ(n.host, "10.1.2.3");
  EXPECT_FALSE(n.ipv6);
  EXPECT_EQ(n.port, 0);
  EXPECT_FALSE(n.listens());
}

TEST(EngineNameTest, Ipv4WithPortListens) {
  EngineName n = MustParse("127.0.0.1:26000");
  EXPECT_EQ(n.text, "127.0.0.1:26000");
  EXPECT_EQ(n.host, "127.0.0.1");
  EXPECT_FALSE(n.ipv6);
  EXPECT_EQ(n.port, 26000);
  EXPECT_TRUE(n.listens());
}

TEST(EngineNameTest, Ipv4PortZeroIsClientOnly) {
  EngineName n = MustParse("192.168.0.1:0");
  EXPECT_EQ(n.host, "192.168.0.1");
  EXPECT_EQ(n.port, 0);
  EXPECT_FALSE(n.listens());
}

TEST(EngineNameTest, PortOneListens) {
  EngineName n = MustParse("1.2.3.4:1");
  EXPECT_EQ(n.port, 1);
  EXPECT_TRUE(n.listens());
}

TEST(EngineNameTest, Port65535IsAccepted) {
  EngineName n = MustParse("1.2.3.4:65535");
  EXPECT_EQ(n.port, 65535);
  EXPECT_TRUE(n.listens());
}

TEST(EngineNameTest, BracketedIpv6WithoutPort) {
  EngineName n = MustParse("[::1]");
  EXPECT_EQ(n.text, "[::1]");
  EXPECT_EQ(n.host, "::1");
  EXPECT_TRUE(n.ipv6);
  EXPECT_EQ(n.port, 0);
  EXPECT_FALSE(n.listens());
}

TEST(EngineNameTest, BracketedIpv6WithPort) {
  EngineName n = MustParse("[fe80::1:2]:26001");
  EXPECT_EQ(n.text, "[fe80::1:2]:26001");
  EXPECT_EQ(n.host, "fe80::1:2");
  EXPECT_TRUE(n.ipv6);
  EXPECT_EQ(n.port, 26001);
  EXPECT_TRUE(n.listens());
}

TEST(EngineNameTest, BracketedIpv6PortZeroAndMax) {
  EngineName zero = MustParse("[::1]:0");
  EXPECT_TRUE(zero.ipv6);
  EXPECT_EQ(zero.port, 0);
  EXPECT_FALSE(zero.listens());
  EngineName max = MustParse("[2001:db8::7]:65535");
  EXPECT_EQ(max.host, "2001:db8::7");
  EXPECT_EQ(max.port, 65535);
  EXPECT_TRUE(max.listens());
}

TEST(EngineNameTest, Ipv4MappedIpv6IsAccepted) {
  EngineName n = MustParse("[::ffff:10.0.0.1]:80");
  EXPECT_TRUE(n.ipv6);
  EXPECT_EQ(n.host, "::ffff:10.0.0.1");
  EXPECT_EQ(n.port, 80);
}

TEST(EngineNameTest, TextIsPreservedExactly) {
  // The identity is the string as given, not a normalised form.
  EXPECT_EQ(MustParse("[0:0:0:0:0:0:0:1]:7").text, "[0:0:0:0:0:0:0:1]:7");
  EXPECT_EQ(MustParse("[0:0:0:0:0:0:0:1]:7").host, "0:0:0:0:0:0:0:1");
  EXPECT_EQ(MustParse("10.0.0.1:00080").text, "10.0.0.1:00080");
  EXPECT_EQ(MustParse("10.0.0.1:00080").port, 80);
}

TEST(EngineNameTest, RejectsHostNames) {
  ExpectRejected("localhost");
  ExpectRejected("localhost:26000");
  ExpectRejected("example.com:80");
  ExpectRejected("[localhost]:80");
}

TEST(EngineNameTest, RejectsMalformedIpv4) {
  ExpectRejected("1.2.3");
  ExpectRejected("1.2.3.256");
  ExpectRejected("1.2.3.4.5");
  ExpectRejected("[1.2.3.4]:80");  // IPv4 in brackets is not IPv6
}

TEST(EngineNameTest, RejectsBareIpv6) {
  ExpectRejected("::1");
  ExpectRejected("::1:80");
  ExpectRejected("fe80::1");
  ExpectRejected("2001:db8::1:26000");
}

TEST(EngineNameTest, BareIpv6ReasonSuggestsBrackets) {
  EngineName n;
  std::string why;
  ASSERT_FALSE(ParseEngineName("::1:26000", &n, &why));
  EXPECT_NE(why.find("bracket"), std::string::npos) << why;
}

TEST(EngineNameTest, RejectsMissingCloseBracket) {
  ExpectRejected("[::1");
  ExpectRejected("[::1:80");
  ExpectRejected("[");
}

TEST(EngineNameTest, RejectsJunkAfterCloseBracket) {
  ExpectRejected("[::1]x");
  ExpectRejected("[::1]80");
  ExpectRejected("[::1]]");
  ExpectRejected("[::1] :80");
}

TEST(EngineNameTest, RejectsEmptyBrackets) { ExpectRejected("[]:80"); }

TEST(EngineNameTest, RejectsNonNumericPort) {
  ExpectRejected("1.2.3.4:http");
  ExpectRejected("1.2.3.4:80a");
  ExpectRejected("1.2.3.4:+80");
  ExpectRejected("1.2.3.4:0x50");
  ExpectRejected("[::1]:abc");
}

TEST(EngineNameTest, RejectsPortOutOfRange) {
  ExpectRejected("1.2.3.4:65536");
  ExpectRejected("1.2.3.4:99999");
  ExpectRejected("1.2.3.4:4294967296");
  ExpectRejected("1.2.3.4:100000000000000000000");
  ExpectRejected("[::1]:65536");
}

TEST(EngineNameTest, RejectsNegativePort) {
  ExpectRejected("1.2.3.4:-1");
  ExpectRejected("[::1]:-80");
}

TEST(EngineNameTest, RejectsEmptyPort) {
  ExpectRejected("1.2.3.4:");
  ExpectRejected("[::1]:");
}

TEST(EngineNameTest, RejectsEmptyString) { ExpectRejected(""); }

TEST(EngineNameTest, RejectsSpaces) {
  ExpectRejected(" 1.2.3.4");
  ExpectRejected("1.2.3.4 ");
  ExpectRejected("1.2.3.4: 80");
  ExpectRejected("1.2.3.4:80 ");
  ExpectRejected("[ ::1]:80");
  ExpectRejected(" ");
}

TEST(EngineNameTest, RejectsMissingHost) {
  ExpectRejected(":80");
  ExpectRejected(":");
}

}  // namespace
}  // namespace adxl
