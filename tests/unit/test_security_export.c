/* test_security_export.c — what kevo export and kv_write_file do with
 * untrusted input and with what the user already has (ctest label
 * security), without a GPU, on copies of tests/fixtures/export/kevo_h200.db:
 *   - a crafted params key in a DB row (a C function behind a comment
 *     closer) puts no code into the library: export refuses the row, naming
 *     the candidate; stored values out of the family's domains (1e300, a
 *     string, a value not listed, a key twice) are refused the same way;
 *   - stored plans and space files name entries and tensors with
 *     identifiers only, and plan sizes out of range are refused;
 *   - the emitters escape string literals, comments and table cells: a
 *     compiled program shows the literal decodes to the very bytes and the
 *     comment hides what follows it;
 *   - --name refuses names clashing with headers or CMake targets (exit 2);
 *   - export into a non-empty folder: refused unless it is an earlier export
 *     of the library (kevo-export.json) or --force, and no user file is ever
 *     replaced, even with --force; an exported file edited since is kept;
 *   - kv_write_file writes through devices and FIFOs, refuses symbolic
 *     links, keeps a file's permissions, and `report --svg /dev/stdout`
 *     writes the SVG to stdout (a pipe and a file);
 *   - two runs at one shape: the library dispatches to the fastest measured
 *     kernel, whichever run measured it;
 *   - a VENDOR peer's stored config (JSON the GPU worker writes, the
 *     cuBLASLt algorithms export puts into the library) that is hostile or
 *     merely off (bad, odd-length or uppercase hex, another form, a K that
 *     is not the shape's, a huge workspace, quotes, newlines and comment
 *     closers in strings, gemms missing or three, extra keys, white space)
 *     never reaches the generated C: that shape stays UNSUPPORTED and
 *     export's warning names the run and the reason. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "db/store.h"
#include "export/emit.h"
#include "export/export.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"

static char tmp[64];

static const char *home(void)
{
    const char *h = getenv("KEVO_HOME");
    return h && *h ? h : KEVO_SOURCE_DIR;
}

static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* A copy of the fixture DB at tmp/name with sql applied. */
static void crafted_db(const char *name, const char *sql, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", tmp, name);
    assert_int_equal(sh("cp '%s/tests/fixtures/export/kevo_h200.db' '%s'", home(), out), 0);
    if (!sql)
        return;
    sqlite3 *h;
    assert_int_equal(sqlite3_open(out, &h), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s\n", msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(h);
    assert_int_equal(rc, SQLITE_OK);
}

/* Run `kevo export` with the extra args (NULL-terminated); its output in
 * *log (caller frees), its exit status returned. */
static int run_export(const char *db, const char *out, char **log, ...)
{
    char *args[24] = {"kevo", "export", "--db", (char *)db, "--out", (char *)out};
    int n = 6;
    va_list ap;
    va_start(ap, log);
    for (char *a; n < 23 && (a = va_arg(ap, char *)) != NULL;)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    char logpath[128];
    snprintf(logpath, sizeof logpath, "%s/export.log", tmp);
    int rc = tu_wait(tu_spawn(logpath, args));
    kevo_err err;
    assert_int_equal(kv_read_file(logpath, log, NULL, &err), KEVO_OK);
    return rc;
}

static bool exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* (not inlined: GCC 12 then takes the text for a pointer to the local t, -Wdangling-pointer) */
__attribute__((noinline)) static char *slurp(const char *dir, const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *t = NULL;
    kevo_err err;
    assert_int_equal(kv_read_file(path, &t, NULL, &err), KEVO_OK);
    return t;
}

static void put(const char *dir, const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---- untrusted params ---- */

static void test_params_key_injection(void **state)
{
    (void)state;
    char db[128], out[128];
    /* candidate 64 is run 2's best: a key that closes the kernel's comment and defines a function */
    crafted_db("inject.db",
               "UPDATE candidates SET params = '{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":4,\"EPI\":1,\"RASTER\":0,"
               "\"*/ int kevo_evil(void) { return 42; } /*\":1}' WHERE id = 64;",
               db, sizeof db);
    snprintf(out, sizeof out, "%s/inject", tmp);
    char *log = NULL;
    int rc = run_export(db, out, &log, NULL);
    if (rc != 1)
        fprintf(stderr, "%s", log);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(log, "candidate 64"));
    assert_non_null(strstr(log, "not a param name"));
    assert_null(strstr(log, "kevo_evil")); /* the key is not echoed either */
    free(log);
    assert_false(exists(out)); /* nothing written */

    /* a string-literal breakout (backslash before the quote) the same way */
    crafted_db("inject2.db",
               "UPDATE candidates SET params = '{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":4,\"EPI\":1,\"RASTER\":0,"
               "\"\\\\\\\", 0}; int kevo_evil2; static int y[] = {\\\"\":1}' WHERE id = 64;",
               db, sizeof db);
    rc = run_export(db, out, &log, NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(log, "candidate 64"));
    free(log);
    assert_false(exists(out));
}

static void test_params_domains(void **state)
{
    (void)state;
    static const struct {
        const char *params, *want;
    } bad[] = {
        {"{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":1e300,\"EPI\":1,\"RASTER\":0}", "'STAGES' is 1e+300, not a whole"},
        {"{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":\"4\",\"EPI\":1,\"RASTER\":0}", "'STAGES' is not a number"},
        {"{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":4.5,\"EPI\":1,\"RASTER\":0}", "'STAGES' is 4.5"},
        {"{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":9,\"EPI\":1,\"RASTER\":0}", "'STAGES' = 9 is not among its values"},
        {"{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":4,\"EPI\":1,\"RASTER\":0,\"BN\":64}", "'BN' is given twice"},
        {"{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":4,\"EPI\":1,\"RASTER\":0,\"FOO\":1}", "'FOO' is not a param"},
        {"{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":4,\"EPI\":1}", "lack 'RASTER'"},
        {"[256,2,4,1,0]", "not a JSON object"},
        {"{\"BN\":256,", "not a JSON object"},
    };
    char tdir[1024];
    snprintf(tdir, sizeof tdir, "%s/templates", home());
    kevo_space **sp = NULL;
    int nsp = 0;
    kevo_err err;
    assert_int_equal(kevo_spaces_load_dir(tdir, "ikbo_lce", &sp, &nsp, &err), KEVO_OK);
    const kevo_space *w = kevo_spaces_find(sp, nsp, "lce_wgmma");
    assert_non_null(w);
    kevo_config cfg;
    assert_int_equal(kevo_config_parse_stored(w, "{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":4,\"EPI\":1,\"RASTER\":0}",
                                              "candidate 1", &cfg, &err),
                     KEVO_OK);
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        err.msg[0] = '\0';
        assert_int_equal(kevo_config_parse_stored(w, bad[i].params, "candidate 7", &cfg, &err), KEVO_ERR_PARSE);
        if (!strstr(err.msg, bad[i].want) || !strstr(err.msg, "candidate 7"))
            fprintf(stderr, "%s -> %s\n", bad[i].params, err.msg);
        assert_non_null(strstr(err.msg, bad[i].want));
        assert_non_null(strstr(err.msg, "candidate 7"));
    }
    /* the lenient parser (replay) no longer converts 1e300 either */
    assert_int_equal(kevo_config_parse_json(w, bad[0].params, &cfg, &err), KEVO_ERR_PARSE);
    kevo_spaces_free(sp, nsp);

    /* and export refuses such a row, naming candidate and key */
    char db[128], out[128];
    crafted_db("domain.db",
               "UPDATE candidates SET params = '{\"BN\":256,\"CONSUMERS\":2,\"STAGES\":1e300,\"EPI\":1,\"RASTER\":0}' "
               "WHERE id = 64;",
               db, sizeof db);
    snprintf(out, sizeof out, "%s/domain", tmp);
    char *log = NULL;
    assert_int_equal(run_export(db, out, &log, NULL), 1);
    assert_non_null(strstr(log, "candidate 64"));
    assert_non_null(strstr(log, "'STAGES'"));
    free(log);
    assert_false(exists(out));
}

