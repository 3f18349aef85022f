/* bench_bake.c - `baker bench bake`: the whole bake command, timed from the outside.
 *
 * Each run is the real command in a child process (fork, then exec of /proc/self/exe with `bake`,
 * output into a temporary folder removed afterwards), so the wall time is the whole process: exec,
 * start-up, a CUDA context, the phases, freeing and exit. The child's --stats JSON gives the phases
 * (cmd_bake.c: startup, load, build, upload, atlas, bake, denoise, write, free) and its peak device
 * memory; wait4's rusage gives its peak host memory (ru_maxrss of the whole child). "rest" is the
 * wall time no phase accounts for: exec and dynamic loading, writing the stats, exit (a CUDA
 * context's teardown). With --reps N the row is the run of least wall time.
 *
 * The scene "world" (in the default set) is the voxel world of docs/voxels.md: tools/vox_world,
 * found beside the baker binary, writes it into the temporary folder once per run (not timed),
 * and it is baked with that page's world command (4096^2 pages as needed, 1 texel per voxel,
 * 1 spp, 1 bounce, its sun and sky) whatever --sizes, --spp and --bounces say. Without the
 * generator its row is skipped with a note.
 */
#define _DEFAULT_SOURCE /* wait4, mkdtemp */
#include "bench.h"
#include "bench_common.h"
#include "cli.h"
#include "outputs.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* the issue 10 settings: sun + sky, 64 spp, 2 bounces */
#define BENCH_SUN "0.3,1,0.2,3,2.9,2.7,0.5"
#define BENCH_SKY "0.4,0.5,0.7"
/* the voxel world's bake (docs/voxels.md, "Voxel worlds") */
#define WORLD_SUN     "0.3,1,-0.2,3,2.9,2.7,0.5"
#define WORLD_SIZE    4096
#define WORLD_SCENE   "world" /* the name in --scenes */
#define WORLD_FILE    "world.vox"
#define WORLD_OBJECTS 54000 /* vox_world's default */

/* Short names for the shared scenes, relative to $BK_SCENES_DIR or ../shared/scenes. */
static const char *const scene_alias[][2] = {
    { "sponza", "sponza-dabrovic/sponza.obj" },
    { "sibenik", "sibenik/sibenik.obj" },
    { "dragon_vrip", "dragon/dragon_vrip.obj.gz" },
    { "dragon_vrip_res2", "dragon/dragon_vrip_res2.obj" },
};

/* The phases as cmd_bake.c writes them under "seconds", in its order. */
static const char *const phases[] = {
    "startup", "load", "build", "upload", "atlas", "bake", "denoise", "write", "free"
};
#define NPH ((int)(sizeof phases / sizeof phases[0]))

typedef struct bench_run {
    double   ph[NPH], rest, wall;
    uint64_t peak_host, peak_device, texels;
} bench_run;

/* The number after "key": inside the flat object "obj": { ... } of JSON text (cmd_bake.c's stats:
 * no nesting inside the objects read here). 0, or -1 when absent. */
static int json_field(const char *text, const char *obj, const char *key, double *out)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": {", obj);
    const char *o = strstr(text, pat);
    if (!o) return -1;
    const char *end = strchr(o, '}');
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *k = strstr(o, pat);
    if (!k || !end || k > end) return -1;
    char  *e;
    double v = strtod(k + strlen(pat), &e);
    if (e == k + strlen(pat)) return -1;
    *out = v;
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, r;
    char  *buf = malloc(cap + 1);
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

/* "../x/dragon_vrip.obj.gz" -> "dragon_vrip" */
static void scene_label(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(out, n, "%s", b);
    char *dot = strchr(out, '.');
    if (dot && dot != out) *dot = 0;
}

/* Runs prog with args, its stderr into errf and its stdout there too (out_too) or nowhere, and
 * waits: 0 with *st its wait status and *ru its usage, or -1 after saying why fork failed. */
static int spawn(const char *prog, char *const *args, const char *errf, int out_too, int *st, struct rusage *ru)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "baker bench bake: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        FILE *e = freopen(errf, "w", stderr),
             *o = e ? freopen(out_too ? errf : "/dev/null", out_too ? "a" : "w", stdout) : NULL;
        if (!o) _exit(127);
        execv(prog, args);
        fprintf(stderr, "baker bench bake: cannot run %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    *st = 0;
    memset(ru, 0, sizeof *ru);
    pid_t w;
    while ((w = wait4(pid, st, 0, ru)) < 0 && errno == EINTR) {}
    if (w != pid) *st = -1; /* (not an exit: WIFEXITED is false) */
    return 0;
}

