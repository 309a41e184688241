#include "engine/compiler/dump.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <kiln/error.hpp>

namespace kiln::compiler {
namespace {

std::string file_name(const std::string& name) {
  std::string out = name.empty() ? "kernel" : name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return out;
}

void write(const std::string& dir, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out)
    throw ArgumentError(fmt::format("KILN_DUMP_DIR={}: cannot write {} (set it to a writable "
                                    "directory, or unset it)",
                                    dir, path));
}

}  // namespace

void dump_compile(const KernelSpec& spec, const std::string& arch, nvrtcProgram program,
                  const std::string& options, const std::string& log) {
  const char* env = std::getenv("KILN_DUMP_DIR");
  if (!env || !*env) return;
  const std::string dir = env;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw ArgumentError(fmt::format(
        "KILN_DUMP_DIR={}: not a directory (create it, or unset the variable)", dir));
  const std::string base = dir + "/" + file_name(spec.name) + "." + file_name(arch);
  write(dir, base + ".cu", spec.source);
  std::size_t size = 0;
  if (nvrtcGetPTXSize(program, &size) == NVRTC_SUCCESS && size > 1) {
    std::string ptx(size, '\0');
    if (nvrtcGetPTX(program, ptx.data()) == NVRTC_SUCCESS) {
      while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
      write(dir, base + ".ptx", ptx);
    }
  }
  write(dir, base + ".log",
        fmt::format("// instantiation: {}\n// options: {}\n{}\n", spec.expression, options, log));
}

}  // namespace kiln::compiler
