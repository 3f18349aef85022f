/* bk_test_json.h - a strict little JSON reader for tests (RFC 8259): parses a whole text into a
 * tree, refusing trailing text, control characters in strings, bad escapes, leading zeros and
 * malformed numbers. Enough to read back what baker writes (glTF, --stats); not fast.
 *
 *     bk_json *root = bk_json_parse(text, len);      // NULL: not JSON
 *     const bk_json *acc = bk_json_get(root, "accessors");
 *     double n = bk_json_num(bk_json_at(acc, 0), "count", -1);
 *     bk_json_free(root);
 */
#ifndef BK_TEST_JSON_H
#define BK_TEST_JSON_H

#include <stdlib.h>
#include <string.h>

enum { BK_JSON_NULL, BK_JSON_BOOL, BK_JSON_NUM, BK_JSON_STR, BK_JSON_ARR, BK_JSON_OBJ };

typedef struct bk_json {
    int             type;
    double          num;   /* NUM, BOOL (0 / 1) */
    char           *str;   /* STR (decoded; \u escapes above 0x7F kept as '?') */
    struct bk_json *items; /* ARR, OBJ: n of them */
    char          **keys;  /* OBJ */
    size_t          n;
} bk_json;

typedef struct bk_json_src {
    const char *p, *end;
    int         depth;
} bk_json_src;

static void bk_json_ws(bk_json_src *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static char *bk_json_string(bk_json_src *s)
{
    if (s->p >= s->end || *s->p != '"') return NULL;
    s->p++;
    size_t cap = 16, n = 0;
    char  *out = malloc(cap);
    while (out) {
        if (s->p >= s->end) break;
        unsigned char c = (unsigned char)*s->p++;
        if (c == '"') {
            out[n] = 0;
            return out;
        }
        if (c < 0x20) break;
        if (c == '\\') {
            if (s->p >= s->end) break;
            char e = *s->p++;
            if (e == 'u') {
                if (s->end - s->p < 4) break;
                unsigned v = 0;
                int      ok = 1;
                for (int k = 0; k < 4; ++k) {
                    char h = s->p[k];
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                   : (ok = 0));
                }
                if (!ok) break;
                s->p += 4;
                c = v < 0x80 ? (unsigned char)v : '?';
            } else {
                const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *q = strchr(from, e);
                if (!e || !q) break;
                c = (unsigned char)to[q - from];
            }
        }
        if (n + 2 > cap) {
            char *g = realloc(out, cap *= 2);
            if (!g) break;
            out = g;
        }
        out[n++] = (char)c;
    }
    free(out);
    return NULL;
}

static void bk_json_free_items(bk_json *v);

