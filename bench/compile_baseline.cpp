// The cold-compile baseline of bench/compile.py: the first NVRTC compile, in this fresh
// process, of a tiny kernel (x[i] = x[i] * a + 1) to a cubin for --arch. Prints its time in ms,
// measured as kiln's compiler measures its own (program creation to the cubin in hand).
#include <nvrtc.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string arch = argc > 1 ? argv[1] : "sm_90a";
  const char* source =
      "extern \"C\" __global__ void tiny(float* x, float a, int n) {\n"
      "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) x[i] = x[i] * a + 1;\n"
      "}\n";
  const std::string target = "--gpu-architecture=" + arch;
  const char* options[] = {target.c_str()};
  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source, "tiny.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return 1;
  const nvrtcResult r = nvrtcCompileProgram(prog, 1, options);
  std::size_t size = 0;
  if (r == NVRTC_SUCCESS) nvrtcGetCUBINSize(prog, &size);
  std::vector<char> cubin(size);
  if (size) nvrtcGetCUBIN(prog, cubin.data());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  nvrtcDestroyProgram(&prog);
  if (r != NVRTC_SUCCESS || size == 0) {
    std::fprintf(stderr, "compile_baseline: NVRTC failed for %s: %s\n", arch.c_str(),
                 nvrtcGetErrorString(r));
    return 1;
  }
  std::printf("%.2f\n", ms);
  return 0;
}
