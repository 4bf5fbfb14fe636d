// The options table itself (src/config/option_table.h): complete, consistent,
// and in agreement with ParseOptions and EngineOptions' defaults.
#include "config/option_table.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace adxl {
namespace {

// Clears every variable of the table for the test, restoring it afterwards.
class OptionTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const OptionSpec &s : OptionTable()) {
      if (s.env == nullptr) continue;
      const char *v = getenv(s.env);
      saved_.emplace_back(s.env, v != nullptr ? std::optional<std::string>(v) : std::nullopt);
      unsetenv(s.env);
    }
  }
  void TearDown() override {
    for (const auto &e : saved_) {
      if (e.second.has_value()) setenv(e.first.c_str(), e.second->c_str(), 1);
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(OptionTableTest, EveryEntryIsDocumented) {
  ASSERT_FALSE(OptionTable().empty());
  for (const OptionSpec &s : OptionTable()) {
    SCOPED_TRACE(s.Name());
    ASSERT_NE(s.description, nullptr);
    EXPECT_GT(std::string(s.description).size(), 10u);
    EXPECT_FALSE(s.Values().empty());
    EXPECT_EQ(s.description[0] != '\0' && std::string(s.description).find('|') == std::string::npos, true)
        << "a '|' would break the markdown table";
    EXPECT_EQ(s.Values().find('|'), std::string::npos);
    if (s.kind == OptionKind::kEnvOnly) {
      EXPECT_EQ(s.key, nullptr);
      ASSERT_NE(s.env, nullptr);
      EXPECT_EQ(s.apply, nullptr);
      EXPECT_FALSE(s.is_int());
      continue;
    }
    ASSERT_NE(s.key, nullptr);
    const std::string key = s.key;
    if (s.kind == OptionKind::kProject) {
      EXPECT_EQ(key.rfind("adxl.", 0), 0u) << "project keys carry the adxl. prefix";
      EXPECT_NE(s.env, nullptr) << "every project key has an environment fallback";
    } else {
      EXPECT_NE(key.rfind("adxl.", 0), 0u) << "vendor keys are listed without the prefix";
    }
    EXPECT_TRUE(s.is_int() || (s.apply != nullptr && s.show != nullptr));
    if (s.is_int()) {
      EXPECT_NE(s.set, nullptr);
      EXPECT_LE(s.lo, s.hi);
    }
    if (s.env != nullptr) {
      EXPECT_EQ(std::string(s.env).rfind(s.kind == OptionKind::kVendor ? "HCCL_" : "ADXL_", 0), 0u);
    }
  }
}

// EnvOnlySetting reads exactly the variables of the table's kEnvOnly
// entries: each reads through, a name outside the table reads as unset.
TEST_F(OptionTableTest, EnvOnlySettingReadsOnlyTheTablesVariables) {
  for (const OptionSpec &s : OptionTable()) {
    if (s.kind != OptionKind::kEnvOnly) continue;
    EXPECT_EQ(EnvOnlySetting(s.env), nullptr) << s.env;
    setenv(s.env, "x", 1);
    const char *v = EnvOnlySetting(s.env);
    EXPECT_TRUE(v != nullptr && std::string(v) == "x") << s.env;
    unsetenv(s.env);
  }
  setenv("ADXL_NOT_AN_OPTION_FOR_THIS_TEST", "1", 1);
  EXPECT_EQ(EnvOnlySetting("ADXL_NOT_AN_OPTION_FOR_THIS_TEST"), nullptr);
  unsetenv("ADXL_NOT_AN_OPTION_FOR_THIS_TEST");
}

TEST_F(OptionTableTest, NoDuplicateKeysOrVariables) {
  std::set<std::string> keys, envs;
  for (const OptionSpec &s : OptionTable()) {
    if (s.key != nullptr) {
      EXPECT_TRUE(keys.insert(s.key).second) << "duplicate key " << s.key;
      // A vendor key's prefixed spelling must not be another entry's key.
      if (s.kind == OptionKind::kVendor) {
        EXPECT_TRUE(keys.insert(std::string("adxl.") + s.key).second) << s.key;
      }
    }
    if (s.env != nullptr) {
      EXPECT_TRUE(envs.insert(s.env).second) << "duplicate variable " << s.env;
    }
  }
}

// Each default, as printed, is accepted by the entry's own check and gives
// back the same value: the printed defaults are EngineOptions' defaults.
TEST_F(OptionTableTest, DefaultsParseUnderTheirOwnValidation) {
  const EngineOptions defaults;
  for (const OptionSpec &s : OptionTable()) {
    if (s.kind == OptionKind::kEnvOnly) continue;
    SCOPED_TRACE(s.Name());
    const std::string def = s.Show(defaults);
    EXPECT_FALSE(s.DefaultText().empty());
    if (def.empty()) {
      EXPECT_EQ(s.DefaultText(), "none");
      continue;  // unset by default (LocalCommRes, adxl.PluginPath, adxl.AuthToken)
    }
    EngineOptions o;
    std::string why;
    ASSERT_TRUE(s.Apply(def, false, &o, &why)) << "default '" << def << "' rejected: " << why;
    EXPECT_EQ(s.Show(o), def);
    // And through ParseOptions, under the documented key.
    EngineOptions p;
    ASSERT_TRUE(ParseOptions({{s.key, def}}, &p, &why)) << why;
    EXPECT_EQ(s.Show(p), def);
  }
}

// Every key of the table is accepted by ParseOptions in the spellings the
// table promises, and only those.
TEST_F(OptionTableTest, SpellingsFollowTheKind) {
  for (const OptionSpec &s : OptionTable()) {
    if (s.kind == OptionKind::kEnvOnly) continue;
    SCOPED_TRACE(s.Name());
    const std::string def = s.Show(EngineOptions{});
    const std::string value = def.empty() ? (std::string(s.key) == "LocalCommRes" ? "{}" : "x") : def;
    EngineOptions o;
    std::string why;
    EXPECT_TRUE(ParseOptions({{s.key, value}}, &o, &why)) << why;
    const std::string bare = s.kind == OptionKind::kVendor ? s.key : std::string(s.key).substr(5);
    EXPECT_EQ(ParseOptions({{"adxl." + bare, value}}, &o, &why), true) << why;
    EXPECT_EQ(ParseOptions({{bare, value}}, &o, &why), s.kind == OptionKind::kVendor);
  }
}

TEST_F(OptionTableTest, MarkdownHasOneRowPerEntry) {
  const std::string md = OptionTableMarkdown();
  size_t lines = 0;
  for (char c : md) lines += c == '\n';
  EXPECT_EQ(lines, OptionTable().size() + 2);  // header and separator
  for (const OptionSpec &s : OptionTable()) {
    EXPECT_NE(md.find("`" + s.Name() + "`"), std::string::npos) << s.Name();
  }
  EXPECT_NE(OptionTableText().find("adxl.HeartbeatMs"), std::string::npos);
}

}  // namespace
}  // namespace adxl
