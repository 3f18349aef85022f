/* unit_files.c - a user's files are sacred (issue 7): the baker program, run as a careless or
 * hostile user would, never overwrites or deletes an input or an earlier output unless the run
 * succeeds and the file is one of its named outputs; refuses non-regular outputs; names what is
 * wrong in one line; estimates memory before a big bake; prints progress to a log.
 *
 * Each check here failed on the code before issue 7 (the scene was deleted or overwritten, a
 * device node replaced, a failing --stats removed an earlier lightmap, ...). Runs on a copy of
 * the demo scene in a fresh temporary folder; the CPU backend, tiny atlases.
 */
#define _XOPEN_SOURCE 700 /* S_IFMT, mknod */
#include "bk_test.h"
#include "bk_test_files.h"

/* After a group of checks: put the scene back if a failed check destroyed it, so the next group
 * tests its own defect (this matters only when the code is broken). */
static void restore(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cmp -s '%s/scenes/cornell.obj' '%s/cornell.obj' && cmp -s '%s/scenes/cornell.mtl' '%s/cornell.mtl' || "
             "cp '%s/scenes/cornell.obj' '%s/scenes/cornell.mtl' '%s/'",
             BK_SOURCE_DIR, dir, BK_SOURCE_DIR, dir, BK_SOURCE_DIR, BK_SOURCE_DIR, dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not restore the scene\n");
}

