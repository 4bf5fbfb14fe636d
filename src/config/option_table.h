// The options table: one entry per setting of the engine, the single place
// where a setting's key, spellings, environment variable, accepted values,
// default and description are written down.  ParseOptions (options.h) parses
// and validates with it, `adxl-info` prints it, and docs/options.md's options
// table is generated from it (`adxl-info --markdown`, checked by ctest).
//
// Defaults are EngineOptions' member initializers: an entry renders its
// field(s) of a default-constructed EngineOptions as text that the entry
// itself accepts (checked by tests/unit/option_table_test.cc), so a default
// is written once.
#ifndef ADXL_SRC_CONFIG_OPTION_TABLE_H_
#define ADXL_SRC_CONFIG_OPTION_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "config/options.h"

namespace adxl {

enum class OptionKind {
  kVendor,   // key as in the vendor's API; also accepted as "adxl." + key, the un-prefixed spelling wins
  kProject,  // this project's key, "adxl." prefix only
  kEnvOnly,  // environment variable only, read where it is used (not by ParseOptions); documented here
};

struct OptionSpec {
  const char *key;  // as documented; nullptr for kEnvOnly
  OptionKind kind;
  const char *env;          // environment fallback (kEnvOnly: the variable); nullptr for none
  bool empty_env_is_unset;  // an empty environment value counts as not set
  bool bytes;               // an integer number of bytes (printed with a binary unit too)
  const char *values;       // accepted values, in words (markdown: `code` spans allowed)
  const char *description;  // what it does (markdown as for values)

  // Integer settings: [lo, hi], and a multiple of `multiple` when non-zero.
  // get/set are non-null exactly for these; `values` is then generated.
  int64_t lo, hi, multiple;
  int64_t (*get)(const EngineOptions &o);
  void (*set)(EngineOptions *o, int64_t v);

  // Other settings: checks `value` and stores it in *o; on error sets *why
  // (naming the key or the variable).  Null for kEnvOnly.
  bool (*apply)(const OptionSpec &spec, const std::string &value, bool from_env, EngineOptions *o,
                std::string *why);
  // The setting in `o` as text `apply` accepts; "" when unset.  Null for kEnvOnly.
  std::string (*show)(const EngineOptions &o);

  bool is_int() const { return get != nullptr; }
  // Checks and stores a value, integer or not.
  bool Apply(const std::string &value, bool from_env, EngineOptions *o, std::string *why) const;
  // The setting's value in `o` ("" when unset); "" for kEnvOnly.
  std::string Show(const EngineOptions &o) const;
  // Accepted values in words (generated for integers).
  std::string Values() const;
  // The default for people: Show(EngineOptions{}) with a unit, or "none".
  std::string DefaultText() const;
  // "key", "adxl.key" (vendor: both), or the variable for kEnvOnly.
  std::string Name() const;
};

// Every setting, in the order ParseOptions applies them.
const std::vector<OptionSpec> &OptionTable();

// The value of the environment variable `name` (null when unset), which
// must be a kEnvOnly entry of the table: the engine reads the settings that
// are read where they are used through this, so that none is read without
// being in the table (and so in adxl-info and docs/options.md).  A name
// that is not in the table gives null and an ERROR line, set or not.
const char *EnvOnlySetting(const char *name);

// The table as a markdown table (docs/options.md), and as plain text for people.
std::string OptionTableMarkdown();
std::string OptionTableText();

}  // namespace adxl

#endif  // ADXL_SRC_CONFIG_OPTION_TABLE_H_
