# Warning flags for libconv's own targets (not for users of the package).
add_library(conv_warnings INTERFACE)
target_compile_options(conv_warnings INTERFACE
  $<$<COMPILE_LANG_AND_ID:C,GNU,Clang>:-Wall -Wextra -Wshadow -Wno-unused-parameter>
  $<$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>:-Wall -Wextra -Wshadow -Wno-unused-parameter>)