/* One bake in a child process; 0, or -1 after saying why (its stderr is shown). */
static int run_child(const char *prog, const char *dir, char *const *args, bench_run *r)
{
    char stats[4200], errf[4200];
    snprintf(stats, sizeof stats, "%s/stats.json", dir);
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    int           st = 0;
    struct rusage ru;
    double        t0 = bk_time_now();
    if (spawn(prog, args, errf, 0, &st, &ru)) return -1;
    r->wall = bk_time_now() - t0;
    int    ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    char  *text = ok ? slurp(stats) : NULL;
    double v;
    if (text) {
        /* an earlier build (--baker) may lack some phases: they count as 0 and fall into the
         * rest; load and bake every build has */
        for (int k = 0; k < NPH; ++k) {
            if (json_field(text, "seconds", phases[k], &v)) {
                if (!strcmp(phases[k], "load") || !strcmp(phases[k], "bake")) {
                    ok = 0;
                    break;
                }
                v = 0.0;
            }
            r->ph[k] = v;
        }
        r->peak_device = json_field(text, "memory", "peak_device_bytes", &v) ? 0 : (uint64_t)v;
        r->texels = json_field(text, "memory", "atlas_texels", &v) ? 0 : (uint64_t)v;
        uint64_t js = json_field(text, "memory", "peak_host_bytes", &v) ? 0 : (uint64_t)v;
        r->peak_host = (uint64_t)ru.ru_maxrss * 1024u; /* the whole child, exit included */
        if (js > r->peak_host) r->peak_host = js;
    }
    if (!ok || !text) {
        char *e = slurp(errf);
        fprintf(stderr, "baker bench bake: the bake %s (%s); its messages:\n%s",
                !ok && text     ? "wrote no phases in its stats"
                : WIFEXITED(st) ? "failed"
                                : "was killed",
                WIFEXITED(st) ? "exit status" : "signal", e ? e : "(none)\n");
        if (WIFEXITED(st)) fprintf(stderr, "  exit status %d\n", WEXITSTATUS(st));
        else if (WIFSIGNALED(st)) fprintf(stderr, "  signal %d\n", WTERMSIG(st));
        free(e);
        free(text);
        return -1;
    }
    free(text);
    double sum = 0.0;
    for (int k = 0; k < NPH; ++k) sum += r->ph[k];
    r->rest = r->wall - sum;
    return 0;
}

static void print_header(void)
{
    printf("%-16s %6s", "scene", "size");
    for (int k = 0; k < NPH; ++k) printf(" %8s", phases[k]);
    printf(" %8s %8s %9s %9s %8s\n", "rest", "wall", "host MB", "dev MB", "B/texel");
}

static void print_row(const char *scene, int size, const bench_run *r)
{
    printf("%-16s %6d", scene, size);
    for (int k = 0; k < NPH; ++k) printf(" %8.3f", r->ph[k]);
    printf(" %8.3f %8.3f %9.1f %9.1f %8.1f\n", r->rest, r->wall, (double)r->peak_host / 1e6,
           (double)r->peak_device / 1e6, r->texels ? (double)r->peak_host / (double)r->texels : 0.0);
    fflush(stdout);
}

static void csv_row(FILE *f, const char *scene, const char *path, int size, const char *backend, int spp, int bounces,
                    const bench_run *r)
{
    fprintf(f, "%s,\"", scene);
    for (const char *p = path; *p; ++p) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fprintf(f, "\",%d,%s,%d,%d", size, backend, spp, bounces);
    for (int k = 0; k < NPH; ++k) fprintf(f, ",%.6f", r->ph[k]);
    fprintf(f, ",%.6f,%.6f,%.3f,%.3f,%llu,%.2f\n", r->rest, r->wall, (double)r->peak_host / 1e6,
            (double)r->peak_device / 1e6, (unsigned long long)r->texels,
            r->texels ? (double)r->peak_host / (double)r->texels : 0.0);
}