/* Plans and space files name entries and tensors: identifiers only (found by tests/fuzz: a tensor name with a
 * stray byte loaded, and its plan could not be read back from the DB). */
static void test_plan_and_space_names(void **state)
{
    (void)state;
    kevo_plan p;
    kevo_err err;
    static const char *const bad[] = {
        "{\"workspace_bytes\":0,\"pad_k\":0,\"launches\":[{\"entry\":\"a\\\"b\",\"grid\":[1,1,1],"
        "\"block\":[1,1,1],\"smem\":0}]}",
        "{\"workspace_bytes\":1e300,\"pad_k\":0,\"launches\":[]}",
        "{\"workspace_bytes\":-1,\"pad_k\":0,\"launches\":[]}",
        "{\"workspace_bytes\":0,\"pad_k\":0,\"launches\":[{\"entry\":\"k\",\"grid\":[1,1,1],"
        "\"block\":[1,1,1],\"smem\":1e300}]}",
        "{\"workspace_bytes\":0,\"pad_k\":0,\"launches\":[],\"tmaps\":[{\"tensor\":\"w\\nuser\","
        "\"box\":[1,1,1],\"swizzle\":0}]}",
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        if (kevo_plan_parse_json(bad[i], &p, &err) != KEVO_ERR_PARSE)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        assert_int_equal(kevo_plan_parse_json(bad[i], &p, &err), KEVO_ERR_PARSE);
    }
    char *text = tu_read_src("templates/lce_wgmma.json");
    char *at = strstr(text, "\"w_cand\"");
    assert_non_null(at);
    at[2] = '\x01'; /* "w\x01cand" */
    char path[1024];
    snprintf(path, sizeof path, "%s/templates/lce_wgmma.json", home());
    kevo_space *sp = NULL;
    assert_int_equal(kevo_space_load_text(text, path, &sp, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "must be an identifier"));
    free(text);
}

