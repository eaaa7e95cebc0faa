// geofs-import-floor: the CPU an import of SRC... cannot avoid, stage by
// stage (see import_floor.h); bench/import_bench.sh prints it next to cp's
// time.
//
//   geofs-import-floor [--zstd-level N] [--json FILE] SRC...
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "import_floor.h"

namespace geofs::bench {
namespace {

int Run(int argc, char** argv) {
  CLI::App app{"The CPU an import must spend, stage by stage, on one thread"};
  std::vector<std::string> sources;
  std::string json_path;
  chunk::ChunkCodecOptions codec;
  codec.zstd_level = 1;  // geofsctl import's default
  app.add_option("SRC", sources, "Directories, imported in this order into one hub")->required();
  app.add_option("--zstd-level", codec.zstd_level, "Compression level (geofsctl's default: 1)");
  app.add_option("--json", json_path, "Also write the figures to this file");
  CLI11_PARSE(app, argc, argv);

  auto measured = MeasureImportFloor(sources, codec);
  if (!measured.ok()) {
    std::fprintf(stderr, "geofs-import-floor: %s\n", measured.status().ToString().c_str());
    return 1;
  }
  const ImportFloor& f = *measured;
  const double mib = f.bytes / 1048576.0;
  std::printf("%llu files, %.1f MiB, %llu chunks (%llu new), stored %.1f MiB\n",
              static_cast<unsigned long long>(f.files), mib,
              static_cast<unsigned long long>(f.chunks),
              static_cast<unsigned long long>(f.new_chunks), f.stored_bytes / 1048576.0);
  std::printf("| stage | CPU s | MiB/s |\n|---|---:|---:|\n");
  auto row = [&](const char* stage, double seconds) {
    std::printf("| %s | %.3f | %.0f |\n", stage, seconds, seconds > 0 ? mib / seconds : 0.0);
  };
  row("read", f.read);
  row("chunk", f.chunk);
  row("name (SHA-256)", f.name);
  row("encode", f.encode);
  row("verify (decode + SHA-256)", f.verify);
  row("total", f.TotalCpu());

  if (!json_path.empty()) {
    const nlohmann::json j = {{"files", f.files},
                              {"bytes", f.bytes},
                              {"chunks", f.chunks},
                              {"new_chunks", f.new_chunks},
                              {"stored_bytes", f.stored_bytes},
                              {"zstd_level", codec.zstd_level},
                              {"cpu_seconds",
                               {{"read", f.read},
                                {"chunk", f.chunk},
                                {"name", f.name},
                                {"encode", f.encode},
                                {"verify", f.verify},
                                {"total", f.TotalCpu()}}}};
    std::ofstream out(json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "geofs-import-floor: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace geofs::bench

int main(int argc, char** argv) { return geofs::bench::Run(argc, argv); }
