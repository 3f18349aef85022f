/* stb_image_impl.c - the program's one copy of stb_image (Sean Barrett, public domain; Debian's
 * libstb-dev): texture.c decodes materials' images with it, src/out/image.c lightmaps for `baker
 * diff`, and tests link this copy too (tests/bk_test_stb_image.h includes the header only).
 *
 * Pipeline: io stage, below out. Formats: PNG, JPEG, TGA, BMP, PSD, GIF, Radiance HDR; PIC and PNM
 * are left out (no texture pipeline writes them, and every decoder is attack surface). Compiled
 * with -fwrapv (CMakeLists.txt): its arithmetic overflows on hostile files.
 */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#endif
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_PIC
#define STBI_NO_PNM
#include <stb/stb_image.h>
/* libstb-dev 0.0~git20220908 declares this but never defines it */
void stbi_set_unpremultiply_on_load_thread(int flag) { (void)flag; }
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