/* ---- the emitters ---- */

static void test_emit_escapes(void **state)
{
    (void)state;
    static const char nasty[] = "a\"b\\c\n*/ int evil; /*\r\t?\?/\x01\x7f\xff end\\";
    kv_buf lit, com, cell;
    kv_buf_init(&lit);
    kv_buf_init(&com);
    kv_buf_init(&cell);
    assert_int_equal(kevo_emit_c_string(&lit, nasty), KEVO_OK);
    assert_int_equal(kevo_emit_c_comment(&com, nasty), KEVO_OK);
    assert_int_equal(kevo_emit_md_cell(&cell, "x | y\n`z` <b>"), KEVO_OK);
    assert_null(strstr(com.data, "*/"));
    assert_null(strstr(com.data, "/*"));
    assert_null(strchr(com.data, '\n'));
    assert_null(strchr(com.data, '\\'));
    assert_null(strchr(lit.data, '\n'));
    assert_string_equal(cell.data, "x \\| y 'z' &lt;b&gt;");
    /* no link, image, emphasis, heading or entity of the text's own */
    kv_buf md;
    kv_buf_init(&md);
    assert_int_equal(kevo_emit_md_cell(&md, "[x](javascript:alert(1)) ![i](http://e/i.png) *em* # h &lt;s&gt;"),
                     KEVO_OK);
    assert_string_equal(md.data, "\\[x\\]\\(javascript:alert\\(1\\)\\) \\!\\[i\\]\\(http://e/i\\.png\\) "
                                 "\\*em\\* \\# h &amp;lt;s&amp;gt;");
    kv_buf_release(&md);
    /* compiled (C11, trigraphs on): the literal is the bytes, the comment hides the code in it */
    kv_buf prog;
    kv_buf_init(&prog);
    kv_buf_printf(&prog, "#include <string.h>\nstatic const char s[] = %s;\n/* %s */\n", lit.data, com.data);
    kv_buf_puts(&prog, "static const unsigned char want[] = {");
    for (size_t i = 0; i < sizeof nasty; i++)
        kv_buf_printf(&prog, "%u,", (unsigned char)nasty[i]);
    kv_buf_puts(&prog, "};\nint main(void) { return sizeof s != sizeof want || memcmp(s, want, sizeof s) != 0; }\n");
    char c[128], bin[128];
    snprintf(c, sizeof c, "%s/esc.c", tmp);
    snprintf(bin, sizeof bin, "%s/esc", tmp);
    kevo_err err;
    assert_int_equal(kv_write_file(c, prog.data, prog.len, &err), KEVO_OK);
    assert_int_equal(sh("gcc -std=c11 -trigraphs -Wall -Werror -pedantic '%s' -o '%s' && '%s'", c, bin, bin), 0);
    kv_buf_release(&prog);
    kv_buf_release(&lit);
    kv_buf_release(&com);
    kv_buf_release(&cell);

    /* a space file's why text with a comment closer stays inside the plan's comment */
    char tdir[1024];
    snprintf(tdir, sizeof tdir, "%s/templates", home());
    kevo_space **sp = NULL;
    int nsp = 0;
    assert_int_equal(kevo_spaces_load_dir(tdir, "ikbo_lce", &sp, &nsp, &err), KEVO_OK);
    kevo_space *w = kevo_spaces_find(sp, nsp, "lce_wgmma");
    snprintf(w->constraints[0].why, sizeof w->constraints[0].why, "x */ int evil_why; /*\n#error boom");
    kevo_config cfg;
    kevo_space_default(w, &cfg);
    kv_buf plan;
    kv_buf_init(&plan);
    assert_int_equal(kevo_emit_plan(&plan, w, kevo_op_find("ikbo_lce"), &cfg, 0, &err), KEVO_OK);
    assert_null(strstr(plan.data, "*/ int evil_why"));
    assert_null(strstr(plan.data, "\n#error"));
    kv_buf_release(&plan);
    kevo_spaces_free(sp, nsp);
}

/* ---- --name ---- */

/* --torch: a package name that would shadow Python's own modules or a
 * well-known distribution, whatever its case or '-', is refused before
 * anything is written (exit 2). */
static void test_torch_name_refused(void **state)
{
    (void)state;
    char db[128], out[128];
    crafted_db("pyname.db", NULL, db, sizeof db);
    snprintf(out, sizeof out, "%s/pyname", tmp);
    static char *const names[] = {"pip", "json", "torchvision", "numpy", "typing_extensions", "collections",
                                  "setuptools", "sqlite3", "yield", "os"};
    for (size_t i = 0; i < KV_ARRAY_LEN(names); i++) {
        char *log = NULL;
        int rc = run_export(db, out, &log, "--torch", "--name", names[i], NULL);
        if (rc != 2)
            fprintf(stderr, "--torch --name '%s': rc %d\n%s", names[i], rc, log);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(log, "cannot name a Python package"));
        free(log);
        assert_false(exists(out));
    }
}

