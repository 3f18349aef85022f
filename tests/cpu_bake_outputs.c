/* cpu_bake_outputs.c - the bake's outputs (issue 36): several -o of one bake, several --mesh-out,
 * what is refused, the lists of files written ("wrote" and --stats "outputs"), the OBJ's objects,
 * and the hints after a bake (a PNG that clips, a page mostly empty).
 *
 * Runs the baker program on copies of the demo scene (scenes/cornell.obj) and on scenes written
 * here, in a fresh temporary folder; the CPU backend, tiny atlases.
 *   - `-o lm.hdr -o lm.png` (and .exr with tinyexr) writes each type from one bake, each the same
 *     bytes as a bake with that -o alone; with --pages auto each -o gets its pages NAME-K.ext;
 *   - `--mesh-out m.obj --mesh-out m.glb` writes both; two of one kind, two -o of one type or one
 *     file twice are refused before any work (exit 2), leaving no file;
 *   - the summary's "wrote" line and --stats "outputs" list every file;
 *   - the --mesh-out OBJ keeps the scene's o / g names as o lines, its usemtl said again in each;
 *   - hints on stderr, not with --quiet: more than 1 % of the baked texels over 1 at the exposure in
 *     the PNG (--exposure 8) names --exposure auto; none for an .hdr or at --exposure 0.05; a page
 *     used under 10 % names a smaller --size, which then bakes on one page without the hint.
 */
#define _XOPEN_SOURCE 700 /* S_IFMT */
#include "bk_test.h"
#include "bk_test_files.h"

#include <unistd.h>

#define BAKE "--backend cpu --size 32 --spp 1 --bounces 0"

/* n unit squares in a row, 2 apart, each its own chart, the even ones white, the odd ones red
 * (materials of cornell.mtl), in objects named by o and g lines */
static void write_squares(const char *name, int n)
{
    char   text[8192];
    size_t k = (size_t)snprintf(text, sizeof text, "mtllib cornell.mtl\n");
    for (int i = 0; i < n; ++i)
        k += (size_t)snprintf(text + k, sizeof text - k,
                              "%s square %d\nv %d 0 0\nv %d 0 0\nv %d 0 1\nv %d 0 1\nusemtl %s\nf %d %d %d %d\n",
                              i % 2 ? "g" : "o", i, 2 * i, 2 * i + 1, 2 * i + 1, 2 * i, i % 2 ? "red" : "white",
                              4 * i + 1, 4 * i + 4, 4 * i + 3, 4 * i + 2);
    write_text(name, text);
}

