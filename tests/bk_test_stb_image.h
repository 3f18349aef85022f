/* bk_test_stb_image.h - stb_image (Debian's libstb-dev) for a test that reads images itself: the
 * header only. The program's one copy (src/io/stb_image_impl.c, in bkcore) is what tests link: a
 * second STB_IMAGE_IMPLEMENTATION in a test would clash with it. */
#ifndef BK_TEST_STB_IMAGE_H
#define BK_TEST_STB_IMAGE_H
#include <stb/stb_image.h>
#endif
