# kiln_embed_headers(<target> NAMES <name>... FILES <file>...)
# Adds to <target> a generated source holding every file as a (name, bytes) entry of
# kiln::detail::kEmbeddedHeaders, the table NVRTC resolves #include against.
add_executable(kiln_embed ${CMAKE_CURRENT_LIST_DIR}/embed.cpp)
set_target_properties(kiln_embed PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/host-tools)

function(kiln_embed_headers target)
  cmake_parse_arguments(ARG "" "" "NAMES;FILES" ${ARGN})
  set(out ${PROJECT_BINARY_DIR}/generated/embedded_headers.cpp)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/generated)
  set(pairs "")
  foreach(name file IN ZIP_LISTS ARG_NAMES ARG_FILES)
    list(APPEND pairs "${name}=${file}")
  endforeach()
  add_custom_command(OUTPUT ${out}
    COMMAND kiln_embed ${out} ${pairs}
    DEPENDS kiln_embed ${ARG_FILES}
    COMMENT "Embedding kernel templates and NVRTC headers")
  target_sources(${target} PRIVATE ${out})
endfunction()