/* --sizes LIST into size_list (at most 64): 0, or the exit status after printing why. */
static int parse_sizes(const char *sizes, int *size_list, int *nsizes)
{
    char *dup = strdup(sizes), *save = NULL;
    if (!dup) return 1;
    for (char *p = strtok_r(dup, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        uint64_t u;
        if (*nsizes == 64 || bk_cli_u64("--sizes", p, 4, 65536, &u)) {
            free(dup);
            return 2;
        }
        size_list[(*nsizes)++] = (int)u;
    }
    free(dup);
    if (!*nsizes) {
        fprintf(stderr, "baker bench bake: --sizes: no size given\n");
        return 2;
    }
    return 0;
}

/* --scenes LIST: paths, or the short names of scene_alias, into paths (at most 64, *nsc of them
 * made, each to be freed). 0; the exit status after printing why; -1 when out of memory for the
 * list itself. */
static int find_scenes(const char *scenes, char **paths, int *nsc)
{
    const char *dir =
        getenv("BK_SCENES_DIR") && *getenv("BK_SCENES_DIR") ? getenv("BK_SCENES_DIR") : "../shared/scenes";
    char *list = strdup(scenes), *save = NULL;
    int   rc = 0;
    if (!list) return -1;
    for (char *p = strtok_r(list, ",", &save); p && *nsc < 64; p = strtok_r(NULL, ",", &save)) {
        const char *rel = NULL;
        if (!strcmp(p, WORLD_SCENE) && access(p, F_OK) != 0) { /* generated later */
            if (!(paths[*nsc] = strdup(WORLD_SCENE))) {
                rc = 1;
                break;
            }
            (*nsc)++;
            continue;
        }
        for (size_t k = 0; k < sizeof scene_alias / sizeof scene_alias[0]; ++k)
            if (!strcmp(p, scene_alias[k][0])) rel = scene_alias[k][1];
        size_t n = strlen(dir) + strlen(p) + 64;
        if (!(paths[*nsc] = malloc(n))) {
            rc = 1;
            break;
        }
        if (rel && access(p, F_OK) != 0) snprintf(paths[*nsc], n, "%s/%s", dir, rel);
        else snprintf(paths[*nsc], n, "%s", p);
        if (access(paths[*nsc], R_OK) != 0) {
            fprintf(stderr,
                    "baker bench bake: %s: %s (a path, one of sponza, sibenik, dragon_vrip, dragon_vrip_res2 under "
                    "$BK_SCENES_DIR or ../shared/scenes, or world)\n",
                    paths[*nsc], strerror(errno));
            free(paths[*nsc]);
            rc = 2;
            break;
        }
        (*nsc)++;
    }
    free(list);
    return rc;
}

/* Removes every file of dir but keep (a name in it, or NULL): a run's outputs, whatever pages
 * it wrote. */
static void clean_dir(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char           path[4400];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (keep && !strcmp(e->d_name, keep))) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* The run of least wall time of reps runs of the child (its files removed after each) into
 * *best: 1, or 0 when none succeeded; a failed run stops the reps and sets *rc to 1. */
static int best_of(const char *prog, const char *dir, char **args, uint64_t reps, bench_run *best, int *rc)
{
    bench_run r;
    memset(best, 0, sizeof *best);
    int have = 0;
    for (uint64_t rep = 0; rep < reps; ++rep) {
        memset(&r, 0, sizeof r);
        int failed = run_child(prog, dir, args, &r);
        clean_dir(dir, WORLD_FILE);
        if (failed) {
            *rc = 1;
            break;
        }
        if (!have || r.wall < best->wall) *best = r;
        have = 1;
    }
    return have;
}

/* The child's arguments into args: bake SCENE -o OUT --size S_SIZE ... --quiet, then the extra
 * ones; *scene_at: where SCENE goes. */
static void child_args(char **args, int *scene_at, char *out, char *s_size, char *s_spp, char *s_bounces,
                       const char *backend, char *stats, int world, char **extra, int nextra)
{
    int na = 0;
    args[na++] = "baker";
    args[na++] = "bake";
    *scene_at = na;
    args[na++] = NULL;
    args[na++] = "-o";
    args[na++] = out;
    args[na++] = "--size";
    args[na++] = s_size;
    args[na++] = "--spp";
    args[na++] = s_spp;
    args[na++] = "--bounces";
    args[na++] = s_bounces;
    args[na++] = "--sun";
    args[na++] = world ? WORLD_SUN : BENCH_SUN;
    args[na++] = "--sky";
    args[na++] = BENCH_SKY;
    args[na++] = "--backend";
    args[na++] = (char *)backend;
    args[na++] = "--stats";
    args[na++] = stats;
    args[na++] = "--quiet";
    if (world) {
        args[na++] = "--texels-per-voxel";
        args[na++] = "1";
        args[na++] = "--pages";
        args[na++] = "auto";
    }
    for (int k = 0; k < nextra; ++k) args[na++] = extra[k];
    args[na] = NULL;
}

/* tools/vox_world beside the running baker into gen (its size): 1, or 0 when there is none. */
static int find_generator(char *gen, size_t size)
{
    char    self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    snprintf(gen, size, "vox_world");
    if (n <= 0) return 0;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return 0;
    *slash = 0;
    snprintf(gen, size, "%s/vox_world", self);
    return access(gen, X_OK) == 0;
}

/* Runs the generator: `GEN --objects N --props PROPS -o DIR/world.vox`, its messages into DIR. 0, or -1 after
 * printing why (its messages shown). */
static int make_world(const char *gen, const char *props, const char *dir, uint64_t objects, char *world, size_t size)
{
    char msgs[4400], nobj[32];
    snprintf(world, size, "%s/%s", dir, WORLD_FILE);
    snprintf(msgs, sizeof msgs, "%s/vox_world.txt", dir);
    snprintf(nobj, sizeof nobj, "%llu", (unsigned long long)objects);
    char *const   args[] = { (char *)gen, "--objects", nobj, "--props", (char *)props, "-o", world, NULL };
    int           st = 0;
    struct rusage ru;
    double        t0 = bk_time_now();
    if (spawn(gen, args, msgs, 1, &st, &ru)) return -1;
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && access(world, R_OK) == 0;
    if (!ok) {
        char *m = slurp(msgs);
        fprintf(stderr, "baker bench bake: %s --objects %s failed; its messages:\n%s", gen, nobj, m ? m : "(none)\n");
        free(m);
    } else
        printf("%s: %llu objects written by %s in %.2f s (not timed)\n", WORLD_SCENE, (unsigned long long)objects, gen,
               bk_time_now() - t0);
    unlink(msgs);
    return ok ? 0 : -1;
}

/* The options of bench bake. */
typedef struct bake_cli {
    const char *scenes, *sizes, *backend, *csv;
    const char *prog; /* --baker: the program timed */
    uint64_t    spp, bounces, reps;
    uint64_t    world_objects; /* --world-objects: vox_world --objects */
    uint64_t    world_size;    /* --world-size: the world's page side */
    int         nextra;
    char      **extra;
} bake_cli;

/* The arguments into *c (its defaults set first): 0, or the exit status after printing why. */
static int parse_args(int argc, char **argv, bake_cli *c)
{
    const char *v;
    c->scenes = "sponza,dragon_vrip," WORLD_SCENE;
    c->world_objects = WORLD_OBJECTS;
    c->world_size = WORLD_SIZE;
    c->sizes = "1024,4096";
    c->backend = "auto";
    c->csv = NULL;
    c->prog = "/proc/self/exe";
    c->spp = 64;
    c->bounces = 2;
    c->reps = 1;
    c->nextra = 0;
    c->extra = NULL;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            c->extra = argv + i + 1;
            c->nextra = argc - i - 1;
            break;
        }
        if (!strcmp(a, "--scenes")) {
            if (bk_cli_value(argc, argv, &i, &c->scenes)) return 2;
        } else if (!strcmp(a, "--sizes")) {
            if (bk_cli_value(argc, argv, &i, &c->sizes)) return 2;
        } else if (!strcmp(a, "--backend")) {
            if (bk_cli_value(argc, argv, &i, &c->backend)) return 2;
        } else if (!strcmp(a, "--csv")) {
            if (bk_cli_value(argc, argv, &i, &c->csv)) return 2;
        } else if (!strcmp(a, "--baker")) {
            if (bk_cli_value(argc, argv, &i, &c->prog)) return 2;
        } else if (!strcmp(a, "--spp")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 1u << 20, &c->spp)) return 2;
        } else if (!strcmp(a, "--bounces")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 0, 64, &c->bounces)) return 2;
        } else if (!strcmp(a, "--reps")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 100, &c->reps)) return 2;
        } else if (!strcmp(a, "--world-objects")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 10000000, &c->world_objects)) return 2;
        } else if (!strcmp(a, "--world-size")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 64, 16384, &c->world_size)) return 2;
        } else {
            fprintf(stderr, "baker bench bake: unknown argument '%s'\n%s", a, bk_bench_usage);
            return 2;
        }
    }
    return 0;
}

