/* vox_coincident.c - writes a MagicaVoxel file of N copies of one 1-voxel model in one place.
 *
 * The worst case of the voxel surface's face-hiding test (issue 33): every instance shares its
 * hash cell with all the others. The file is 'VOX ' 200: MAIN { SIZE 1 1 1, XYZI (one voxel),
 * nTRN 0 -> nGRP 1 listing nSHP 2 N times }, about 4 bytes per instance. Standalone C11 (no
 * bkcore), built with the baker.
 *
 * Usage: vox_coincident -n N -o OUT.vox     (N 1..2^28)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put32(FILE *f, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    fwrite(b, 1, 4, f);
}

static void chunk(FILE *f, const char *id, uint32_t content, uint32_t children)
{
    fwrite(id, 1, 4, f);
    put32(f, content);
    put32(f, children);
}

int main(int argc, char **argv)
{
    long        n = 0;
    const char *out = NULL;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else {
            fprintf(stderr, "usage: vox_coincident -n N -o OUT.vox\n");
            return 1;
        }
    }
    if (n < 1 || n > (1l << 28) || !out) {
        fprintf(stderr, "usage: vox_coincident -n N -o OUT.vox (N 1..2^28)\n");
        return 1;
    }
    FILE *f = fopen(out, "wb");
    if (!f) {
        perror(out);
        return 1;
    }
    /* contents: SIZE 12, XYZI 8, nTRN 28 (id, empty dict, child, reserved, layer, 1 frame of an
     * empty dict), nGRP 12 + 4 N, nSHP 20 (id, dict, 1 model, its id and dict) */
    uint32_t N = (uint32_t)n, children = (12 + 12) + (12 + 8) + (12 + 28) + (12 + 12 + 4 * N) + (12 + 20);
    fwrite("VOX ", 1, 4, f);
    put32(f, 200);
    chunk(f, "MAIN", 0, children);
    chunk(f, "SIZE", 12, 0);
    put32(f, 1);
    put32(f, 1);
    put32(f, 1);
    chunk(f, "XYZI", 8, 0);
    put32(f, 1);
    fwrite("\0\0\0\1", 1, 4, f);
    chunk(f, "nTRN", 28, 0);
    put32(f, 0);
    put32(f, 0);
    put32(f, 1);
    put32(f, UINT32_MAX);
    put32(f, UINT32_MAX);
    put32(f, 1);
    put32(f, 0);
    chunk(f, "nGRP", 12 + 4 * N, 0);
    put32(f, 1);
    put32(f, 0);
    put32(f, N);
    for (uint32_t i = 0; i < N; ++i) put32(f, 2);
    chunk(f, "nSHP", 20, 0);
    put32(f, 2);
    put32(f, 0);
    put32(f, 1);
    put32(f, 0);
    put32(f, 0);
    if (fclose(f)) {
        perror(out);
        return 1;
    }
    return 0;
}
