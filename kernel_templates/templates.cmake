# Included from the top level (a custom command must live in its target's directory).
# Kernel templates and the toolkit's fp16/bf16 headers travel inside libkiln as a header table.
set(templates arg.cuh attention.cuh attention_common.cuh attention_config.cuh attention_copies.cuh attention_decode.cuh attention_decode_merge.cuh attention_epilogue.cuh attention_prologue.cuh attention_rows.cuh attention_sm90.cuh attention_sm90_items.cuh attention_sm90_softmax.cuh cluster.cuh columns.cuh conv.cuh conv_config.cuh conv_depthwise.cuh conv_sm90.cuh dtype.cuh elementwise.cuh gather.cuh gemm.cuh gemm_config.cuh gemm_epilogue.cuh gemm_kernel.cuh gemm_skinny.cuh gemm_sm90.cuh gemm_sm90_epilogue.cuh gemm_sm90_exact.cuh gemm_sm90_held.cuh grid_dependency.cuh group_rows.cuh integer.cuh layout.cuh mma.cuh ops.cuh row_config.cuh row_parts.cuh row_reduce.cuh row_stats.cuh rows.cuh scan.cuh tma.cuh types.cuh vec.cuh wgmma.cuh)
set(names "")
set(files "")
foreach(t IN LISTS templates)
  list(APPEND names "kiln/${t}")
  list(APPEND files "${CMAKE_CURRENT_LIST_DIR}/kiln/${t}")
endforeach()
# NVRTC 13 has no built-in cuda_fp16.h/cuda_bf16.h; under NVRTC these four include nothing else.
foreach(h cuda_fp16.h cuda_fp16.hpp cuda_bf16.h cuda_bf16.hpp)
  find_file(KILN_${h}_PATH ${h} PATHS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH REQUIRED)
  list(APPEND names ${h})
  list(APPEND files ${KILN_${h}_PATH})
endforeach()
kiln_embed_headers(kiln NAMES ${names} FILES ${files})
