// adxl-info: the engine's settings and its transport plugin, in the spirit of
// `ucx_info -c`.
//
//   adxl-info                 every option (the table of src/config/option_table.cc),
//                             then the transport plugin: where it was found and what it
//                             reports through its ABI (include/adxl/plugin/adxl_plugin.h)
//   adxl-info -c              the options only
//   adxl-info --markdown      the options as a markdown table (docs/options.md's)
//   --plugin NAME, --plugin-path DIRS: as adxl.Plugin / adxl.PluginPath (which,
//   with ADXL_PLUGIN / ADXL_PLUGIN_PATH, apply as for the engine).
//
// Exit status: 0; 1 when the plugin cannot be loaded or opened (the options are
// printed first); 2 on a usage error.
#include <unistd.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adxl/plugin/adxl_plugin.h"
#include "config/option_table.h"
#include "config/options.h"
#include "transport/plugin_loader.h"

namespace {

void Usage(FILE *f) {
  fprintf(f,
          "usage: adxl-info [-c] [--markdown] [--plugin NAME] [--plugin-path DIRS]\n"
          "  (no flag)         the options, then the transport plugin and what it reports\n"
          "  -c, --options     the options only\n"
          "  --markdown        the options as a markdown table\n"
          "  --plugin NAME     the plugin to load (default: adxl.Plugin's value)\n"
          "  --plugin-path D   ':'-separated directories searched first (default: adxl.PluginPath's)\n");
}

// The directory of this executable ("" when unknown).
std::string ExeDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string p(buf, static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

void PluginLog(void *, int level, const char *msg) {
  if (level <= ADXL_PLUGIN_LOG_WARN) fprintf(stderr, "adxl-info: plugin: %s\n", msg);
}

int PrintPlugin(const std::string &name, const std::string &search, const adxl::EngineOptions &o) {
  std::string why;
  std::unique_ptr<adxl::PluginLibrary> lib = adxl::PluginLibrary::Load(name, search, &why);
  if (!lib) {
    fprintf(stderr, "adxl-info: cannot load transport plugin '%s': %s\n", name.c_str(), why.c_str());
    return 1;
  }
  const adxl_plugin_ops_t &ops = lib->ops();
  printf("# Transport plugin\n");
  printf("path:         %s\n", lib->path().c_str());
  printf("name:         %s\n", ops.name != nullptr ? ops.name : "(none)");
  printf("ABI version:  %u (engine %u), ops table of %u bytes\n", ops.abi_version, ADXL_PLUGIN_ABI_VERSION,
         ops.struct_size);
  // A context as the engine opens one (less the CPU placement it computes),
  // to ask what it can do.
  std::map<std::string, std::string> params = {{"rdma_traffic_class", std::to_string(o.traffic_class)},
                                               {"rdma_service_level", std::to_string(o.service_level)}};
  if (o.hccs_copy_threads != 0) params["hccs_copy_threads"] = std::to_string(o.hccs_copy_threads);
  std::vector<adxl_plugin_param_t> p;
  for (const auto &kv : params) p.push_back({kv.first.c_str(), kv.second.c_str()});
  adxl_plugin_config_t cfg{p.data(), p.size(), PluginLog, nullptr};
  adxl_plugin_context_t *ctx = nullptr;
  int rc = ops.open(&cfg, &ctx);
  if (rc != ADXL_PLUGIN_OK) {
    fprintf(stderr, "adxl-info: plugin %s failed to open a context (status %d)\n", lib->path().c_str(), rc);
    return 1;
  }
  adxl_plugin_caps_t caps;
  memset(&caps, 0, sizeof(caps));
  rc = ops.query(ctx, &caps);
  if (rc != ADXL_PLUGIN_OK) {
    ops.close(ctx);
    fprintf(stderr, "adxl-info: plugin %s: query failed (status %d)\n", lib->path().c_str(), rc);
    return 1;
  }
  caps.transports[sizeof(caps.transports) - 1] = '\0';
  std::string mem;
  if (caps.flags & ADXL_PLUGIN_CAP_MEM_HOST) mem += "host";
  if (caps.flags & ADXL_PLUGIN_CAP_MEM_DEVICE) mem += mem.empty() ? "device" : ", device";
  printf("memory types: %s\n", mem.empty() ? "(none)" : mem.c_str());
  printf("transports:   %s\n", caps.transports[0] != '\0' ? caps.transports : "(none reported)");
  ops.close(ctx);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  bool options_only = false, markdown = false;
  std::string plugin, plugin_path;
  bool have_plugin = false, have_plugin_path = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-c" || a == "--options") {
      options_only = true;
    } else if (a == "--markdown") {
      markdown = true;
    } else if ((a == "--plugin" || a == "--plugin-path") && i + 1 < argc) {
      (a == "--plugin" ? plugin : plugin_path) = argv[++i];
      (a == "--plugin" ? have_plugin : have_plugin_path) = true;
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "adxl-info: unknown argument '%s'\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  if (markdown) {
    fputs(adxl::OptionTableMarkdown().c_str(), stdout);
    return 0;
  }
  printf("# ADXL options: key (vendor keys also as adxl.KEY, the un-prefixed one wins;\n"
         "# project keys adxl.* only), environment fallback (the option wins), values, default\n\n");
  fputs(adxl::OptionTableText().c_str(), stdout);
  if (options_only) return 0;

  // The plugin the engine would load with these settings: the environment's,
  // overridden by the flags.
  adxl::EngineOptions o;
  std::string why;
  std::map<std::string, std::string> given;
  if (have_plugin) given["adxl.Plugin"] = plugin;
  if (have_plugin_path) given["adxl.PluginPath"] = plugin_path;
  if (!adxl::ParseOptions(given, &o, &why)) {
    fprintf(stderr, "adxl-info: %s\n", why.c_str());
    return 1;
  }
  // The loader looks beside libadxl.so; this tool has the engine linked in,
  // so it adds the plugin directories relative to itself: the build tree's
  // (bin/ beside lib/adxl/) and the install tree's.
  std::string search = o.plugin_path;
  const std::string exe = ExeDir();
  if (!exe.empty()) {
    search += ":" + exe + "/../lib/adxl";
    search += ":" + exe + "/" ADXL_INFO_PLUGIN_RELDIR;
  }
  return PrintPlugin(o.plugin, search, o);
}
