/* bk_test_stb_image.h - stb_image (Debian's libstb-dev) for a test that reads images itself:
 * include it in one file per test program; its own warnings are not ours. */
#ifndef BK_TEST_STB_IMAGE_H
#define BK_TEST_STB_IMAGE_H
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif
