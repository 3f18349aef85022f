/* unit_files_hostile.c - the holes a hostile run found in the output policy (issue 33), each run
 * as that user ran it: inputs beyond the 64th (MTL files, textures) overwritten by late-named
 * outputs; an output committed before standard output failed (baker diff -o, the bake's summary,
 * --stats -); temporary files left by a signal in the write phase; a scene named twice baked as
 * two coincident copies; write errors without their reason; scene names that start with '-';
 * control bytes of a file name echoed to the terminal; pages of an earlier --pages auto bake left
 * without a word; --max-memory checked only after the atlas.
 *
 * Runs the baker program in a fresh temporary folder on copies of the demo scenes (the CPU
 * backend, small atlases). Each group says what the code before issue 33 did.
 */
#define _XOPEN_SOURCE 700 /* S_IFMT, kill */
#include "bk_test.h"
#include "bk_test_files.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <time.h>

#define BAKE "--backend cpu --spp 1 --bounces 0 --quiet"

/* A temporary file of output NAME (".NAME.tmp-PID-N") in dir. */
static int tmp_of(const char *name)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    char prefix[300];
    snprintf(prefix, sizeof prefix, ".%s.tmp-", name);
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) found = !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return found;
}

/* Bakes the demo scene into sig.png in a child whose signals start at their defaults (sig_ign:
 * one of them ignored, as nohup does SIGHUP) and sends it sig as soon as sig.png's temporary file
 * exists (the write phase). Returns the child's wait status, or -1 when the bake ended before
 * its write phase was seen (try again). */
static int signal_in_write(int sig, int sig_ign, int seed)
{
    char sd[32];
    snprintf(sd, sizeof sd, "%d", seed);
    pid_t pid = fork();
    if (pid < 0) return -2;
    if (pid == 0) {
        const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
        for (int k = 0; k < 4; ++k) signal(sigs[k], SIG_DFL);
        if (sig_ign) signal(sig_ign, SIG_IGN);
        if (chdir(dir) != 0 || !freopen("/dev/null", "w", stdout) || !freopen("err.txt", "w", stderr)) _exit(126);
        execl(BK_BAKER, BK_BAKER, "cornell.obj", "-o", "sig.png", "--size", "1024", "--seed", sd, "--backend", "cpu",
              "--spp", "1", "--bounces", "0", "--denoise", "off", "--quiet", (char *)NULL);
        _exit(127);
    }
    /* the output's temporary file seen twice in a row: not the probe made and removed at once
     * before any work, but the file being written (it lives while the image is encoded). The
     * child is stopped to look again: if the file is still there, it has not been renamed, and
     * the signal comes before the commit could make it the output (else try again). */
    int st = 0, sent = 0, seen = 0;
    for (;;) {
        seen = tmp_of("sig.png") ? seen + 1 : 0;
        if (!sent && seen == 2 && kill(pid, SIGSTOP) == 0 && waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st)) {
            if (tmp_of("sig.png")) {
                kill(pid, sig);
                sent = 1;
            }
            kill(pid, SIGCONT);
        }
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -2;
        struct timespec ts = { 0, 200000 }; /* 0.2 ms */
        nanosleep(&ts, NULL);
    }
    return sent ? st : -1;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/bk_hostile_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp '%s/scenes/cornell.obj' '%s/scenes/cornell.mtl' '%s/scenes/cornell.vox' '%s/'",
             BK_SOURCE_DIR, BK_SOURCE_DIR, BK_SOURCE_DIR, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot copy the demo scenes\n");
        return 1;
    }
    /* cornell.obj + cornell.vox at 3 texels per voxel fill 3 pages of 256^2 */
    const char *pages3 = "--size 256 --texels-per-voxel 3 --pages auto";

    /* 1. inputs beyond the 64th: an OBJ naming 70 MTL files, the 69th m68.mtl (written by an
     *    earlier --mesh-out: it carries baker's signature), the 70th lm-1.png. Before: only the
     *    first 64 inputs were compared with outputs named after loading, so the page lm-1.png and
     *    the --mesh-out MTL m68.mtl replaced them (exit 0). */
    {
        char obj[8192];
        int  k = 0;
        for (int i = 0; i < 69; ++i) {
            char name[32], text[64];
            snprintf(name, sizeof name, "m%d.mtl", i);
            snprintf(text, sizeof text, "%snewmtl m%d\nKd 0.5 0.5 0.5\n", i == 68 ? "# written by baker\n" : "", i);
            write_text(name, text);
            k += snprintf(obj + k, sizeof obj - (size_t)k, "mtllib %s\n", name);
        }
        write_text("lm-1.png", "newmtl last\nKd 0.5 0.5 0.5\n");
        snprintf(obj + k, sizeof obj - (size_t)k, "mtllib lm-1.png\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
        write_text("big.obj", obj);
        snap lm1 = take("lm-1.png"), m68 = take("m68.mtl");
        BK_EXPECTF(RUN("big.obj cornell.vox -o lm.png %s " BAKE, pages3) == 2 && strstr(errbuf, "lm-1.png") &&
                       strstr(errbuf, "input"),
                   "70th input as a page: %s", errbuf);
        BK_EXPECT(same("lm-1.png", lm1) && !exists("lm-0.png") && !exists("lm-2.png"));
        BK_EXPECTF(RUN("big.obj cornell.vox -o mm.png --mesh-out m68.obj --size 256 " BAKE) == 2 &&
                       strstr(errbuf, "m68.mtl"),
                   "69th input as the --mesh-out MTL: %s", errbuf);
        BK_EXPECT(same("m68.mtl", m68) && !exists("m68.obj") && !exists("mm.png"));
        /* the same scene bakes when no output names an input */
        BK_EXPECTF(RUN("big.obj cornell.vox -o ok.png %s " BAKE, pages3) == 0 && exists("ok-2.png"), "%s", errbuf);
        free(lm1.data);
        free(m68.data);
    }
    /* a texture the scene's material names is an input too. Before: -o tex.png replaced it. */
    {
        write_text("tex.mtl", "newmtl t\nKd 1 1 1\nmap_Kd tex.png\n");
        write_text("tex.png", "not really a PNG, but the user's file");
        write_text("tex.obj",
                   "mtllib tex.mtl\nusemtl t\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nf 1/1 2/2 3/3\n");
        snap tex = take("tex.png");
        BK_EXPECTF(RUN("tex.obj -o tex.png --size 32 " BAKE) == 2 && strstr(errbuf, "texture"), "%s", errbuf);
        BK_EXPECTF(RUN("tex.obj -o t2.png --stats tex.png --size 32 " BAKE) == 2 && strstr(errbuf, "texture"), "%s",
                   errbuf);
        BK_EXPECT(same("tex.png", tex) && !exists("t2.png"));
        free(tex.data);
    }

    /* 2 and 5. nothing is committed before standard output is written. Before: baker diff -o
     *    replaced D.png and then failed on a full standard output; --stats - on a full or closed
     *    standard output lost the JSON and exited 0. */
    BK_EXPECT(RUN("cornell.obj -o a.png --size 64 --seed 1 " BAKE) == 0 &&
              RUN("cornell.obj -o b.png --size 64 --seed 2 " BAKE) == 0);
    BK_EXPECT(RUN("cornell.obj -o c.png --size 64 --seed 3 " BAKE) == 0 && RUN("diff a.png b.png -o d.png") == 0);
    snap a = take("a.png"), d = take("d.png");
    BK_EXPECTF(run_sh("$B diff a.png c.png -o d.png >/dev/full") == 1 && strstr(errbuf, "No space left on device"),
               "diff on a full stdout: %s", errbuf);
    BK_EXPECT(same("d.png", d));
    remove(strcat(strcpy(cmd, dir), "/c.png"));
    BK_EXPECTF(run_sh("$B diff a.png b.png -o d2.png --json >/dev/full") == 1 && !exists("d2.png"), "%s", errbuf);
    /* the bake's summary */
    BK_EXPECTF(run_sh("$B cornell.obj -o a.png --size 64 --seed 3 --backend cpu --spp 1 --bounces 0 >/dev/full") == 1 &&
                   strstr(errbuf, "No space left on device"),
               "bake summary on a full stdout: %s", errbuf);
    BK_EXPECT(same("a.png", a));
    /* --stats -, on a full and on a closed standard output */
    BK_EXPECTF(run_sh("$B cornell.obj -o a.png --stats - --size 64 --seed 4 " BAKE " >/dev/full") == 1 &&
                   strstr(errbuf, "--stats -") && strstr(errbuf, "No space left on device"),
               "--stats - on a full stdout: %s", errbuf);
    BK_EXPECT(same("a.png", a));
    BK_EXPECTF(run_sh("$B cornell.obj -o a.png --stats - --size 64 --seed 4 " BAKE " >&-") == 1 &&
                   strstr(errbuf, "--stats -"),
               "--stats - on a closed stdout: %s", errbuf);
    BK_EXPECT(same("a.png", a));
    BK_EXPECT(
        only(" cornell.obj cornell.mtl cornell.vox big.obj lm-1.png tex.obj tex.mtl tex.png ok-0.png ok-1.png ok-2.png "
             "a.png b.png d.png m0.mtl m1.mtl m2.mtl m3.mtl m4.mtl m5.mtl m6.mtl m7.mtl m8.mtl m9.mtl m10.mtl m11.mtl "
             "m12.mtl m13.mtl m14.mtl m15.mtl m16.mtl m17.mtl m18.mtl m19.mtl m20.mtl m21.mtl m22.mtl m23.mtl m24.mtl "
             "m25.mtl m26.mtl m27.mtl m28.mtl m29.mtl m30.mtl m31.mtl m32.mtl m33.mtl m34.mtl m35.mtl m36.mtl m37.mtl "
             "m38.mtl m39.mtl m40.mtl m41.mtl m42.mtl m43.mtl m44.mtl m45.mtl m46.mtl m47.mtl m48.mtl m49.mtl m50.mtl "
             "m51.mtl m52.mtl m53.mtl m54.mtl m55.mtl m56.mtl m57.mtl m58.mtl m59.mtl m60.mtl m61.mtl m62.mtl m63.mtl "
             "m64.mtl m65.mtl m66.mtl m67.mtl m68.mtl "));
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f big.obj lm-1.png m*.mtl ok-*.png tex.*", dir);
    BK_EXPECT(system(cmd) == 0);

    /* 6. signals in the write phase: the temporary files go, earlier outputs stay, and the process
     *    ends as the signal would. Before: .NAME.tmp-PID-N files (up to 25 MB) stayed behind. */
    BK_EXPECT(RUN("cornell.obj -o sig.png --size 64 " BAKE) == 0);
    snap      sig_png = take("sig.png");
    const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
    for (int k = 0; k < 3; ++k) {
        int st = -1;
        for (int tries = 0; tries < 4 && st == -1; ++tries) st = signal_in_write(sigs[k], 0, 10 + tries);
        BK_EXPECTF(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == sigs[k],
                   "signal %d: wait status %d (-1: never caught the write phase)", sigs[k], st);
        BK_EXPECTF(same("sig.png", sig_png) && only(" cornell.obj cornell.mtl cornell.vox a.png b.png d.png sig.png "),
                   "signal %d left files or replaced sig.png", sigs[k]);
    }
    /* a signal the user ignores (nohup: SIGHUP) stays ignored: the bake completes */
    {
        int st = -1;
        for (int tries = 0; tries < 4 && st == -1; ++tries) st = signal_in_write(SIGHUP, SIGHUP, 20 + tries);
        BK_EXPECTF(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && !same("sig.png", sig_png),
                   "ignored SIGHUP: status %d", st);
        free(sig_png.data);
        sig_png = take("sig.png");
    }
    /* SIGPIPE: --stats - into a pipe whose reader has gone */
    {
        int done = 0;
        for (int tries = 0; tries < 4 && !done; ++tries) {
            run_sh("{ $B cornell.obj -o sig.png --stats - --size 512 --seed %d " BAKE
                   "; echo $? > rc.txt; } | { exec 0<&-; }",
                   30 + tries);
            snap rc = take("rc.txt");
            done = rc.data && atoi(rc.data) == 128 + SIGPIPE;
            BK_EXPECTF(done || (rc.data && atoi(rc.data) == 0), "--stats - into a closed pipe: %s",
                       rc.data ? rc.data : "(no status)");
            if (done) BK_EXPECTF(same("sig.png", sig_png), "SIGPIPE replaced sig.png");
            free(rc.data);
            free(sig_png.data);
            sig_png = take("sig.png");
        }
        BK_EXPECT(done);
        remove("rc.txt");
    }
    /* SIGXFSZ: a file-size limit reached while the map is written */
    BK_EXPECTF(run_sh("ulimit -f 2; $B cornell.obj -o sig.png --size 256 --seed 40 " BAKE) == 128 + SIGXFSZ,
               "SIGXFSZ: %s", errbuf);
    BK_EXPECT(same("sig.png", sig_png));
    snprintf(cmd, sizeof cmd, "%s/rc.txt", dir);
    remove(cmd);
    BK_EXPECT(only(" cornell.obj cornell.mtl cornell.vox a.png b.png d.png sig.png "));
    free(sig_png.data);

    /* 7. a scene named twice, by any name, is refused. Before: two coincident copies at half the
     *    texel density, without a word. */
    snprintf(cmd, sizeof cmd, "cd '%s' && ln cornell.obj hard.obj", dir);
    BK_EXPECT(system(cmd) == 0);
    BK_EXPECTF(RUN("cornell.obj ./cornell.obj -o twice.png --size 64 " BAKE) == 2 && strstr(errbuf, "same file"), "%s",
               errbuf);
    BK_EXPECTF(RUN("cornell.obj '%s/cornell.obj' -o twice.png --size 64 " BAKE, dir) == 2, "%s", errbuf);
    BK_EXPECTF(RUN("hard.obj cornell.obj -o twice.png --size 64 " BAKE) == 2, "%s", errbuf);
    BK_EXPECTF(RUN("cornell.vox ../%s/cornell.vox -o twice.png --size 256 " BAKE, strrchr(dir, '/') + 1) == 2, "%s",
               errbuf);
    BK_EXPECT(!exists("twice.png"));
    remove(strcat(strcpy(cmd, dir), "/hard.obj"));

    /* 8. every write error names its reason (a file-size limit with SIGXFSZ ignored: EFBIG).
     *    Before: PNG, HDR, EXR, .glb and diff -o said "write failed" / "write error" alone. */
    {
        const char *outs[] = { "-o w.png --size 256", "-o w.hdr --size 256", "-o w.exr --size 256",
                               "-o w.png --size 8 --mesh-out w.glb" };
        for (int k = 0; k < 4; ++k) {
            if (k == 2 && RUN("cornell.obj -o probe.exr --size 8 " BAKE) != 0) continue; /* built without EXR */
            BK_EXPECTF(run_sh("trap '' XFSZ; ulimit -f 2; $B cornell.obj %s --seed 50 " BAKE, outs[k]) == 1 &&
                           strstr(errbuf, "File too large"),
                       "%s: %s", outs[k], errbuf);
        }
        BK_EXPECT(RUN("cornell.obj -o c.png --size 256 --seed 1 " BAKE) == 0 &&
                  RUN("cornell.obj -o e.png --size 256 --seed 2 " BAKE) == 0);
        BK_EXPECTF(run_sh("trap '' XFSZ; ulimit -f 2; $B diff c.png e.png -o w.png >/dev/null") == 1 &&
                       strstr(errbuf, "File too large"),
                   "diff -o: %s", errbuf);
        BK_EXPECT(!exists("w.png") && !exists("w.hdr") && !exists("w.exr") && !exists("w.glb"));
        remove(strcat(strcpy(cmd, dir), "/probe.exr"));
    }

    /* 9. a scene whose name starts with '-': -- ends the options; the unknown-option message for
     *    an existing file says how to name it. Before: "unknown option", and -- was refused. */
    snprintf(cmd, sizeof cmd, "cd '%s' && cp cornell.obj ./-dash.obj", dir);
    BK_EXPECT(system(cmd) == 0);
    BK_EXPECTF(RUN("-dash.obj -o dash.png --size 32 " BAKE) == 2 && strstr(errbuf, "./-dash.obj") &&
                   strstr(errbuf, "--"),
               "%s", errbuf);
    BK_EXPECTF(RUN("-o dash.png --size 32 " BAKE " -- -dash.obj") == 0 && exists("dash.png"), "%s", errbuf);
    BK_EXPECTF(RUN("rays -o dash.rays --diffuse 10 -- -dash.obj") == 0 && exists("dash.rays"), "%s", errbuf);
    BK_EXPECTF(RUN("build -- -dash.obj") == 0, "%s", errbuf);
    BK_EXPECTF(RUN("trace -dash.obj --rays dash.rays --hits dash.hits") == 2 && strstr(errbuf, "./-dash.obj"), "%s",
               errbuf);
    BK_EXPECTF(RUN("trace --rays dash.rays --hits dash.hits --backend cpu -- -dash.obj") == 0 && exists("dash.hits"),
               "%s", errbuf);

    /* control bytes of a file name are not echoed raw (an ESC reached the terminal before) */
    BK_EXPECTF(run_sh("$B \"$(printf 'x\\033[31mred.obj')\" -o esc.png >/dev/null") == 1 && !strchr(errbuf, '\033') &&
                   strstr(errbuf, "\\x1b[31mred.obj"),
               "%s", errbuf);

    /* pages of an earlier --pages auto bake with more pages: this bake says which are its own */
    BK_EXPECTF(RUN("cornell.obj cornell.vox -o p.png %s " BAKE, pages3) == 0 && exists("p-2.png"), "%s", errbuf);
    BK_EXPECTF(
        run_sh("$B cornell.obj cornell.vox -o p.png --size 256 --texels-per-voxel 2 --pages auto --backend cpu --spp 1 "
               "--bounces 0 >/dev/null") == 0 &&
            strstr(errbuf, "p-1.png .. p-2.png are from an earlier bake"),
        "%s", errbuf);

    /* --max-memory for a voxel scene is checked once its faces, and so its texels, are known:
     * before the atlas (before: only after the atlas, whose packing had taken its own memory) */
    BK_EXPECTF(RUN("cornell.vox -o mem.png --size 256 --max-memory 0.0001 " BAKE) == 1 &&
                   strstr(errbuf, "refused before the atlas") && !exists("mem.png"),
               "%s", errbuf);
    BK_EXPECTF(RUN("cornell.vox -o mem.png --size 256 --max-memory 1 " BAKE) == 0 && exists("mem.png"), "%s", errbuf);

    free(a.data);
    free(d.data);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
    BK_TEST_DONE();
}