/* The first line of out.txt (the summary) that starts with "  wrote", or "". */
static const char *wrote_line(char *buf, size_t n)
{
    snap o = take("out.txt");
    buf[0] = 0;
    const char *w = o.data ? strstr(o.data, "\n  wrote ") : NULL;
    if (w) snprintf(buf, n, "%.*s", (int)strcspn(w + 1, "\n"), w + 1);
    free(o.data);
    return buf;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/bk_outputs_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[2048], line[4096];
    snprintf(cmd, sizeof cmd, "cp '%s/scenes/cornell.obj' '%s/scenes/cornell.mtl' '%s/'", BK_SOURCE_DIR, BK_SOURCE_DIR,
             dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot copy the demo scene\n");
        return 1;
    }

    /* 1. one bake, two types (three with tinyexr), two meshes; the same bytes as one -o each */
    BK_EXPECT(RUN("cornell.obj -o one.png " BAKE " --quiet") == 0 &&
              RUN("cornell.obj -o one.hdr " BAKE " --quiet") == 0);
    BK_EXPECTF(RUN("cornell.obj -o lm.hdr -o lm.png --mesh-out m.obj --mesh-out m.glb --stats s.json " BAKE) == 0, "%s",
               errbuf);
    snap one_png = take("one.png"), one_hdr = take("one.hdr");
    BK_EXPECT(one_png.size > 0 && same("lm.png", one_png) && one_hdr.size > 0 && same("lm.hdr", one_hdr));
    BK_EXPECT(exists("m.obj") && exists("m.mtl") && exists("m.glb"));
    wrote_line(line, sizeof line);
    BK_EXPECTF(!strcmp(line, "  wrote lm.png, lm.hdr, m.obj, m.glb, s.json, m.mtl"), "'%s'", line);
    snap js = take("s.json"), mtl = take("m.mtl");
    BK_EXPECTF(js.data &&
                   strstr(js.data, "\"outputs\": [\"lm.png\", \"lm.hdr\", \"m.obj\", \"m.glb\", \"s.json\", "
                                   "\"m.mtl\"]") &&
                   strstr(js.data, "\"output\": \"lm.png\""),
               "%.400s", js.data ? js.data : "");
    BK_EXPECTF(mtl.data && strstr(mtl.data, "\nmap_Ka lm.png\n") && strstr(mtl.data, "the same light as lm.hdr"), "%s",
               mtl.data ? mtl.data : "");
    free(js.data);
    free(mtl.data);
#if BK_HAVE_EXR
    BK_EXPECTF(RUN("cornell.obj -o e.exr -o e.hdr -o e.png " BAKE " --quiet") == 0 && exists("e.exr") &&
                   same("e.png", one_png) && same("e.hdr", one_hdr),
               "%s", errbuf);
#endif
    free(one_png.data);
    free(one_hdr.data);

    /* 2. refused before any work, nothing written */
    const char *base = " cornell.obj cornell.mtl one.png one.hdr lm.png lm.hdr m.obj m.mtl m.glb s.json out.txt"
                       " e.exr e.hdr e.png ";
    BK_EXPECTF(RUN("cornell.obj -o x.png -o y.png " BAKE) == 2 && strstr(errbuf, "two lightmaps of one type") &&
                   strstr(errbuf, "x.png") && strstr(errbuf, "y.png"),
               "%s", errbuf);
    BK_EXPECTF(RUN("cornell.obj -o x.png -o x.png " BAKE) == 2 && strstr(errbuf, "the same file twice"), "%s", errbuf);
    BK_EXPECTF(RUN("cornell.obj -o x.png --mesh-out a.obj --mesh-out b.obj " BAKE) == 2 &&
                   strstr(errbuf, "one mesh of each kind"),
               "%s", errbuf);
    BK_EXPECTF(RUN("cornell.obj -o x.png --mesh-out a.glb --mesh-out b.gltf " BAKE) == 2 &&
                   strstr(errbuf, "one mesh of each kind"),
               "%s", errbuf);
    BK_EXPECT(RUN("cornell.obj -o x.png -o x.hdr -o x.exr -o z.png " BAKE) == 2);
    BK_EXPECT(only(base));

    /* 3. --pages auto: each -o its pages */
    write_squares("sq.obj", 6);
    BK_EXPECTF(
        RUN("sq.obj -o p.png -o p.hdr --pages auto --texels-per-unit 20 --mesh-out p.obj --stats p.json " BAKE) == 0,
        "%s", errbuf);
    snap        pj = take("p.json");
    const char *pc = pj.data ? strstr(pj.data, "\"pages\": { \"count\": ") : NULL;
    int         pages = pc ? atoi(pc + strlen("\"pages\": { \"count\": ")) : 0;
    BK_EXPECTF(pages >= 3, "%d pages", pages);
    for (int k = 0; k < pages; ++k) {
        char a[64], b[64];
        snprintf(a, sizeof a, "p-%d.png", k);
        snprintf(b, sizeof b, "p-%d.hdr", k);
        BK_EXPECTF(exists(a) && exists(b), "page %d", k);
    }
    BK_EXPECT(!exists("p.png") && !exists("p.hdr"));
    char want[256];
    snprintf(want, sizeof want,
             "  wrote p-0.png .. p-%d.png (%d pages), p-0.hdr .. p-%d.hdr (%d pages), p.obj, p.json, p.mtl", pages - 1,
             pages, pages - 1, pages);
    wrote_line(line, sizeof line);
    BK_EXPECTF(!strcmp(line, want), "'%s'", line);
    free(pj.data);

    /* 4. the OBJ's objects: each o / g name an o line, its material said again */
    snap po = take("p.obj"), pm = take("p.mtl");
    BK_EXPECTF(po.data && strstr(po.data, "\no square 0\ng page_0\nusemtl white\nf ") &&
                   strstr(po.data, "\no square 1\ng page_1\nusemtl red\nf ") && strstr(po.data, "\no square 5\n"),
               "%s", po.data ? po.data : "");
    /* a material on several pages names none of them, and says so */
    BK_EXPECTF(pm.data && strstr(pm.data, "newmtl white\n# its faces lie on several lightmap pages") &&
                   strstr(pm.data, "#   page 1: p-1.png\n") && !strstr(pm.data, "\nmap_Ka"),
               "%s", pm.data ? pm.data : "");
    free(po.data);
    free(pm.data);

    /* 5. hints: a PNG that clips */
    BK_EXPECTF(RUN("cornell.obj -o h.png --exposure 8 " BAKE) == 0 && strstr(errbuf, "hint: ") &&
                   strstr(errbuf, "clip in the 8-bit PNG") && strstr(errbuf, "--exposure auto"),
               "%s", errbuf);
    BK_EXPECTF(RUN("cornell.obj -o h.png --exposure 8 --quiet " BAKE) == 0 && !strstr(errbuf, "hint"), "%s", errbuf);
    BK_EXPECTF(RUN("cornell.obj -o h.hdr --exposure 8 " BAKE) == 0 && !strstr(errbuf, "clip"), "%s", errbuf);
    BK_EXPECTF(RUN("cornell.obj -o h.png --exposure 0.05 " BAKE) == 0 && !strstr(errbuf, "clip"), "%s", errbuf);
    /* ... a page mostly empty: the size named bakes it on one page, without the hint */
    write_squares("sq2.obj", 2);
    BK_EXPECTF(RUN("sq2.obj -o u.png --pages auto --texels-per-unit 4 --backend cpu --size 512 --spp 1 --bounces 0") ==
                       0 &&
                   strstr(errbuf, "hint: the atlas uses ") && strstr(errbuf, " --size "),
               "%s", errbuf);
    const char *sz = strstr(errbuf, " --size ");
    int         size = sz ? atoi(sz + 8) : 0;
    BK_EXPECTF(size >= 16 && size < 512, "--size %d", size);
    BK_EXPECTF(RUN("sq2.obj -o u.png --pages auto --texels-per-unit 4 --backend cpu --size %d --spp 1 --bounces 0 "
                   "--stats u.json",
                   size) == 0 &&
                   !strstr(errbuf, "hint: the atlas"),
               "%s", errbuf);
    snap uj = take("u.json");
    BK_EXPECTF(uj.data && strstr(uj.data, "\"pages\": { \"count\": 1,"), "%.300s", uj.data ? uj.data : "");
    free(uj.data);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
    BK_TEST_DONE();
}