/* The voxel world's row: the world generated on the first call (*made: 1 made, -1 not), then
 * baked as docs/voxels.md does; skipped with a note when vox_world is not beside the baker or
 * its props (vox-mmmm of the shared scenes) are absent. */
static void world_bench(const bake_cli *c, const char *prog, const char *dir, char *out, char *stats, FILE *cf,
                        int *made, int *rc)
{
    char gen[4200], world[4400], label[64];
    if (c->world_objects == WORLD_OBJECTS) snprintf(label, sizeof label, "%s54k", WORLD_SCENE);
    else snprintf(label, sizeof label, "%s%llu", WORLD_SCENE, (unsigned long long)c->world_objects);
    if (!find_generator(gen, sizeof gen)) {
        printf("%-16s skipped: no vox_world beside this baker (%s; build its target vox_world)\n", label, gen);
        *made = -1;
        return;
    }
    /* its props: the shared scenes' vox-mmmm, where the other scenes are looked for */
    char        props[4200];
    struct stat pst;
    snprintf(props, sizeof props, "%s/vox-mmmm",
             getenv("BK_SCENES_DIR") && *getenv("BK_SCENES_DIR") ? getenv("BK_SCENES_DIR") : "../shared/scenes");
    if (stat(props, &pst) != 0 || !S_ISDIR(pst.st_mode)) {
        printf("%-16s skipped: no props folder %s for vox_world (set $BK_SCENES_DIR)\n", label, props);
        *made = -1;
        return;
    }
    snprintf(world, sizeof world, "%s/%s", dir, WORLD_FILE);
    if (*made == 0) {
        *made = make_world(gen, props, dir, c->world_objects, world, sizeof world) ? -1 : 1;
        if (*made < 0) *rc = 1;
        else
            printf(
                "%s: baked as in docs/voxels.md: %llu^2 pages as needed, 1 texel per voxel, 1 spp, 1 bounce, sun %s, "
                "sky %s\n",
                label, (unsigned long long)c->world_size, WORLD_SUN, BENCH_SKY);
    }
    if (*made < 0) return;
    char **args = malloc(sizeof(char *) * (size_t)(32 + c->nextra));
    if (!args) {
        *rc = 1;
        return;
    }
    char s_size[16], s_one[] = "1";
    int  scene_at;
    snprintf(s_size, sizeof s_size, "%llu", (unsigned long long)c->world_size);
    child_args(args, &scene_at, out, s_size, s_one, s_one, c->backend, stats, 1, c->extra, c->nextra);
    args[scene_at] = world;
    bench_run best;
    if (best_of(prog, dir, args, c->reps, &best, rc)) {
        print_row(label, (int)c->world_size, &best);
        char what[64];
        snprintf(what, sizeof what, "vox_world --objects %llu", (unsigned long long)c->world_objects);
        if (cf) csv_row(cf, label, what, (int)c->world_size, c->backend, 1, 1, &best);
    }
    free(args);
}

