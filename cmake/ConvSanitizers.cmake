# CONV_SANITIZE="address;undefined" or "thread": instrument every target.
if(CONV_SANITIZE)
  string(REPLACE ";" "," _conv_san "${CONV_SANITIZE}")
  add_compile_options(-fsanitize=${_conv_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_conv_san})
endif()
