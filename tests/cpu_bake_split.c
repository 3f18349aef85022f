/* cpu_bake_split.c - a bake split into shares (bk_bake_run_opts rank / ranks / granule, what the
 * ranks of an mpirun job each bake) gives every texel the bits of the whole bake, without MPI:
 * the demo scene's texels baked once whole, then rank by rank (3 ranks; granules of 16384, a
 * multiple of the fetch slice, and of 1000, which cuts slices), merged: the image, the coverage,
 * the texel colours and the summed counts (rays, texels inside geometry) must be identical, and
 * each share must leave the others' texels untouched. Also the share arithmetic itself: every
 * texel in exactly one share, bk_bake_share_count agreeing with bk_bake_share_has, and
 * bk_bake_granule giving every rank 8 granules down to its floor. Runs in every build (the
 * sanitized one has no MPI). */
#include "bk_test.h"
#include "bk_test_bake.h"
#include "accel.h"
#include "atlas.h"
#include "bake.h"
#include "raster.h"
#include "scene.h"

#include <math.h>

static void check_shares(void)
{
    const uint32_t ns[] = { 0, 1, 16383, 16384, 16385, 100000, 1000003 }, grans[] = { 1000, 16384, 65536 };
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; ++a)
        for (size_t b = 0; b < sizeof grans / sizeof grans[0]; ++b)
            for (uint32_t ranks = 1; ranks <= 5; ++ranks) {
                uint32_t n = ns[a], G = grans[b], total = 0;
                for (uint32_t r = 0; r < ranks; ++r) {
                    uint32_t c = bk_bake_share_count(n, r, ranks, G), h = 0;
                    for (uint32_t i = 0; i < n; ++i) h += (uint32_t)bk_bake_share_has(i, r, ranks, G);
                    BK_EXPECTF(c == h, "n %u, granule %u, rank %u of %u: count %u, has %u", n, G, r, ranks, c, h);
                    total += c;
                }
                BK_EXPECTF(total == n, "n %u, granule %u, %u ranks: shares add up to %u", n, G, ranks, total);
                for (uint32_t i = 0; i < n; i += 997) {
                    int owners = 0;
                    for (uint32_t r = 0; r < ranks; ++r) owners += bk_bake_share_has(i, r, ranks, G);
                    BK_EXPECTF(owners == 1, "texel %u in %d shares", i, owners);
                }
            }
    BK_EXPECT(bk_bake_granule(100000000, 1) == BK_BAKE_GRANULE);
    BK_EXPECT(bk_bake_granule(16u << 20, 8) == BK_BAKE_GRANULE); /* 64 granules, 8 each */
    BK_EXPECT(bk_bake_granule(16u << 20, 16) == BK_BAKE_GRANULE / 2);
    BK_EXPECT(bk_bake_granule(1000, 4) == 16384); /* the floor */
    for (uint32_t ranks = 2; ranks < 300; ranks += 37) {
        uint32_t n = 12345678, G = bk_bake_granule(n, ranks);
        BK_EXPECTF(G == 16384 || n / G >= 8 * ranks, "%u ranks: granule %u gives %u granules", ranks, G, n / G);
        BK_EXPECTF(G % 16384 == 0, "granule %u is not a multiple of the fetch slice", G);
    }
}