int bk_bench_bake(int argc, char **argv)
{
    bake_cli cli;
    if (parse_args(argc, argv, &cli)) return 2;
    const char *scenes = cli.scenes, *sizes = cli.sizes, *backend = cli.backend, *csv = cli.csv;
    const char *prog = cli.prog;
    uint64_t    spp = cli.spp, bounces = cli.bounces, reps = cli.reps;
    int         nextra = cli.nextra;
    char      **extra = cli.extra;
    /* the sizes, checked before any work */
    int size_list[64], nsizes = 0;
    int rc = parse_sizes(sizes, size_list, &nsizes);
    if (rc) return rc;
    /* the scenes: paths, or the short names above */
    char *paths[64];
    int   nsc = 0;
    rc = find_scenes(scenes, paths, &nsc);
    if (rc < 0) return 1;
    bk_outputs io;
    bk_outputs_init(&io);
    char err[1024], tmpl[4096];
    int  out_csv = -1;
    if (!rc && csv) {
        for (int k = 0; k < nsc && !rc; ++k)
            if (strcmp(paths[k], WORLD_SCENE) && bk_outputs_input(&io, "a scene", paths[k], err, sizeof err)) {
                fprintf(stderr, "baker: %s\n", err);
                rc = 2;
            }
        if (!rc && (out_csv = bk_outputs_add(&io, "--csv", csv, 0, err, sizeof err)) < 0) {
            fprintf(stderr, "baker: %s\n", err);
            rc = out_csv == BK_OUT_CLASH ? 2 : 1;
        }
    }
    const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpl, sizeof tmpl, "%s/baker-bench-XXXXXX", tmpdir);
    if (!rc && !mkdtemp(tmpl)) {
        fprintf(stderr, "baker bench bake: cannot make a folder %s: %s\n", tmpl, strerror(errno));
        rc = 1;
    }
    if (rc) {
        for (int k = 0; k < nsc; ++k) free(paths[k]);
        bk_outputs_free(&io);
        return rc;
    }

    /* the child's arguments: bake SCENE -o DIR/out.png --size N ... -- then the extra ones */
    char out[4200], stats[4200], errf[4200], s_size[32], s_spp[32], s_bounces[32];
    snprintf(out, sizeof out, "%s/out.png", tmpl);
    snprintf(stats, sizeof stats, "%s/stats.json", tmpl);
    snprintf(errf, sizeof errf, "%s/stderr.txt", tmpl);
    snprintf(s_spp, sizeof s_spp, "%llu", (unsigned long long)spp);
    snprintf(s_bounces, sizeof s_bounces, "%llu", (unsigned long long)bounces);
    char **args = malloc(sizeof(char *) * (size_t)(32 + nextra));
    FILE  *cf = NULL;
    if (!args) {
        rc = 1;
        goto done;
    }
    int scene_at;
    child_args(args, &scene_at, out, s_size, s_spp, s_bounces, backend, stats, 0, extra, nextra);

    if (out_csv >= 0) {
        if (!(cf = bk_outputs_open(&io, out_csv, err, sizeof err))) {
            fprintf(stderr, "baker: %s\n", err);
            rc = 1;
            goto done;
        }
        fputs("scene,path,size,backend,spp,bounces", cf);
        for (int k = 0; k < NPH; ++k) fprintf(cf, ",%s", phases[k]);
        fputs(",rest,wall,peak_host_mb,peak_device_mb,atlas_texels,host_bytes_per_texel\n", cf);
    }
    printf("bench bake: %s backend, %llu spp, %llu bounces, sun %s, sky %s, best wall of %llu; seconds, then peak "
           "memory\n",
           backend, (unsigned long long)spp, (unsigned long long)bounces, BENCH_SUN, BENCH_SKY,
           (unsigned long long)reps);
    print_header();
    int world_made = 0; /* 1: generated, -1: no generator or it failed */
    for (int k = 0; k < nsc; ++k) {
        char label[256];
        scene_label(paths[k], label, sizeof label);
        if (!strcmp(paths[k], WORLD_SCENE)) {
            world_bench(&cli, prog, tmpl, out, stats, cf, &world_made, &rc);
            continue;
        }
        args[scene_at] = paths[k];
        for (int z = 0; z < nsizes; ++z) {
            snprintf(s_size, sizeof s_size, "%d", size_list[z]);
            bench_run best;
            if (!best_of(prog, tmpl, args, reps, &best, &rc)) continue;
            print_row(label, size_list[z], &best);
            if (cf) csv_row(cf, label, paths[k], size_list[z], backend, (int)spp, (int)bounces, &best);
        }
    }
    if (cf && (bk_outputs_close(&io, out_csv, err, sizeof err) || bk_outputs_commit(&io, err, sizeof err))) {
        fprintf(stderr, "baker: %s\n", err);
        rc = 1;
    }
done:
    clean_dir(tmpl, NULL);
    if (rmdir(tmpl) != 0) fprintf(stderr, "baker bench bake: %s left behind: %s\n", tmpl, strerror(errno));
    free(args);
    for (int k = 0; k < nsc; ++k) free(paths[k]);
    bk_outputs_free(&io);
    return rc;
}
