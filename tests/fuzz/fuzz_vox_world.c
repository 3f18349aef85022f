/* fuzz_vox_world.c - libFuzzer target for tools/vox_world's own .vox reader (vox_parse and
 * vox_walk: what `vox_world --check FILE` and its prop loader run on outside files).
 *
 * The tool is one C file with a main(); it is compiled in here with main renamed. Each input is
 * parsed from memory; when it parses, its scene graph is walked. A failure returns a message and
 * the file structure is freed either way; a crash, leak or hang is the finding.
 */
#define main vox_world_main /* (vox_world.c defines _POSIX_C_SOURCE before its includes) */
#include "../../tools/vox_world.c"
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vox_file    f;
    size_t      at;
    const char *e = vox_parse(data, size, &f, &at);
    if (!e) {
        world_stats s;
        (void)vox_walk(&f, &s);
    }
    vox_file_free(&f);
    return 0;
}