static int bk_json_value(bk_json_src *s, bk_json *v)
{
    memset(v, 0, sizeof *v);
    bk_json_ws(s);
    if (s->p >= s->end || ++s->depth > 64) return -1;
    char c = *s->p;
    int  rc = -1;
    if (c == '{' || c == '[') {
        int obj = c == '{';
        v->type = obj ? BK_JSON_OBJ : BK_JSON_ARR;
        s->p++;
        bk_json_ws(s);
        size_t cap = 0;
        if (s->p < s->end && *s->p == (obj ? '}' : ']')) {
            s->p++;
            rc = 0;
            goto out;
        }
        for (;;) {
            if (v->n == cap) {
                cap = cap ? 2 * cap : 8;
                bk_json *it = realloc(v->items, cap * sizeof *it);
                if (!it) goto out;
                v->items = it;
                if (obj) {
                    char **k = realloc(v->keys, cap * sizeof *k);
                    if (!k) goto out;
                    v->keys = k;
                }
            }
            if (obj) {
                bk_json_ws(s);
                if (!(v->keys[v->n] = bk_json_string(s))) goto out;
                bk_json_ws(s);
                if (s->p >= s->end || *s->p++ != ':') {
                    free(v->keys[v->n]);
                    goto out;
                }
            }
            if (bk_json_value(s, &v->items[v->n])) {
                if (obj) free(v->keys[v->n]);
                bk_json_free_items(&v->items[v->n]);
                goto out;
            }
            v->n++;
            bk_json_ws(s);
            if (s->p >= s->end) goto out;
            if (*s->p == ',') {
                s->p++;
                continue;
            }
            if (*s->p++ != (obj ? '}' : ']')) goto out;
            rc = 0;
            goto out;
        }
    } else if (c == '"') {
        v->type = BK_JSON_STR;
        rc = (v->str = bk_json_string(s)) ? 0 : -1;
    } else if (c == 't' || c == 'f' || c == 'n') {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t      l = strlen(w);
        if ((size_t)(s->end - s->p) >= l && !memcmp(s->p, w, l)) {
            s->p += l;
            v->type = c == 'n' ? BK_JSON_NULL : BK_JSON_BOOL;
            v->num = c == 't';
            rc = 0;
        }
    } else {
        /* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
        const char *b = s->p, *q = s->p;
        if (q < s->end && *q == '-') q++;
        if (q < s->end && *q == '0') q++;
        else if (q < s->end && *q >= '1' && *q <= '9')
            while (q < s->end && *q >= '0' && *q <= '9') q++;
        else goto out;
        if (q < s->end && *q == '.') {
            q++;
            if (q >= s->end || *q < '0' || *q > '9') goto out;
            while (q < s->end && *q >= '0' && *q <= '9') q++;
        }
        if (q < s->end && (*q == 'e' || *q == 'E')) {
            q++;
            if (q < s->end && (*q == '+' || *q == '-')) q++;
            if (q >= s->end || *q < '0' || *q > '9') goto out;
            while (q < s->end && *q >= '0' && *q <= '9') q++;
        }
        char tmp[64];
        if ((size_t)(q - b) >= sizeof tmp) goto out;
        memcpy(tmp, b, (size_t)(q - b));
        tmp[q - b] = 0;
        v->type = BK_JSON_NUM;
        v->num = strtod(tmp, NULL);
        s->p = q;
        rc = 0;
    }
out:
    s->depth--;
    return rc;
}

static void bk_json_free_items(bk_json *v)
{
    for (size_t i = 0; i < v->n; ++i) {
        bk_json_free_items(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

static inline void bk_json_free(bk_json *v)
{
    if (v) {
        bk_json_free_items(v);
        free(v);
    }
}

static inline bk_json *bk_json_parse(const char *text, size_t len)
{
    bk_json_src s = { text, text + len, 0 };
    bk_json    *v = malloc(sizeof *v);
    if (!v) return NULL;
    if (bk_json_value(&s, v)) {
        bk_json_free_items(v);
        free(v);
        return NULL;
    }
    bk_json_ws(&s);
    if (s.p != s.end) {
        bk_json_free(v);
        return NULL;
    }
    return v;
}

/* Member key of an object (NULL when v is not an object or has none). */
static inline const bk_json *bk_json_get(const bk_json *v, const char *key)
{
    if (!v || v->type != BK_JSON_OBJ) return NULL;
    for (size_t i = 0; i < v->n; ++i)
        if (!strcmp(v->keys[i], key)) return &v->items[i];
    return NULL;
}

/* Element i of an array (NULL when out of range or not an array). */
static inline const bk_json *bk_json_at(const bk_json *v, size_t i)
{
    return v && v->type == BK_JSON_ARR && i < v->n ? &v->items[i] : NULL;
}

/* The number at key, or def when absent or not a number. */
static inline double bk_json_num(const bk_json *v, const char *key, double def)
{
    const bk_json *x = bk_json_get(v, key);
    return x && x->type == BK_JSON_NUM ? x->num : def;
}

/* The string at key, or NULL. */
static inline const char *bk_json_str(const bk_json *v, const char *key)
{
    const bk_json *x = bk_json_get(v, key);
    return x && x->type == BK_JSON_STR ? x->str : NULL;
}

#endif
