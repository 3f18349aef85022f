// tinyexr_impl.cc - the fuzz build's tinyexr: Debian's libtinyexr-dev header compiled with its
// implementation (TINYEXR_IMPLEMENTATION, the settings the Debian library is built with: zlib, no
// miniz, no threads), so that libFuzzer's coverage and ASan see inside the EXR decoder that
// fuzz_image drives (the shared libtinyexr.so is not instrumented). Nothing is vendored: the code
// is the installed header's. Only BK_FUZZ builds compile this file (CMakeLists.txt).
#define TINYEXR_IMPLEMENTATION
#include <tinyexr.h>