/* An output is never an input: the DB at a path export would write, or
 * given as --out, is refused before anything is written, by device and
 * inode (a hard link under another name too). */
static void test_out_is_db(void **state)
{
    (void)state;
    char db[128], dir[160], link[192], *log = NULL;
    crafted_db("outdb.db", NULL, db, sizeof db);
    snprintf(dir, sizeof dir, "%s/outdb_lib", tmp);
    assert_int_equal(sh("mkdir -p '%s' && ln '%s' '%s/README.md'", dir, db, dir), 0);
    snprintf(link, sizeof link, "%s/README.md", dir);
    size_t before = 0;
    char *was = NULL;
    kevo_err err;
    assert_int_equal(kv_read_file(db, &was, &before, &err), KEVO_OK);
    int rc = run_export(link, dir, &log, "--force", NULL);
    assert_true(rc != 0);
    assert_non_null(strstr(log, "is the DB export reads"));
    free(log);
    rc = run_export(db, db, &log, NULL); /* a usage error, before the DB is opened */
    assert_int_equal(rc, 2);
    assert_non_null(strstr(log, "is the DB it reads"));
    free(log);
    char *now = NULL;
    size_t after = 0;
    assert_int_equal(kv_read_file(db, &now, &after, &err), KEVO_OK);
    assert_true(before == after && memcmp(was, now, before) == 0);
    assert_false(exists(dir) && sh("test -e '%s/src'", dir) == 0);
    free(was);
    free(now);
}

/* A folder of an earlier export that has become a symbolic link (to a
 * folder elsewhere) is never followed: nothing is written, there or here. */
static void test_out_symlinked_folder(void **state)
{
    (void)state;
    char db[128], dir[160], away[160], *log = NULL;
    crafted_db("symdir.db", NULL, db, sizeof db);
    snprintf(dir, sizeof dir, "%s/symdir_lib", tmp);
    snprintf(away, sizeof away, "%s/symdir_away", tmp);
    assert_int_equal(run_export(db, dir, &log, NULL), 0);
    free(log);
    assert_int_equal(sh("mkdir -p '%s' && rm -rf '%s/src' && ln -s '%s' '%s/src'", away, dir, away, dir), 0);
    int rc = run_export(db, dir, &log, NULL);
    assert_true(rc != 0);
    assert_non_null(strstr(log, "symbolic link"));
    free(log);
    assert_int_equal(sh("test -z \"$(ls -A '%s')\"", away), 0); /* nothing written through the link */
}

/* An export that stopped part-way (a full disk) leaves the manifest it
 * wrote first, naming what was there and what was coming; the next export,
 * of another library content, takes the folder file by file.  Made here by
 * hand: the first export's files, then the second's manifest-first state
 * with half of its files written. */
static void test_out_partial_export(void **state)
{
    (void)state;
    char db[128], a[160], b[160], c[160], *log = NULL;
    crafted_db("partial.db", NULL, db, sizeof db);
    snprintf(a, sizeof a, "%s/partial_a", tmp);
    snprintf(b, sizeof b, "%s/partial_b", tmp);
    snprintf(c, sizeof c, "%s/partial_c", tmp);
    assert_int_equal(run_export(db, a, &log, "--top", "3", NULL), 0);
    free(log);
    assert_int_equal(run_export(db, b, &log, "--top", "1", NULL), 0);
    free(log);
    /* a's folder as b's export would leave it after its manifest and its header: manifest = b's files,
       previous = a's (what was there) */
    assert_int_equal(sh("cd '%s' && python3 -c \"import json; a = json.load(open('%s/kevo-export.json')); "
                        "b = json.load(open('%s/kevo-export.json')); b['previous'] = a['files']; "
                        "json.dump(b, open('kevo-export.json', 'w'))\" && cp '%s/include/kevo_tuned.h' include/",
                        a, a, b, b),
                     0);
    /* a third content exports over it */
    assert_int_equal(run_export(db, a, &log, "--top", "2", NULL), 0);
    free(log);
    /* and the same with no previous: the folder is refused (what the manifest-first order mends) */
    assert_int_equal(run_export(db, c, &log, "--top", "3", NULL), 0);
    free(log);
    assert_int_equal(sh("cd '%s' && python3 -c \"import json; b = json.load(open('%s/kevo-export.json')); "
                        "json.dump(b, open('kevo-export.json', 'w'))\" && cp '%s/include/kevo_tuned.h' include/",
                        c, b, b),
                     0);
    int rc = run_export(db, c, &log, "--top", "2", NULL);
    assert_true(rc != 0);
    assert_non_null(strstr(log, "changed since kevo exported it"));
    free(log);
}

