// Finds, loads and checks a transport plugin (include/adxl/plugin/adxl_plugin.h).
//
// The file for plugin "NAME" is libadxl_plugin_NAME.so, searched in order in:
//   1. each directory of the adxl.PluginPath option / ADXL_PLUGIN_PATH;
//   2. "adxl/" beside the libadxl.so that is running (build tree and install
//      tree have the same layout, so no setting is needed);
//   3. the install prefix's plugin directory compiled in.
// A plugin built for another ABI version is refused with a message naming both;
// a table of this version that lacks the optional operations appended to it
// later (post_by) is accepted, those operations read as NULL.
#ifndef ADXL_SRC_TRANSPORT_PLUGIN_LOADER_H_
#define ADXL_SRC_TRANSPORT_PLUGIN_LOADER_H_

#include <memory>
#include <string>

#include "adxl/plugin/adxl_plugin.h"

namespace adxl {

class PluginLibrary {
 public:
  // Returns nullptr and sets *why when no usable plugin was found.
  static std::unique_ptr<PluginLibrary> Load(const std::string &name, const std::string &search_path,
                                             std::string *why);
  // Loads one file by path (used by the plugin conformance suite).
  static std::unique_ptr<PluginLibrary> LoadFile(const std::string &path, uint32_t abi_version, std::string *why);
  ~PluginLibrary();

  // The plugin's table, completed to this build's size: operations the
  // plugin's table is too short to have (an older build's) are NULL.
  const adxl_plugin_ops_t &ops() const { return ops_; }
  const std::string &path() const { return path_; }

 private:
  // `ops` is at least ADXL_PLUGIN_OPS_MIN_SIZE bytes (checked by LoadFile).
  PluginLibrary(void *handle, const adxl_plugin_ops_t *ops, std::string path);
  void *handle_;
  adxl_plugin_ops_t ops_;
  std::string path_;
};

}  // namespace adxl

#endif  // ADXL_SRC_TRANSPORT_PLUGIN_LOADER_H_
