/* A C99 program against kiln's C API (tests/capi/consumer_test.cpp compiles it with
 * -std=c99 -Wall -Werror -pedantic against the installed package): builds a graph node by
 * node, plans and compiles it offline into the cache directory argv[1], and checks the error
 * paths. Prints "consumer: ok" and exits 0, or names the first check that failed. */
#include <kiln/kiln.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "consumer.c:%d: %s failed (last error: %s)\n", __LINE__, #cond, \
              kiln_last_error());                                       \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

/* `status` is `want` and the last error's message contains `needle`. */
static void expect_fails(kiln_status status, kiln_status want, const char* needle, int line) {
  if (status != want || kiln_last_error_class() != want ||
      strstr(kiln_last_error(), needle) == NULL) {
    fprintf(stderr, "consumer.c:%d: wanted %s naming '%s', got %s: %s\n", line,
            kiln_status_name(want), needle, kiln_status_name(status), kiln_last_error());
    ++failures;
  }
}
#define EXPECT_FAILS(call, want, needle) expect_fails((call), (want), (needle), __LINE__)

/* A graph whose template does not compile. */
static const char* const kBrokenTemplate =
    "{\"templates\": [{\"name\": \"broken\", \"source\": \"template <class T> __global__ void "
    "broken(const T* x, T* y) { y[0] = x[0] +; }\", \"params\": [{\"name\": \"x\", \"kind\": "
    "\"tensor\"}, {\"name\": \"y\", \"kind\": \"tensor\"}], \"instance\": \"broken<{x}>\", "
    "\"grid\": [\"1\"], \"block\": [\"1\"], \"output\": {\"param\": \"y\", \"like\": \"x\"}}],"
    " \"inputs\": [{\"name\": \"x\", \"shape\": [4], \"dtype\": \"f32\"}], \"nodes\": "
    "[{\"name\": \"y\", \"op\": \"broken\", \"args\": [\"x\"]}], \"outputs\": [\"y\"]}";

int main(int argc, char** argv) {
  const int64_t x_shape[2] = {32, 256}, w_shape[1] = {256}, v_shape[1] = {3};
  int32_t x = -1, w = -1, v = -1, h = -1, y = -1;
  kiln_graph *g = NULL, *bad = NULL;
  kiln_engine* e = NULL;
  kiln_plan* p = NULL;
  kiln_cache_stats stats;
  kiln_arg args[2];
  size_t kernels = 0, len = 0;
  char json[4096];
  if (argc != 2) return 2;

  EXPECT(kiln_version() == KILN_ABI_VERSION);
  EXPECT(kiln_graph_create(&g) == KILN_OK);
  EXPECT(kiln_graph_input(g, "x", x_shape, 2, KILN_F16, &x) == KILN_OK);
  EXPECT(kiln_graph_input(g, "w", w_shape, 1, KILN_F16, &w) == KILN_OK);
  EXPECT(kiln_graph_input(g, "v", v_shape, 1, KILN_F16, &v) == KILN_OK);
  args[0] = kiln_node(x);
  args[1] = kiln_scalar(0.5);
  EXPECT(kiln_graph_add(g, "mul", args, 2, NULL, NULL, &h) == KILN_OK);
  args[0] = kiln_node(h);
  args[1] = kiln_node(w);
  EXPECT(kiln_graph_add(g, "rms_norm", args, 2, "{\"eps\": 1e-6}", "n", &y) == KILN_OK);
  EXPECT(kiln_graph_output(g, y, "y") == KILN_OK);
  EXPECT(kiln_graph_to_json(g, json, sizeof json, &len) == KILN_OK);
  EXPECT(len == strlen(json) && strstr(json, "rms_norm") != NULL);

  EXPECT(kiln_engine_create_offline("sm_80", argv[1], &e) == KILN_OK);
  EXPECT(kiln_plan_create(g, 1, &p) == KILN_OK);
  EXPECT(kiln_plan_compile(p, e, &kernels) == KILN_OK);
  {
    const char* names[3] = {"x", "w", "v"};
    kiln_tensor in[3] = {{0, 0, KILN_F16, 2, NULL, NULL}, {0, 0, KILN_F16, 1, NULL, NULL},
                         {0, 0, KILN_F16, 1, NULL, NULL}};
    int32_t dtype = -1, rank = -1;
    int64_t shape[2] = {0, 0};
    in[0].shape = x_shape;
    in[1].shape = w_shape;
    in[2].shape = v_shape;
    EXPECT(kiln_plan_output(p, names, in, 3, "y", &dtype, &rank, shape, 2) == KILN_OK);
    EXPECT(dtype == KILN_F16 && rank == 2 && shape[0] == 32 && shape[1] == 256);
  }
  EXPECT(kernels == 1); /* mul is the norm's prologue */
  EXPECT(kiln_engine_cache_stats(e, &stats) == KILN_OK);
  EXPECT(stats.compiles == 1);
  EXPECT(kiln_precompile(g, "sm_90a", argv[1], &stats) == KILN_OK);
  EXPECT(stats.compiles == 1);

  /* Error paths: each a status and a message, never a crash. */
  EXPECT_FAILS(kiln_plan_compile(NULL, e, NULL), KILN_ERROR_ARGUMENT, "plan is NULL");
  EXPECT_FAILS(kiln_graph_input(g, "z", NULL, 2, KILN_F32, &x), KILN_ERROR_ARGUMENT,
               "extents are NULL");
  EXPECT_FAILS(kiln_graph_input(g, "z", x_shape, -2, KILN_F32, &x), KILN_ERROR_SHAPE,
               "rank -2 is negative");
  EXPECT_FAILS(kiln_graph_input(g, "z", x_shape, 2, 99, &x), KILN_ERROR_DTYPE, "dtype code 99");
  EXPECT_FAILS(kiln_graph_from_json("{", &bad), KILN_ERROR_GRAPH, "kiln_graph_from_json");
  EXPECT(bad == NULL);
  EXPECT(kiln_graph_from_json(kBrokenTemplate, &bad) == KILN_OK);
  EXPECT_FAILS(kiln_precompile(bad, "sm_80", "", NULL), KILN_ERROR_COMPILE, "broken");
  EXPECT(kiln_graph_destroy(bad) == KILN_OK);
  args[0] = kiln_node(h);
  args[1] = kiln_node(v);
  EXPECT_FAILS(kiln_graph_add(g, "no_such_op", args, 1, NULL, NULL, &h), KILN_ERROR_GRAPH,
               "no_such_op");
  EXPECT_FAILS(kiln_graph_add(g, "add", args, 2, NULL, NULL, &h), KILN_ERROR_SHAPE, "[3]");
  EXPECT_FAILS(kiln_precompile(g, "sm_80", argv[0], NULL), KILN_ERROR_CACHE, argv[0]);
  EXPECT_FAILS(kiln_plan_compile(p, NULL, NULL), KILN_ERROR_ARGUMENT, "engine is NULL");
  EXPECT_FAILS(kiln_engine_synchronize(e), KILN_ERROR_CUDA, "synchronize");
  EXPECT_FAILS(kiln_graph_to_json(g, json, 4, &len), KILN_ERROR_ARGUMENT, "cap >=");

  EXPECT(kiln_plan_destroy(p) == KILN_OK);
  EXPECT(kiln_engine_destroy(e) == KILN_OK);
  EXPECT(kiln_graph_destroy(g) == KILN_OK);
  if (failures) return 1;
  printf("consumer: ok\n");
  return 0;
}
