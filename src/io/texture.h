/* texture.h - the images a scene's materials name: files -> bk_scene.images (texture.c).
 *
 * Pipeline: io stage, after a reader has filled the materials (obj.c calls bk_scene_load_textures
 * once the OBJ and its MTL files are read). Decoding is stb_image's (Debian's libstb-dev), the only
 * copy of it in the program (stb_image_impl.c); what stb_image would do wrong with a hostile file
 * is checked first, on the file's bytes (bk_stb_png_check, bk_stb_hdr_check, bk_stb_jpeg_check;
 * src/out/image.c reads lightmaps through the first two). Rules per format: docs/materials.md.
 *
 * Usage:
 *   bk_image im;
 *   char     why[256];
 *   if (bk_texture_decode("wood.png", BK_TEX_MAX_BYTES, &im, why, sizeof why) < 0) puts(why);
 */
#ifndef BK_TEXTURE_H
#define BK_TEXTURE_H

#include <stddef.h>
#include <stdint.h>
#include "scene.h"

#define BK_TEX_MAX_FILE  (1u << 30)   /* one image file, in bytes */
#define BK_TEX_MAX_BYTES (2ull << 30) /* decoded texels of one scene: 4 bytes each (8-bit), 16 (HDR) */

/* Decodes one image file into im (path copied into im->path): 8-bit PNG, JPEG, TGA, BMP, PSD and
 * GIF (first frame) become rgba8 (grey, grey + alpha, paletted and 16-bit PNG too), Radiance .hdr
 * becomes rgbaf; im->channels is the file's own count. Sizes are checked before anything large is
 * allocated: sides 1..BK_IMAGE_TEX_MAX_SIDE, texels a file of its size can hold, and at most budget
 * bytes of texels. Returns 0; 1 when it loaded with a note in why (HDR values clamped); -1 with the
 * reason in why (one line without the path: "no such file", "not an image (stb_image: ...)"), or
 * -2 when the image would take more than budget bytes; im is then zeroed. */
int bk_texture_decode(const char *path, uint64_t budget, bk_image *im, char *why, size_t why_size);

/* bk_texture_decode for an image in memory (a glTF bufferView or data: URI): the same checks and
 * results; name (e.g. "scene.glb:images[2]") is copied into im->path. buf stays the caller's. */
int bk_texture_decode_mem(const uint8_t *buf, size_t size, const char *name, uint64_t budget, bk_image *im, char *why,
                          size_t why_size);

/* What bk_scene_load_textures tells its caller about one map (map: 0 map_kd, 1 map_ke, 2 map_d). */
enum bk_texture_report {
    BK_TEXTURE_LOST = 0,  /* its file could not be read: no image, the factor alone is used */
    BK_TEXTURE_FATAL = 1, /* its file would take the scene's texels past BK_TEX_MAX_BYTES */
    BK_TEXTURE_NOTE = 2   /* it loaded, with a remark (HDR values clamped) */
};
/* why is one line without the path. A negative return is the load's status (the caller wrote its
 * error): required for BK_TEXTURE_FATAL, and stops the load for the others. */
typedef int (*bk_texture_report_fn)(void *ctx, uint32_t material, int map, int what, const char *why);

/* Resolves every map path of materials first_material.. (bk_scene_find_map), decodes each distinct
 * resolved file once into s->images and sets the maps' image index. A file that cannot be read is
 * reported once per map that names it and the load goes on. Returns 0, a fatal report's status, or
 * -1 out of memory (err). */
int bk_scene_load_textures(bk_scene *s, uint32_t first_material, bk_texture_report_fn report, void *ctx, char *err,
                           size_t err_size);

/* stb_image trusts a PNG chunk's length and allocates for it before reading, and an empty first
 * IDAT makes it offset a NULL pointer: 0 when every chunk fits in the file's size bytes, else -1
 * with the reason in why. */
int bk_stb_png_check(const uint8_t *buf, size_t size, char *why, size_t why_size);
/* stb_image's run-length HDR decoder loops for ever on a run of length 0 or one cut short by the
 * end of the file: 0 when the scanlines of a w x h image end inside the file, else -1 and why. */
int bk_stb_hdr_check(const uint8_t *buf, size_t size, int w, int h, char *why, size_t why_size);

/* stb_image 2.27 overruns a JPEG Huffman table whose counts add up to more than 256, and decodes a
 * scan with tables never defined: 0 when every DHT segment stb would read is within that and
 * every scan's tables are defined before it, else -1 and why. */
int bk_stb_jpeg_check(const uint8_t *buf, size_t size, char *why, size_t why_size);

#endif /* BK_TEXTURE_H */
