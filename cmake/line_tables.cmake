# Included before project(): the default build type, RelWithDebInfo, keeps
# line tables only (-g1) rather than full debug information. Backtraces and
# the sanitizers' reports still give the function, file and line of every
# frame, inlined ones too; what goes is the description of types and local
# variables, which cost a quarter of the time of every compile.
# Flags given on the command line (-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=...) are kept.
foreach(lang C CXX)
  if(NOT DEFINED CMAKE_${lang}_FLAGS_RELWITHDEBINFO)
    set(CMAKE_${lang}_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG" CACHE STRING
        "Flags of the ${lang} compiler for RelWithDebInfo builds (line tables only)")
  endif()
endforeach()
