/* bk_test_stb_write.h - stb_image_write (Debian's libstb-dev) for a test that writes images of its
 * own (textures, references): a static copy per test program, its own warnings not ours. */
#ifndef BK_TEST_STB_WRITE_H
#define BK_TEST_STB_WRITE_H
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#endif /* BK_TEST_STB_WRITE_H */