#define BAKE "--backend cpu --size 32 --spp 1 --bounces 0 --quiet"

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/bk_files_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s/scenes/cornell.obj' '%s/scenes/cornell.mtl' '%s/'", BK_SOURCE_DIR, BK_SOURCE_DIR,
             dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot copy the demo scene\n");
        return 1;
    }
    snap scene = take("cornell.obj"), mtl = take("cornell.mtl");
    BK_EXPECT(RUN("rays cornell.obj -o r.rays --diffuse 500") == 0);
    snap        rays = take("r.rays");
    const char *base = " cornell.obj cornell.mtl r.rays ";

    /* 1. --mesh-out naming the scene: refused before any work, with or without a failing --stats
     *    (before: the failing --stats deleted the scene; without it the scene was overwritten) */
    BK_EXPECT(RUN("cornell.obj -o map.png --mesh-out cornell.obj --stats missing-dir/s.json " BAKE) != 0);
    BK_EXPECT(same("cornell.obj", scene));
    BK_EXPECTF(RUN("cornell.obj -o map.png --mesh-out cornell.obj " BAKE) == 2 && strstr(errbuf, "--mesh-out") &&
                   strstr(errbuf, "scene"),
               "%s", errbuf);
    BK_EXPECT(same("cornell.obj", scene) && !exists("map.png") && only(base));
    restore();
    /* 2. --hits naming the scene or the rays */
    BK_EXPECTF(RUN("trace cornell.obj --rays r.rays --hits cornell.obj --backend cpu") == 2 && strstr(errbuf, "--hits"),
               "%s", errbuf);
    BK_EXPECTF(RUN("trace cornell.obj --rays r.rays --hits ./r.rays --backend cpu") == 2 && strstr(errbuf, "--rays"),
               "%s", errbuf);
    BK_EXPECT(same("cornell.obj", scene) && same("r.rays", rays) && only(base));
    restore();
    /* 3. --stats naming the lightmap, the scene, or one of its MTL files; rays -o naming the scene */
    BK_EXPECTF(RUN("cornell.obj -o map.png --stats map.png " BAKE) == 2 && strstr(errbuf, "same file"), "%s", errbuf);
    BK_EXPECT(RUN("cornell.obj -o map.png --stats cornell.obj " BAKE) == 2);
    BK_EXPECTF(RUN("cornell.obj -o map.png --stats cornell.mtl " BAKE) == 2 && strstr(errbuf, "MTL"), "%s", errbuf);
    BK_EXPECT(RUN("rays cornell.obj -o cornell.obj --diffuse 10") == 2);
    BK_EXPECT(same("cornell.obj", scene) && same("cornell.mtl", mtl) && only(base));
    restore();
    /* the same file under another name (a symbolic link, a hard link) is the same file */
    snprintf(cmd, sizeof cmd, "cd '%s' && ln -s cornell.obj soft.obj && ln cornell.obj hard.obj", dir);
    BK_EXPECT(system(cmd) == 0);
    BK_EXPECT(RUN("cornell.obj -o map.png --mesh-out soft.obj " BAKE) == 2);
    BK_EXPECT(RUN("cornell.obj -o map.png --mesh-out hard.obj " BAKE) == 2);
    BK_EXPECT(same("cornell.obj", scene));
    snprintf(cmd, sizeof cmd, "cd '%s' && rm soft.obj hard.obj", dir);
    BK_EXPECT(system(cmd) == 0);

    restore();
    /* 4. a run that fails leaves the earlier lightmap, mesh and statistics as they were */
    BK_EXPECT(RUN("cornell.obj -o map.png --mesh-out mesh.obj --stats s.json " BAKE) == 0);
    snap map = take("map.png"), mesh = take("mesh.obj"), json = take("s.json");
    BK_EXPECT(map.size > 100 && mesh.size > 100 && json.size > 100);
    BK_EXPECTF(RUN("cornell.obj -o map.png --stats missing-dir/s.json " BAKE) == 1 && strstr(errbuf, "missing-dir"),
               "%s", errbuf);
    BK_EXPECT(same("map.png", map));
    /* ... also when it fails at the very end: a file-size limit stops the mesh, written after the
     * map (writes past the limit fail with EFBIG once SIGXFSZ is ignored) */
    BK_EXPECTF(run_in("trap '' XFSZ; ulimit -f 2;",
                      "cornell.obj -o map.png --mesh-out mesh.obj --stats s.json "
                      "--seed 7 --backend cpu --size 8 --spp 1 --bounces 0 --quiet") == 1 &&
                   strstr(errbuf, "mesh.obj"),
               "late failure: %s", errbuf);
    BK_EXPECT(same("map.png", map) && same("mesh.obj", mesh) && same("s.json", json));
    BK_EXPECT(only(" cornell.obj cornell.mtl r.rays map.png mesh.obj mesh.mtl s.json "));
    /* a successful run replaces them all, and a symbolic link output keeps its link */
    snprintf(cmd, sizeof cmd, "cd '%s' && ln -s map.png link.png", dir);
    BK_EXPECT(system(cmd) == 0);
    BK_EXPECT(RUN("cornell.obj -o link.png --seed 9 " BAKE) == 0);
    BK_EXPECT(!same("map.png", map) && exists("link.png") && S_ISLNK(mode_of("link.png")));

    restore();
    /* 5. outputs that are not regular files are refused and stay what they were: a FIFO, and a
     *    device node when running as root (a copy of /dev/null) */
    snprintf(cmd, sizeof cmd, "cd '%s' && mkfifo fifo.png fifo.json fifo.hits fifo.rays", dir);
    BK_EXPECT(system(cmd) == 0);
    BK_EXPECTF(RUN("cornell.obj -o fifo.png " BAKE) == 1 && strstr(errbuf, "FIFO"), "%s", errbuf);
    BK_EXPECT(RUN("cornell.obj -o m2.png --stats fifo.json " BAKE) == 1);
    BK_EXPECT(RUN("trace cornell.obj --rays r.rays --hits fifo.hits --backend cpu") == 1);
    BK_EXPECT(RUN("rays cornell.obj -o fifo.rays --diffuse 10") == 1);
    BK_EXPECT(S_ISFIFO(mode_of("fifo.png")) && S_ISFIFO(mode_of("fifo.hits")) && S_ISFIFO(mode_of("fifo.rays")) &&
              S_ISFIFO(mode_of("fifo.json")) && !exists("m2.png"));
    if (geteuid() == 0) {
        snprintf(cmd, sizeof cmd, "cd '%s' && mknod null.png c 1 3", dir);
        if (system(cmd) == 0) {
            BK_EXPECTF(RUN("cornell.obj -o null.png " BAKE) == 1 && strstr(errbuf, "device"), "%s", errbuf);
            BK_EXPECT(S_ISCHR(mode_of("null.png")));
        }
    }
    /* a directory as an output; --stats - writes the JSON to standard output */
    snprintf(cmd, sizeof cmd, "mkdir '%s/sub.png'", dir);
    BK_EXPECT(system(cmd) == 0);
    BK_EXPECTF(RUN("cornell.obj -o sub.png " BAKE) == 1 && strstr(errbuf, "directory"), "%s", errbuf);
    BK_EXPECT(RUN("cornell.obj -o m3.png --stats - " BAKE) == 0);
    snap out = take("out.txt");
    BK_EXPECTF(out.size > 100 && out.data[0] == '{' && strstr(out.data, "\"memory\""), "stdout: %.*s", (int)out.size,
               out.data);
    /* --stats /proc/version: the message says a file cannot be made there, before any work */
    if (access("/proc/version", R_OK) == 0)
        BK_EXPECTF(RUN("cornell.obj -o m4.png --stats /proc/version " BAKE) == 1 &&
                       strstr(errbuf, "cannot create a file in /proc") && !exists("m4.png"),
                   "%s", errbuf);

    restore();
    /* 9. Ke 1e38 and Ke inf: a warning and a lit map, or an error naming the line; never a black map */
    write_text("hot.mtl", "newmtl lamp\nKd 0.5 0.5 0.5\nKe 1e38 1e38 1e38\n");
    write_text("hot.obj", "mtllib hot.mtl\nv -1 0 -1\nv 1 0 -1\nv 1 0 1\nv -1 0 1\nv -0.2 1 -0.2\nv 0.2 1 -0.2\n"
                          "v 0.2 1 0.2\nv -0.2 1 0.2\nf 1 4 3 2\nusemtl lamp\nf 5 6 7 8\n");
    BK_EXPECTF(RUN("hot.obj -o hot.png --stats hot.json " BAKE) == 0 && strstr(errbuf, "clamped"), "%s", errbuf);
    snap hj = take("hot.json");
    BK_EXPECTF(hj.data && strstr(hj.data, "\"mean_luminance\": ") &&
                   atof(strstr(hj.data, "\"mean_luminance\": ") + 18) > 0,
               "Ke 1e38 baked black: %s", hj.data ? hj.data : "(no stats)");
    write_text("hot.mtl", "newmtl lamp\nKd 0.5 0.5 0.5\nKe inf 1 1\n");
    BK_EXPECTF(RUN("hot.obj -o hot2.png " BAKE) == 1 && strstr(errbuf, "hot.mtl:3") && !exists("hot2.png"), "%s",
               errbuf);

    restore();
    /* 10. a bake that cannot fit in memory is refused before its texels are made, with the estimate;
     *     progress goes to a log as lines when stderr is not a terminal */
    BK_EXPECTF(RUN("cornell.obj -o big.png --backend cpu --size 4096 --max-memory 0.2") == 1 &&
                   strstr(errbuf, "needs about") && strstr(errbuf, "GB") && !exists("big.png"),
               "%s", errbuf);
    BK_EXPECTF(RUN("cornell.obj -o prog.png --backend cpu --size 32 --spp 4") == 0 && strstr(errbuf, "bake 100%"), "%s",
               errbuf);

    restore();
    /* messages: a RAYS header cut inside its count; commands that do not bake do not say "bake";
     * help for an unknown command is an error; --help names the repo's own format page */
    snprintf(cmd, sizeof cmd, "head -c 12 '%s/r.rays' > '%s/cut.rays'", dir, dir);
    BK_EXPECT(system(cmd) == 0);
    BK_EXPECTF(RUN("trace cornell.obj --rays cut.rays --hits cut.hits --backend cpu") == 1 &&
                   strstr(errbuf, "truncated") && !exists("cut.hits"),
               "%s", errbuf);
    write_text("lines.obj", "v 0 0 0\nv 1 0 0\nl 1 2\n");
    BK_EXPECTF(RUN("build lines.obj") == 1 && strstr(errbuf, "no faces") && !strstr(errbuf, "to bake"), "%s", errbuf);
    BK_EXPECTF(RUN("help frob") == 2 && strstr(errbuf, "frob"), "%s", errbuf);
    BK_EXPECT(RUN("--help") == 0);
    snap help = take("out.txt");
    BK_EXPECT(help.data && strstr(help.data, "docs/formats.md") && !strstr(help.data, "../shared"));
    snprintf(cmd, sizeof cmd, "%s/docs/formats.md", BK_SOURCE_DIR);
    BK_EXPECT(access(cmd, R_OK) == 0);
    /* --mesh-out copies the MTL files the scene names into its own MTL, not an mtllib found inside
     * a long comment */
    {
        size_t n = 6000;
        char  *obj = malloc(n + 400);
        int    k = snprintf(obj, n, "mtllib cornell.mtl\n# ");
        memset(obj + k, 'x', 4095 - 2);
        k += 4093;
        k += snprintf(obj + k, n + 400 - (size_t)k, "mtllib evil.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
        write_text("long.obj", obj);
        free(obj);
        BK_EXPECT(RUN("long.obj -o long.png --mesh-out long_lm.obj " BAKE) == 0);
        snap lm = take("long_lm.obj"), lmm = take("long_lm.mtl");
        BK_EXPECTF(lm.data && strstr(lm.data, "\nmtllib long_lm.mtl\n") && !strstr(lm.data, "evil"), "%.300s",
                   lm.data ? lm.data : "");
        BK_EXPECTF(lmm.data && strstr(lmm.data, "scene's cornell.mtl") && strstr(lmm.data, "newmtl white") &&
                       !strstr(lmm.data, "evil"),
                   "%.300s", lmm.data ? lmm.data : "");
        free(lm.data);
        free(lmm.data);
    }

    BK_EXPECT(same("cornell.obj", scene) && same("cornell.mtl", mtl) && same("r.rays", rays));
    /* --mesh-out into another folder (issue 9, issue 36): the OBJ names its MTL by a relative path
     * only; the scene's MTL is copied beside it as m.mtl with every texture statement commented
     * out (the vt are the lightmap's) and map_Ka naming the lightmap; no line names a folder of
     * this machine or climbs with ../: a texture below the output's folder keeps its path from
     * there (Windows backslashes resolved), one elsewhere is named by its file name after a note
     * to copy it; the copy never replaces a user's own m.mtl; beside the scene, too, the MTL is
     * a copy (the scene's own has map_Kd for the texture UVs) */
    {
        char sh[2048];
        snprintf(sh, sizeof sh,
                 "cd '%s' && mkdir -p sc/tex out/tex && cp cornell.obj sc/room.obj && printf 'x' > sc/tex/wall.png && "
                 "printf 'x' > sc/tex/bump.png && printf 'x' > out/tex/in.png",
                 dir);
        BK_EXPECT(system(sh) == 0);
        char mtl_text[4096];
        snprintf(mtl_text, sizeof mtl_text,
                 "%s\nnewmtl extra\nKd 0.5 0.5 0.5\nmap_Kd -s 1 1 1 -clamp on tex/wall.png\n"
                 "  bump -bm 0.5 tex\\bump.png\r\nmap_Ks %s/abs.png\nmap_Ka tex/missing dir/a b.png  \n"
                 "map_d ../out/tex\\in.png\n",
                 mtl.data ? mtl.data : "", dir);
        write_text("sc/cornell.mtl", mtl_text);
        snap sc_mtl = take("sc/cornell.mtl");
        BK_EXPECTF(RUN("sc/room.obj -o out/m.png --mesh-out out/m.obj " BAKE) == 0, "%s", errbuf);
        snap mo = take("out/m.obj"), mm = take("out/m.mtl");
        BK_EXPECTF(mo.data && strstr(mo.data, "\nmtllib m.mtl\n") && !strstr(mo.data, "mtllib /") &&
                       !strstr(mo.data, "cornell.mtl"),
                   "%.400s", mo.data ? mo.data : "");
        BK_EXPECTF(mm.data && !strncmp(mm.data, "# written by baker", 18) && strstr(mm.data, "newmtl extra") &&
                       strstr(mm.data, "newmtl white"),
                   "%.300s", mm.data ? mm.data : "");
        BK_EXPECTF(mm.data && strstr(mm.data, "\n# (wall.png is not in this folder: copy it here") &&
                       strstr(mm.data, "\n# map_Kd -s 1 1 1 -clamp on wall.png\n") &&
                       strstr(mm.data, "\n#   bump -bm 0.5 bump.png\n") && strstr(mm.data, "\n# map_Ks abs.png\n") &&
                       strstr(mm.data, "\n# map_Ka a b.png\n") && strstr(mm.data, "\n# map_d tex/in.png\n") &&
                       !strstr(mm.data, "(tex/in.png is not") && !strstr(mm.data, "\nmap_Kd") &&
                       !strstr(mm.data, "\nmap_d") && !strstr(mm.data, "\n  bump"),
                   "%s", mm.data ? mm.data : "");
        /* the lightmap named, what the vt are said; no folder of this machine, no way up */
        BK_EXPECTF(mm.data && strstr(mm.data, "newmtl extra\nmap_Ka m.png\n") &&
                       strstr(mm.data, "newmtl white\nmap_Ka m.png\n") && strstr(mm.data, "vt are the lightmap UVs") &&
                       !strstr(mm.data, dir) && !strstr(mm.data, "../") && mo.data && !strstr(mo.data, dir) &&
                       !strstr(mo.data, "../") && strstr(mo.data, "#   m.png\n"),
                   "%s", mm.data ? mm.data : "");
        BK_EXPECT(same("sc/cornell.mtl", sc_mtl));
        /* the OBJ and its MTL load back with their materials (the baker's own loader) */
        BK_EXPECTF(RUN("out/m.obj --uv file -o out/again.png " BAKE) == 0 && !strstr(errbuf, "default material"), "%s",
                   errbuf);
        /* run again: baker's own m.mtl is replaced */
        BK_EXPECTF(RUN("sc/room.obj -o out/m.png --mesh-out out/m.obj " BAKE) == 0, "%s", errbuf);
        /* a user's m.mtl: refused before any work, nothing written or changed */
        write_text("out/u.mtl", "newmtl mine\nKd 1 0 0\n");
        snap um = take("out/u.mtl");
        BK_EXPECTF(RUN("sc/room.obj -o out/u.png --mesh-out out/u.obj " BAKE) == 2 && strstr(errbuf, "u.mtl") &&
                       strstr(errbuf, "not written by baker"),
                   "%s", errbuf);
        BK_EXPECT(same("out/u.mtl", um) && !exists("out/u.obj") && !exists("out/u.png"));
        /* an MTL the scene reads, in the output folder, as the copy's name: refused, untouched */
        write_text("sc/two.obj", "mtllib ../out/v.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
        write_text("out/v.mtl", "# written by baker, once\nnewmtl v\nKd 0.5 0.5 0.5\n");
        snap vm = take("out/v.mtl");
        BK_EXPECTF(RUN("sc/two.obj -o out/v.png --mesh-out out/v.obj " BAKE) == 2 && strstr(errbuf, "v.mtl"), "%s",
                   errbuf);
        BK_EXPECT(same("out/v.mtl", vm) && !exists("out/v.obj") && !exists("out/v.png"));
        /* beside the scene: a copy too, whose map_Kd reads no atlas */
        BK_EXPECTF(RUN("sc/room.obj -o sc/s.png --mesh-out sc/s.obj " BAKE) == 0, "%s", errbuf);
        snap so = take("sc/s.obj"), sm = take("sc/s.mtl");
        BK_EXPECTF(so.data && strstr(so.data, "\nmtllib s.mtl\n") && !strstr(so.data, "cornell.mtl") && sm.data &&
                       strstr(sm.data, "\n# map_Kd -s 1 1 1 -clamp on tex/wall.png\n") &&
                       strstr(sm.data, "\n# (in.png is not in this folder") && strstr(sm.data, "map_Ka s.png\n"),
                   "%.300s", so.data ? so.data : "");
        /* a lightmap in another folder: named by its file name, with the note */
        BK_EXPECTF(RUN("sc/room.obj -o s2.png --mesh-out sc/s2.obj " BAKE) == 0, "%s", errbuf);
        snap s2 = take("sc/s2.mtl");
        BK_EXPECTF(s2.data && strstr(s2.data, "#   s2.png (copy it beside this file)\n") &&
                       strstr(s2.data, "map_Ka s2.png\n") && !strstr(s2.data, dir),
                   "%s", s2.data ? s2.data : "");
        free(s2.data);
        free(sm.data);
        free(sc_mtl.data);
        free(mo.data);
        free(mm.data);
        free(um.data);
        free(vm.data);
        free(so.data);
    }

    free(scene.data);
    free(mtl.data);
    free(rays.data);
    free(map.data);
    free(mesh.data);
    free(json.data);
    free(out.data);
    free(hj.data);
    free(help.data);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
    BK_TEST_DONE();
}
