/* cmd_bake_mem.c - the memory a bake needs against what the machine has: a bake that cannot fit
 * is refused before it starts. */
#include "cmd_bake_internal.h"
#include "registry.h"
#include "util.h"


/* The memory the rest of the bake needs (bk_bake_estimate) against what the machine has: a bake
 * that cannot fit is refused before it starts, with the numbers and what to change. est[0] gets
 * the host peak to expect (what the process holds now plus the estimate), est[1] the device's. */
int bk_cmd_bake_check_memory(const bk_cmd_bake_cli *c, bk_backend *be, const bk_atlas *at, uint64_t est[MEM_COUNT])
{
    uint64_t total, avail, dfree, dtotal;
    bk_host_memory(&total, &avail);
    if (c->max_memory_gb > 0 && (avail == 0 || c->max_memory_gb * 1e9 < (double)avail))
        avail = (uint64_t)(c->max_memory_gb * 1e9);
    be->i->memory(be, &dfree, &dtotal);
    bk_bake_estimate((uint64_t)BK_ATLAS_PIXELS(at), at->covered, dtotal > 0, &est[0], &est[1]);
    if (c->directional) {
        uint64_t h, d;
        bk_bake_estimate_dir((uint64_t)BK_ATLAS_PIXELS(at), at->covered, dtotal > 0, &h, &d);
        est[0] += h;
        est[1] += d;
    }
    if (c->p.mask_count) {
        uint64_t h, d;
        bk_bake_estimate_mask((uint64_t)BK_ATLAS_PIXELS(at), at->covered, dtotal > 0, c->p.mask_count, &h, &d);
        est[0] += h;
        est[1] += d;
    }
    /* --bin-rays sorts the whole texels before the bake, also for a device: the rasterizer then
     * holds them whole (32 B each beside 5 B per pixel), as on the CPU */
    const uint64_t whole = 5 * (uint64_t)BK_ATLAS_PIXELS(at) + sizeof(bk_texel) * at->covered;
    if (c->bin_rays && dtotal > 0 && whole > est[0]) est[0] = whole;
    uint64_t base = bk_current_rss(); /* the scene and trees, already held (and already not available) */
    int      host_bad = avail > 0 && est[0] > avail, dev_bad = dtotal > 0 && est[1] > dfree;
    if (host_bad || dev_bad) {
        bk_cmd_bake_error("a %dx%d atlas (%llu texels) needs about %.1f GB of %s memory, %.1f GB "
                          "%s: bake a smaller atlas (--size, --texels-per-unit)%s\n",
                          at->width, at->height, (unsigned long long)at->covered,
                          bk_cmd_bake_gb(host_bad ? est[0] : est[1]), host_bad ? "host" : "GPU",
                          bk_cmd_bake_gb(host_bad ? avail : dfree),
                          host_bad ? (c->max_memory_gb > 0 ? "allowed by --max-memory" : "available") : "free",
                          dev_bad && !host_bad ? " or use --backend cpu" : "");
        return -1;
    }
    est[0] += base; /* reported as the whole process's expected peak */
    if (!c->quiet && est[0] - base > avail / 2)
        fprintf(stderr, "baker: this bake needs about %.1f GB of host memory (%.1f GB available)\n",
                bk_cmd_bake_gb(est[0] - base), bk_cmd_bake_gb(avail));
    if (!c->quiet && dtotal && est[1] > dfree / 2)
        fprintf(stderr, "baker: this bake needs about %.1f GB of GPU memory (%.1f GB free)\n", bk_cmd_bake_gb(est[1]),
                bk_cmd_bake_gb(dfree));
    return 0;
}

/* --max-memory before the atlas, where the texels are known already: a voxel scene's are its
 * visible faces times texels_per_voxel^2, and its atlas has at least that many pixels. The bake's
 * estimate for so many (a lower bound: on a device where the backend may use one) over the limit
 * is refused now, not after the atlas (whose packing holds memory of its own) has been made.
 * bk_cmd_bake_check_memory repeats the check on the atlas itself. */
int bk_cmd_bake_check_memory_early(const bk_cmd_bake_cli *c, uint64_t texels)
{
    if (!(c->max_memory_gb > 0)) return 0;
    uint64_t host, dev;
    bk_bake_estimate(texels, texels, bk_backend_starts_device(c->t.backend), &host, &dev);
    const double limit = c->max_memory_gb * 1e9;
    if ((double)host <= limit) return 0;
    bk_cmd_bake_error(
        "%s: its %llu voxel-face texels need at least %.2f GB of host memory to bake, %.2f GB allowed by --max-memory "
        "(refused before the atlas): bake fewer --texels-per-voxel\n",
        c->scene, (unsigned long long)texels, bk_cmd_bake_gb(host), c->max_memory_gb);
    return -1;
}