static void test_name_refused(void **state)
{
    (void)state;
    char db[128], out[128];
    crafted_db("name.db", NULL, db, sizeof db);
    snprintf(out, sizeof out, "%s/name", tmp);
    static char *const names[] = {"cuda", "stdint", "stdio", "string", "math", "all", "install", "test", "clean",
                                  "help", "package", "pthread", "kevo", "Foo", "a-b", "_a", "a__b", "a_", "9a",
                                  "x_tuned", "", "a b"};
    for (size_t i = 0; i < KV_ARRAY_LEN(names); i++) {
        char *log = NULL;
        int rc = run_export(db, out, &log, "--name", names[i], NULL);
        if (rc != 2)
            fprintf(stderr, "--name '%s': rc %d\n%s", names[i], rc, log);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(log, "--name"));
        free(log);
        assert_false(exists(out));
    }
    kevo_err err;
    assert_int_equal(kevo_export_check_name("my_kernels", &err), KEVO_OK);
    assert_int_equal(kevo_export_check_name("kevo_tuned", &err), KEVO_OK);
}

/* ---- the output folder ---- */

static void test_out_folder(void **state)
{
    (void)state;
    char db[128], dir[128];
    crafted_db("out.db", NULL, db, sizeof db);
    char *log = NULL;

    /* a project folder: refused, untouched, with and without --force (its README and CMakeLists are the user's) */
    snprintf(dir, sizeof dir, "%s/proj", tmp);
    mkdir(dir, 0755);
    put(dir, "README.md", "my readme\n");
    put(dir, "CMakeLists.txt", "project(mine)\n");
    assert_int_equal(run_export(db, dir, &log, NULL), 1);
    assert_non_null(strstr(log, "not empty"));
    free(log);
    assert_int_equal(run_export(db, dir, &log, "--force", NULL), 1);
    assert_non_null(strstr(log, "did not write it"));
    free(log);
    char *t = slurp(dir, "README.md");
    assert_string_equal(t, "my readme\n");
    free(t);
    t = slurp(dir, "CMakeLists.txt");
    assert_string_equal(t, "project(mine)\n");
    free(t);
    char p[256];
    snprintf(p, sizeof p, "%s/src", dir);
    assert_false(exists(p));
    snprintf(p, sizeof p, "%s/kevo-export.json", dir);
    assert_false(exists(p));

    /* --force beside unrelated files: written, those kept */
    snprintf(dir, sizeof dir, "%s/forced", tmp);
    mkdir(dir, 0755);
    put(dir, "notes.txt", "keep me\n");
    assert_int_equal(run_export(db, dir, &log, NULL), 1);
    free(log);
    assert_int_equal(run_export(db, dir, &log, "--force", NULL), 0);
    free(log);
    t = slurp(dir, "notes.txt");
    assert_string_equal(t, "keep me\n");
    free(t);
    t = slurp(dir, "kevo-export.json");
    assert_non_null(strstr(t, "\"library\":\t\"kevo_tuned\""));
    assert_non_null(strstr(t, "src/kevo_tuned.c"));
    free(t);

    /* an earlier export of the library: exported again in place, the user's own files there kept */
    snprintf(dir, sizeof dir, "%s/lib", tmp);
    assert_int_equal(run_export(db, dir, &log, NULL), 0);
    free(log);
    put(dir, "notes.txt", "mine\n");
    snprintf(p, sizeof p, "%s/build", dir);
    mkdir(p, 0755);
    put(dir, "build/CMakeCache.txt", "cache\n");
    assert_int_equal(run_export(db, dir, &log, NULL), 0);
    free(log);
    t = slurp(dir, "notes.txt");
    assert_string_equal(t, "mine\n");
    free(t);
    t = slurp(dir, "build/CMakeCache.txt");
    assert_string_equal(t, "cache\n");
    free(t);
    /* another DB's content replaces the export's files (they are unchanged since export wrote them) */
    char db2[128];
    crafted_db("out2.db", "UPDATE candidates SET median_ms = median_ms * 2 WHERE run_id = 2;", db2, sizeof db2);
    assert_int_equal(run_export(db2, dir, &log, NULL), 0);
    free(log);
    /* an exported file the user edited is kept: refused, naming it */
    put(dir, "README.md", "edited\n");
    assert_int_equal(run_export(db, dir, &log, NULL), 1);
    assert_non_null(strstr(log, "README.md"));
    assert_non_null(strstr(log, "changed since"));
    free(log);
    assert_int_equal(run_export(db, dir, &log, "--force", NULL), 1);
    free(log);
    t = slurp(dir, "README.md");
    assert_string_equal(t, "edited\n");
    free(t);
    /* another library's export is not this one's */
    assert_int_equal(run_export(db, dir, &log, "--name", "other_lib", NULL), 1);
    assert_non_null(strstr(log, "names another library"));
    free(log);
    snprintf(p, sizeof p, "%s/src/other_lib.c", dir);
    assert_false(exists(p));

    /* --out naming a file */
    snprintf(p, sizeof p, "%s/afile", tmp);
    put(tmp, "afile", "x\n");
    assert_int_equal(run_export(db, p, &log, NULL), 1);
    assert_non_null(strstr(log, "not a folder"));
    free(log);
}

