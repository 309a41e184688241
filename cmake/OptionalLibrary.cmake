# kiln_optional_library(NAME HEADER LIBRARY PACKAGE WHAT): the cache option KILN_<NAME>, AUTO
# (the default: used where found), ON (the configure fails without it) or OFF (not looked for).
# Sets KILN_WITH_<NAME> (ON where used), KILN_<NAME>_INCLUDE_DIR and KILN_<NAME>_LIBRARY, and
# prints whether WHAT is built. PACKAGE is the Debian package to install (scripts/setup.sh does).
function(kiln_optional_library name header library package what)
  set(KILN_${name} AUTO CACHE STRING "${what}: AUTO, ON or OFF")
  set_property(CACHE KILN_${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${KILN_${name}}" mode)
  if(mode MATCHES "^(ON|YES|TRUE|Y|1)$")
    set(mode ON)
  elseif(mode MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(mode OFF)
  elseif(NOT mode STREQUAL "AUTO")
    message(FATAL_ERROR "KILN_${name} is '${KILN_${name}}': use AUTO, ON or OFF")
  endif()
  set(with OFF)
  if(NOT mode STREQUAL "OFF")
    find_path(KILN_${name}_INCLUDE_DIR ${header})
    find_library(KILN_${name}_LIBRARY ${library})
    if(KILN_${name}_INCLUDE_DIR AND KILN_${name}_LIBRARY)
      set(with ON)
    elseif(mode STREQUAL "ON")
      message(FATAL_ERROR "KILN_${name}=ON, but ${library} was not found (header ${header}: "
        "${KILN_${name}_INCLUDE_DIR}; library: ${KILN_${name}_LIBRARY}). Install ${package} "
        "(scripts/setup.sh does), or configure with -DKILN_${name}=OFF to build kiln without "
        "${what}.")
    endif()
  endif()
  if(with)
    message(STATUS "kiln: ${what}: built, with ${KILN_${name}_LIBRARY}")
  elseif(mode STREQUAL "OFF")
    message(STATUS "kiln: ${what}: not built (KILN_${name}=OFF)")
  else()
    message(STATUS "kiln: ${what}: not built (${library} not found: install ${package} for it)")
  endif()
  set(KILN_WITH_${name} ${with} PARENT_SCOPE)
endfunction()
