# The exported symbols of libconv.so are exactly the functions conv.h declares.
#   cmake -DHEADER=include/conv.h -DLIBRARY=libconv.so.0.1.0 -DNM=nm -DREADELF=readelf
#         -DSONAME=libconv.so.0 -P check_symbols.cmake
# Declarations are read as `CONV_API <return type> conv_xxx(` (comments
# removed first); the library's side is `nm -D --defined-only`, with the
# version node (LIBCONV_0, an absolute symbol) and the @@LIBCONV_0 suffixes
# left out. Both directions are checked: a declared function the library
# lacks, and an exported symbol conv.h does not declare.
cmake_minimum_required(VERSION 3.16)
foreach(v HEADER LIBRARY NM)
  if(NOT ${v})
    message(FATAL_ERROR "check_symbols.cmake: ${v} not set")
  endif()
endforeach()

# -- the header
file(READ "${HEADER}" text)
string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " text "${text}")   # /* */ comments
string(REGEX REPLACE "//[^\n]*" " " text "${text}")                    # // comments
string(REGEX REPLACE "[ \t\r\n]+" " " text "${text}")
string(REGEX MATCHALL "CONV_API [^;(#]*[ *](conv_[A-Za-z0-9_]+) ?\\(" decls "${text}")
set(declared "")
foreach(d IN LISTS decls)
  string(REGEX MATCH "(conv_[A-Za-z0-9_]+) ?\\($" name "${d}")
  string(REGEX REPLACE " ?\\($" "" name "${name}")
  list(APPEND declared "${name}")
endforeach()
list(REMOVE_DUPLICATES declared)
list(SORT declared)
list(LENGTH declared n_declared)
if(n_declared LESS 10)
  message(FATAL_ERROR "only ${n_declared} CONV_API declarations found in ${HEADER}: "
                      "has the declaration style changed?")
endif()

# -- the library
execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}"
                OUTPUT_VARIABLE nm_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed")
endif()
string(REPLACE "\n" ";" lines "${nm_out}")
set(exported "")
set(versions "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ @]+)(@@?(.*))?$")
    set(kind "${CMAKE_MATCH_1}")
    set(sym "${CMAKE_MATCH_2}")
    if(CMAKE_MATCH_4)
      list(APPEND versions "${CMAKE_MATCH_4}")
    endif()
    if(kind STREQUAL "A")          # the version node itself
      list(APPEND versions "${sym}")
      continue()
    endif()
    list(APPEND exported "${sym}")
  endif()
endforeach()
list(REMOVE_DUPLICATES exported)
list(SORT exported)
list(REMOVE_DUPLICATES versions)

set(missing "${declared}")
list(REMOVE_ITEM missing ${exported})
set(extra "${exported}")
list(REMOVE_ITEM extra ${declared})
list(LENGTH exported n_exported)
message(STATUS "conv.h declares ${n_declared} functions; the library exports ${n_exported} "
               "symbols (version nodes: ${versions})")
set(ok TRUE)
if(missing)
  list(JOIN missing "\n  " m)
  message(SEND_ERROR "declared in conv.h but not exported by the library:\n  ${m}")
  set(ok FALSE)
endif()
if(extra)
  list(JOIN extra "\n  " m)
  message(SEND_ERROR "exported by the library but not declared in conv.h:\n  ${m}")
  set(ok FALSE)
endif()

# -- the SONAME
if(READELF AND SONAME)
  execute_process(COMMAND "${READELF}" -d "${LIBRARY}" OUTPUT_VARIABLE dyn)
  if(NOT dyn MATCHES "\\(SONAME\\)[^\n]*\\[${SONAME}\\]")
    message(SEND_ERROR "the library's SONAME is not ${SONAME}")
    set(ok FALSE)
  endif()
endif()

if(ok)
  message(STATUS "exported symbols == conv.h declarations (${n_declared})")
endif()
