# Turns one file of the source tree into a C file holding its bytes, run at build time
# (CMakeLists.txt, tp_embed_text): files kept as what they are (the picture's
# src/picture/plan.js and plan.css) are built into the library without a tool beyond CMake.
# The output defines `const unsigned char NAME[]`, declared in HEADER: the file's bytes and
# one terminating zero (the file must hold no zero byte of its own).
#
#   cmake -DINPUT=plan.js -DOUTPUT=plan_js.c -DNAME=tp_html_script
#         -DHEADER=picture/plan_html_internal.h -P embed_text.cmake
foreach(var INPUT OUTPUT NAME HEADER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_text.cmake: -D${var}=... is missing")
  endif()
endforeach()
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(FIND "${bytes}" "0x00," zero)
if(NOT zero EQUAL -1)
  message(FATAL_ERROR "embed_text.cmake: ${INPUT} holds a zero byte")
endif()
# twelve bytes a line (CMake's regular expressions have no {n})
string(REPEAT "0x[0-9a-f][0-9a-f]," 12 twelve)
string(REGEX REPLACE "(${twelve})" "\\1\n    " bytes "${bytes}")
get_filename_component(base "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
     "/* Generated at build time from ${base} by cmake/embed_text.cmake: edit ${base}. */\n"
     "#include \"${HEADER}\"\n\n"
     "const unsigned char ${NAME}[] = {\n    ${bytes}0x00};\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
