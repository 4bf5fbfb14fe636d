// The main of a corpus replayer (built without libFuzzer, run by ctest on
// every build): reads every regular file of each directory (sorted) or each
// file named on the command line and hands its bytes to `replay`, which
// checks them and says whether they were handled as the file's name says.  Exits non-zero when a file
// cannot be read, when nothing was replayed, or when `replay` said no.
#ifndef ADXL_TESTS_FUZZ_CORPUS_REPLAY_H_
#define ADXL_TESTS_FUZZ_CORPUS_REPLAY_H_

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using ReplayFn = bool (*)(const std::string &path, const std::vector<uint8_t> &bytes);

inline bool ReplayOneFile(const std::string &path, ReplayFn replay) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return replay(path, bytes);
}

inline int ReplayCorpusMain(int argc, char **argv, ReplayFn replay) {
  size_t replayed = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    struct stat st {};
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "no such file or directory: %s\n", argv[i]);
      ok = false;
      continue;
    }
    std::vector<std::string> files;
    if (S_ISDIR(st.st_mode)) {
      DIR *d = opendir(argv[i]);
      if (d == nullptr) {
        ok = false;
        continue;
      }
      while (dirent *e = readdir(d)) {
        const std::string p = std::string(argv[i]) + "/" + e->d_name;
        struct stat fs {};
        if (e->d_name[0] != '.' && stat(p.c_str(), &fs) == 0 && S_ISREG(fs.st_mode)) files.push_back(p);
      }
      closedir(d);
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(argv[i]);
    }
    for (const std::string &f : files) {
      ok = ReplayOneFile(f, replay) && ok;
      ++replayed;
    }
  }
  std::printf("%zu file(s) replayed\n", replayed);
  if (replayed == 0) {
    std::fprintf(stderr, "no corpus file found\n");
    return 1;
  }
  return ok ? 0 : 1;
}

#endif  // ADXL_TESTS_FUZZ_CORPUS_REPLAY_H_
