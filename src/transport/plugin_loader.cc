#include "transport/plugin_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

namespace adxl {
namespace {

std::string OwnLibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&OwnLibraryDir), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string p = info.dli_fname;
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

}  // namespace

PluginLibrary::PluginLibrary(void *handle, const adxl_plugin_ops_t *ops, std::string path)
    : handle_(handle), ops_{}, path_(std::move(path)) {
  // Only the bytes the plugin's table has: a shorter (older) table leaves
  // the operations appended since NULL.
  memcpy(&ops_, ops, std::min<size_t>(ops->struct_size, sizeof(ops_)));
}

std::unique_ptr<PluginLibrary> PluginLibrary::LoadFile(const std::string &path, uint32_t abi_version,
                                                       std::string *why) {
  // RTLD_NODELETE: transport libraries (UCX) install process-wide hooks and
  // must stay mapped after the last engine closes.
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (h == nullptr) {
    const char *e = dlerror();
    *why = path + ": " + (e != nullptr ? e : "dlopen failed");
    return nullptr;
  }
  auto entry = reinterpret_cast<adxl_plugin_get_ops_fn>(dlsym(h, ADXL_PLUGIN_ENTRY));
  if (entry == nullptr) {
    *why = path + ": no " ADXL_PLUGIN_ENTRY " symbol (not an ADXL plugin)";
    dlclose(h);
    return nullptr;
  }
  const adxl_plugin_ops_t *ops = entry(abi_version);
  if (ops == nullptr) {
    // Name both versions: ask the plugin for the table of the version this
    // loader was built for, which tells the plugin's own version.
    const adxl_plugin_ops_t *own = abi_version != ADXL_PLUGIN_ABI_VERSION ? entry(ADXL_PLUGIN_ABI_VERSION) : nullptr;
    *why = path + ": refused engine ABI version " + std::to_string(abi_version) +
           (own != nullptr ? " (plugin ABI version " + std::to_string(own->abi_version) + ")" : std::string()) +
           ": refusing to load";
    dlclose(h);
    return nullptr;
  }
  if (ops->abi_version != abi_version || ops->struct_size < ADXL_PLUGIN_OPS_MIN_SIZE) {
    *why = path + ": plugin ABI version " + std::to_string(ops->abi_version) + ", engine ABI version " +
           std::to_string(abi_version) +
           (ops->abi_version == abi_version ? ", operations table of " + std::to_string(ops->struct_size) +
                                                  " bytes (at least " + std::to_string(ADXL_PLUGIN_OPS_MIN_SIZE) +
                                                  " expected)"
                                            : std::string()) +
           ": refusing to load";
    dlclose(h);
    return nullptr;
  }
  return std::unique_ptr<PluginLibrary>(new PluginLibrary(h, ops, path));
}

std::unique_ptr<PluginLibrary> PluginLibrary::Load(const std::string &name, const std::string &search_path,
                                                   std::string *why) {
  std::vector<std::string> dirs;
  std::stringstream ss(search_path);
  std::string d;
  while (std::getline(ss, d, ':')) {
    if (!d.empty()) dirs.push_back(d);
  }
  std::string own = OwnLibraryDir();
  if (!own.empty()) dirs.push_back(own + "/adxl");
#ifdef ADXL_INSTALL_PLUGIN_DIR
  dirs.push_back(ADXL_INSTALL_PLUGIN_DIR);
#endif
  const std::string file = "libadxl_plugin_" + name + ".so";
  std::string tried;
  for (const std::string &dir : dirs) {
    std::string path = dir + "/" + file;
    if (access(path.c_str(), R_OK) != 0) {
      tried += " " + dir;
      continue;
    }
    return LoadFile(path, ADXL_PLUGIN_ABI_VERSION, why);
  }
  *why = "transport plugin " + file + " not found in:" + tried + " (set adxl.PluginPath or ADXL_PLUGIN_PATH)";
  return nullptr;
}

PluginLibrary::~PluginLibrary() { dlclose(handle_); }

}  // namespace adxl