int main(void)
{
    check_shares();

    char     err[1024];
    bk_scene s;
    bk_accel a;
    bk_atlas at;
    bk_test_cornell_atlas(&s, &a, &at);
    bk_texel *tx = NULL;
    uint32_t  n = 0;
    uint8_t  *cov0 = NULL;
    BK_EXPECTF(bk_atlas_rasterize(&s, &at, &tx, &n, &cov0, err, sizeof err) == 0, "%s", err);
    if (bk_test_failures) BK_TEST_DONE();
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(&s, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    bk_backend   *be = bk_backend_cpu_init();
    bk_accel_view av = bk_accel_get_view(&a);
    BK_EXPECT(be->i->upload(be, &av, err, sizeof err) == 0);
    bk_bake_view v = bk_bake_data_view(&d, &a);

    const int        w = at.width, h = at.height;
    const size_t     npx = (size_t)w * (size_t)h;
    bk_bake_run_opts o;
    bk_test_bake_opts(&o);
    o.max_launch_ms = 5; /* many launches: blocks that grow and meet granule ends */

    /* the whole bake, as an image and as texel colours */
    float         *rgb1 = malloc(sizeof(float) * 3 * npx), *rgbk = malloc(sizeof(float) * 3 * npx);
    uint8_t       *cov1 = malloc(npx), *covk = malloc(npx);
    bk_f4         *col1 = malloc(sizeof(bk_f4) * n), *colk = malloc(sizeof(bk_f4) * n);
    bk_bake_result r1, rc1, rk;
    memcpy(cov1, cov0, npx);
    BK_EXPECTF(bk_bake_texels(be, &v, tx, n, w, h, &o, rgb1, cov1, &r1, err, sizeof err) == 0, "%s", err);
    bk_bake_run_opts oc = o;
    oc.texel_col = col1;
    uint8_t *covc = malloc(npx);
    memcpy(covc, cov0, npx);
    BK_EXPECTF(bk_bake_texels(be, &v, tx, n, w, h, &oc, NULL, covc, &rc1, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(memcmp(cov1, covc, npx) == 0);
    BK_EXPECTF(r1.invalid > 0, "no texel inside geometry: the test would not see their handling");

    const uint32_t grans[] = { 16384, 1000 }, ranks = 3;
    for (size_t gi = 0; gi < 2; ++gi) {
        const uint32_t G = grans[gi];
        BK_EXPECTF(n > 2 * ranks * G || G == 16384, "only %u texels: granules of %u do not reach every rank twice", n,
                   G);
        /* as the image: each rank into its own zeroed image, merged by share */
        uint64_t rays = 0;
        uint32_t invalid = 0;
        float   *merged = calloc(3 * npx, sizeof(float));
        uint8_t *mcov = malloc(npx);
        memcpy(mcov, cov0, npx);
        for (uint32_t r = 0; r < ranks; ++r) {
            bk_bake_run_opts orr = o;
            orr.rank = r;
            orr.ranks = ranks;
            orr.granule = G;
            memcpy(covk, cov0, npx);
            BK_EXPECTF(bk_bake_texels(be, &v, tx, n, w, h, &orr, rgbk, covk, &rk, err, sizeof err) == 0, "%s", err);
            rays += rk.totals.rays;
            invalid += rk.invalid;
            for (uint32_t i = 0; i < n; ++i) {
                size_t px = tx[i].pixel;
                if (!bk_bake_share_has(i, r, ranks, G)) {
                    BK_EXPECTF(covk[px] == cov0[px] && rgbk[3 * px] == 0.0f,
                               "granule %u, rank %u: texel %u of another share was touched", G, r, i);
                    continue;
                }
                memcpy(merged + 3 * px, rgbk + 3 * px, 3 * sizeof(float));
                mcov[px] = covk[px];
            }
        }
        BK_EXPECTF(memcmp(merged, rgb1, sizeof(float) * 3 * npx) == 0,
                   "granule %u: the merged image differs from the whole bake's", G);
        BK_EXPECTF(memcmp(mcov, cov1, npx) == 0, "granule %u: the merged coverage differs", G);
        BK_EXPECTF(rays == r1.totals.rays, "granule %u: %llu rays over the shares, %llu whole", G,
                   (unsigned long long)rays, (unsigned long long)r1.totals.rays);
        BK_EXPECTF(invalid == r1.invalid, "granule %u: %u texels inside geometry over the shares, %u whole", G, invalid,
                   r1.invalid);
        /* as texel colours: the others' entries keep what was there */
        const bk_f4 mark = { -7.0f, -7.0f, -7.0f, -7.0f };
        for (uint32_t i = 0; i < n; ++i) colk[i] = mark;
        bk_f4 *before = malloc(sizeof(bk_f4) * n);
        for (uint32_t r = 0; r < ranks; ++r) {
            bk_bake_run_opts orr = oc;
            orr.texel_col = colk;
            orr.rank = r;
            orr.ranks = ranks;
            orr.granule = G;
            memcpy(covk, cov0, npx);
            memcpy(before, colk, sizeof(bk_f4) * n);
            BK_EXPECTF(bk_bake_texels(be, &v, tx, n, w, h, &orr, NULL, covk, &rk, err, sizeof err) == 0, "%s", err);
            uint32_t touched = 0;
            for (uint32_t i = 0; i < n; ++i)
                touched += !bk_bake_share_has(i, r, ranks, G) && memcmp(&colk[i], &before[i], sizeof(bk_f4)) != 0;
            BK_EXPECTF(touched == 0, "granule %u, rank %u: %u texel colours of other shares changed", G, r, touched);
        }
        free(before);
        BK_EXPECTF(memcmp(colk, col1, sizeof(bk_f4) * n) == 0,
                   "granule %u: the texel colours differ from the whole bake's", G);
        printf("granule %u, %u ranks: %u texels (%u inside geometry), %llu rays: identical\n", G, ranks, n, invalid,
               (unsigned long long)rays);
        free(merged);
        free(mcov);
    }
    free(rgb1);
    free(rgbk);
    free(cov1);
    free(covk);
    free(covc);
    free(col1);
    free(colk);
    free(cov0);
    free(tx);
    bk_backend_free(be);
    bk_bake_data_free(&d);
    bk_atlas_free(&at);
    bk_accel_free(&a);
    bk_scene_free(&s);
    BK_TEST_DONE();
}