/* ---- kv_write_file ---- */

static void test_write_special_files(void **state)
{
    (void)state;
    kevo_err err;
    struct stat sb;
    /* a device: written through, still a device.  As root (where the old code replaced /dev/null) on a
     * null device of our own first, so that a regression harms only the test's folder */
    char dev[128];
    snprintf(dev, sizeof dev, "%s/null", tmp);
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        assert_int_equal(kv_write_file(dev, "x", 1, &err), KEVO_OK);
        assert_int_equal(lstat(dev, &sb), 0);
        assert_true(S_ISCHR(sb.st_mode));
    }
    assert_int_equal(kv_write_file("/dev/null", "x", 1, &err), KEVO_OK);
    assert_int_equal(stat("/dev/null", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));

    /* a FIFO: written through (the reader gets the bytes), still a FIFO */
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", tmp);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(kv_write_file(fifo, "hello", 5, &err), KEVO_OK);
    char got[16] = {0};
    assert_int_equal(read(rd, got, sizeof got - 1), 5);
    assert_string_equal(got, "hello");
    close(rd);
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));

    /* a symbolic link: refused; link and target unchanged */
    char target[128], link[128];
    snprintf(target, sizeof target, "%s/target.txt", tmp);
    snprintf(link, sizeof link, "%s/link.svg", tmp);
    put(tmp, "target.txt", "precious\n");
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(kv_write_file(link, "new", 3, &err), KEVO_ERR_IO);
    assert_non_null(strstr(err.msg, "symbolic link"));
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    char *t = slurp(tmp, "target.txt");
    assert_string_equal(t, "precious\n");
    free(t);

    /* a regular file keeps its permissions; a folder is refused */
    char f[128];
    snprintf(f, sizeof f, "%s/private.txt", tmp);
    put(tmp, "private.txt", "old\n");
    chmod(f, 0600);
    assert_int_equal(kv_write_file(f, "new\n", 4, &err), KEVO_OK);
    assert_int_equal(stat(f, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(kv_write_file(tmp, "x", 1, &err), KEVO_ERR_IO);
}

static void test_svg_to_stdout(void **state)
{
    (void)state;
    char db[128];
    crafted_db("svg.db", NULL, db, sizeof db);
    /* a link of our own to the stream first (a regression replaces it, not /dev/stdout), then /dev/stdout */
    char link[128], cmd[2560];
    snprintf(link, sizeof link, "%s/stdout", tmp);
    assert_int_equal(symlink("/proc/self/fd/1", link), 0);
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s' --svg '%s' | grep -q '</svg>'", KEVO_BINARY, db, link);
    assert_int_equal(sh("%s", cmd), 0);
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    /* stdout a pipe */
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s' --svg /dev/stdout", KEVO_BINARY, db);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    kv_buf b;
    kv_buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        kv_buf_append(&b, chunk, n);
    assert_int_equal(pclose(p), 0);
    assert_non_null(b.data);
    assert_non_null(strstr(b.data, "<svg"));
    assert_non_null(strstr(b.data, "</svg>"));
    assert_null(strstr(b.data, "wrote")); /* the SVG alone */
    kv_buf_release(&b);
    /* stdout a file */
    char log[128];
    snprintf(log, sizeof log, "%s/svg.out", tmp);
    char *args[] = {"kevo", "report", "--db", db, "--svg", "/dev/stdout", NULL};
    assert_int_equal(tu_wait(tu_spawn(log, args)), 0);
    char *t = slurp(tmp, "svg.out");
    assert_non_null(strstr(t, "<svg"));
    assert_non_null(strstr(t, "</svg>"));
    free(t);
}

/* ---- two runs at one shape ---- */

/* Export db into dir; the tuned-shape lines of the generated source. */
static char *tuned_lines(const char *db, const char *dir)
{
    char *log = NULL;
    int rc = run_export(db, dir, &log, NULL);
    if (rc != 0)
        fprintf(stderr, "%s", log);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "1 tuned shapes"));
    free(log);
    char *src = slurp(dir, "src/kevo_tuned.c");
    kv_buf b;
    kv_buf_init(&b);
    for (char *save = NULL, *l = strtok_r(src, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (strstr(l, "/* run "))
            kv_buf_printf(&b, "%s\n", l);
    free(src);
    return kv_buf_take(&b);
}

static void test_two_runs_fastest(void **state)
{
    (void)state;
    char db[128], dir[128];
    /* run 2 re-tunes run 1's shape in fp16, twice as fast */
    crafted_db("two.db",
               "UPDATE runs SET dtype = 'fp16' WHERE id = 2;"
               "UPDATE candidates SET median_ms = median_ms / 2 WHERE run_id = 2;",
               db, sizeof db);
    snprintf(dir, sizeof dir, "%s/two", tmp);
    char *t = tuned_lines(db, dir);
    assert_non_null(strstr(t, "/* run 2: "));
    assert_null(strstr(t, "/* run 1: "));
    /* the entry names run 2's best kernel: the comment of that kernel says run 2 */
    int k = -1;
    assert_int_equal(sscanf(strstr(t, "{"), "{%*d, %*d, %*d, %*d, %*d, %*d, %*d, %*d, %d}", &k), 1);
    free(t);
    char *src = slurp(dir, "src/kevo_tuned.c");
    char want[64];
    snprintf(want, sizeof want, "/* kernel %d: ", k);
    const char *c = strstr(src, want);
    assert_non_null(c);
    const char *eol = strchr(c, '\n');
    assert_non_null(strstr(c, "in run 2,"));
    assert_true(strstr(c, "in run 2,") < eol);
    free(src);

    /* and the other way round: run 1 faster, run 1's entry */
    crafted_db("two1.db",
               "UPDATE runs SET dtype = 'fp16' WHERE id = 2;"
               "UPDATE candidates SET median_ms = median_ms * 2 WHERE run_id = 2;",
               db, sizeof db);
    snprintf(dir, sizeof dir, "%s/two1", tmp);
    t = tuned_lines(db, dir);
    assert_non_null(strstr(t, "/* run 1: "));
    assert_null(strstr(t, "/* run 2: "));
    free(t);
}

/* ---- untrusted vendor configs ---- */

/* 128 hex digits of the bytes first, first + 1, ... */
static void hex_of(int first, char out[129])
{
    for (int i = 0; i < 64; i++)
        snprintf(out + 2 * i, 3, "%02x", (first + i) & 0xff);
}

/* A copy of the fixture at tmp/name, upgraded to the current schema, where
 * run 2 lost to its beta1 peer (0.3 ms, the only vendor peer) whose config
 * is `config` (bound as text: any bytes). */
static void vendor_config_db(const char *name, const char *config, char *out, size_t n)
{
    crafted_db(name, NULL, out, n);
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(out, false, &db, &err), KEVO_OK);
    kevo_db_close(db);
    sqlite3 *h;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(out, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h,
                                  "UPDATE candidates SET vs_peer = 0.3 / median_ms WHERE run_id = 2;"
                                  "DELETE FROM run_peers WHERE run_id = 2;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h,
                                        "INSERT INTO run_peers(run_id, shape_idx, device, peer, status, median_ms, "
                                        "detail, config) VALUES (2, 0, 0, 'beta1', 'ok', 0.3, '', ?)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_bind_text(st, 1, config, -1, SQLITE_TRANSIENT), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* Each hostile config: export succeeds, run 2's shape stays UNSUPPORTED
 * (no vendor form, no vendor module in the source, nothing of the config
 * in it), and the warning names the run and the reason; the valid config
 * of the same shape gives the vendor form (the control). */
static void test_vendor_configs(void **state)
{
    (void)state;
    char u[129], c[129], up[129], badhex[129];
    hex_of(0x10, u);
    hex_of(0xa0, c);
    for (int i = 0; i < 129; i++)
        up[i] = (char)(u[i] >= 'a' && u[i] <= 'f' ? u[i] - 'a' + 'A' : u[i]);
    memcpy(badhex, u, sizeof u);
    badhex[7] = 'g';
    static const char head[] = "{\"form\":\"beta1\",\"kup\":1184,\"kcp\":872,\"cublaslt\":130100,\"workspace\":33554432";
    static const struct {
        const char *fmt; /* printf over head, then the user and candidate algorithms */
        const char *why;  /* in the warning */
    } cases[] = {
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}", NULL}, /* control */
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%.127s\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}",
         "is not 128 lowercase hex digits"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s0\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}",
         "is not 128 lowercase hex digits"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"}]}%.0s", "exactly two GEMMs"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"},"
         "{\"role\":\"cand\",\"algo\":\"00\"}]}",
         "exactly two GEMMs"},
        {"%s}%.0s%.0s", "not an object of exactly"},
        {"%s,\"gemms\":[{\"role\":\"cand\",\"algo\":\"%s\"},{\"role\":\"user\",\"algo\":\"%s\"}]}",
         "role is not 'user'"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"*/ int evil; /*\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}%.0s",
         "is not 128 lowercase hex digits"},
        {"%s,\"gemms\":[{\"role\":\"user\\n\\\"*/evil\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}",
         "role is not 'user'"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"}],\"evil*/\":1}",
         "not an object of exactly"},
        {"%s, \"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}",
         "exact form the GPU worker writes"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}\n",
         "exact form the GPU worker writes"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\",\"algo\":\"00\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}",
         "is not an object of a 'role' and an 'algo'"},
        {"%s,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"}]",
         "is not JSON"},
        {"%.0s%.0s%.0s", "is empty"},
        {"%.0s%.0s%.0s[1, 2, 3]", "not an object of exactly"},
    };
    /* configs whose head differs: form, K, version, workspace */
    static const struct {
        const char *from, *to, *why;
    } heads[] = {
        {"\"form\":\"beta1\"", "\"form\":\"stage0\"", "'form' is not one of"},
        {"\"form\":\"beta1\"", "\"form\":\"decomposed\"", "a config of another form"},
        {"\"form\":\"beta1\"", "\"form\":\"beta1\\\"*/\\n\"", "'form' is not one of"},
        {"\"kup\":1184", "\"kup\":1178", "'kup' is not Ku rounded up to 8"},
        {"\"kcp\":872", "\"kcp\":872.5", "'kcp' is not Kc rounded up to 8"},
        {"\"cublaslt\":130100", "\"cublaslt\":0", "'cublaslt' is not a positive integer"},
        {"\"cublaslt\":130100", "\"cublaslt\":\"130100\"", "'cublaslt' is not a positive integer"},
        {"\"workspace\":33554432", "\"workspace\":268435457", "'workspace' is not a byte count"},
        {"\"workspace\":33554432", "\"workspace\":1e300", "'workspace' is not a byte count"},
        {"\"workspace\":33554432", "\"workspace\":-1", "'workspace' is not a byte count"},
        {"\"workspace\":33554432", "\"workspace\":33554432.0", "exact form the GPU worker writes"},
    };
    const char *algos[][2] = {{u, c}, {up, c}, {badhex, c}};
    int ncases = (int)KV_ARRAY_LEN(cases), total = ncases + 2 + (int)KV_ARRAY_LEN(heads);
    for (int i = 0; i < total; i++) {
        char config[2048], name[64], dir[128], db[128];
        const char *why;
        if (i < ncases) {
            snprintf(config, sizeof config, cases[i].fmt, head, u, c);
            why = cases[i].why;
        } else if (i < ncases + 2) { /* uppercase and non-hex digits */
            snprintf(config, sizeof config, cases[0].fmt, head, algos[i - ncases + 1][0], algos[i - ncases + 1][1]);
            why = "is not 128 lowercase hex digits";
        } else {
            int h = i - ncases - 2;
            char hd[256];
            const char *at = strstr(head, heads[h].from);
            assert_non_null(at);
            snprintf(hd, sizeof hd, "%.*s%s%s", (int)(at - head), head, heads[h].to, at + strlen(heads[h].from));
            snprintf(config, sizeof config, cases[0].fmt, hd, u, c);
            why = heads[h].why;
        }
        snprintf(name, sizeof name, "vcfg%d.db", i);
        snprintf(dir, sizeof dir, "%s/vcfg%d", tmp, i);
        vendor_config_db(name, config, db, sizeof db);
        char *log = NULL;
        assert_int_equal(run_export(db, dir, &log, NULL), 0);
        char *src = slurp(dir, "src/kevo_tuned.c");
        if (!why) { /* the control: the vendor form, its algorithms */
            assert_non_null(strstr(src, "#define X_NVENDORS 1\n"));
            assert_non_null(strstr(src, "15, 1, 90, -1, 0}, /* run 2: "));
            assert_non_null(strstr(log, "the library runs it there"));
        } else {
            if (!strstr(log, why) || !strstr(log, "kevo: run 2 at B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15 "
                                                  "(bf16, sm_90a): vendor peer"))
                fprintf(stderr, "case %d: want '%s' in:\n%s\n", i, why, log);
            assert_non_null(strstr(log, why));
            assert_non_null(strstr(log, "UNSUPPORTED there"));
            assert_non_null(strstr(src, "#define X_NVENDORS 0\n"));
            assert_non_null(strstr(src, "#define X_NVMODS 0\n"));
            assert_non_null(strstr(src, "15, 1, 90, -1, -1}, /* run 2: "));
            assert_null(strstr(src, "evil"));
            assert_null(strstr(src, "0x10,0x11,0x12,0x13"));
        }
        free(src);
        free(log);
    }
    printf("  %d vendor configs: %d refused with their reason, the control exported\n", total, total - 1);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/kevo-security-test-XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_key_injection),
        cmocka_unit_test(test_params_domains),
        cmocka_unit_test(test_plan_and_space_names),
        cmocka_unit_test(test_emit_escapes),
        cmocka_unit_test(test_name_refused),
        cmocka_unit_test(test_torch_name_refused),
        cmocka_unit_test(test_out_is_db),
        cmocka_unit_test(test_out_symlinked_folder),
        cmocka_unit_test(test_out_partial_export),
        cmocka_unit_test(test_out_folder),
        cmocka_unit_test(test_write_special_files),
        cmocka_unit_test(test_svg_to_stdout),
        cmocka_unit_test(test_two_runs_fastest),
        cmocka_unit_test(test_vendor_configs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
