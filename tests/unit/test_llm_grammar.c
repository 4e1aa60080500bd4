/* test_llm_grammar.c — the GBNF grammar of a line-edit reply (llm/grammar.h):
 * which lines of the shown source it offers as SEARCH text (unique in the
 * base, not blank-ish, printable, one brace signature each), how it escapes
 * them, and its argument errors.  That llama.cpp parses it and that a real
 * model held to it writes edits is shown by bench/llm_local.sh (docs/llm.md). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/grammar.h"
#include "llm/reply.h"

/* The text of rule `name` (its "name ::= " line and the continuation lines
 * after it, which start with two blanks), or "" when the grammar has none;
 * caller frees. */
static char *rule(const char *g, const char *name)
{
    char head[32];
    snprintf(head, sizeof head, "\n%s ::= ", name);
    const char *a = strstr(g, head);
    if (!a)
        return strdup("");
    const char *e = a + 1;
    do {
        e = strchr(e, '\n');
        e = e ? e + 1 : g + strlen(g);
    } while (e[0] == ' ' && e[1] == ' ');
    return strndup(a + 1, (size_t)(e - a - 1));
}

/* Whether rule `name` offers the literal line lit (as GBNF spells it). */
static bool offers(const char *g, const char *name, const char *lit)
{
    char *r = rule(g, name);
    char want[512];
    snprintf(want, sizeof want, "\"%s\\n\"", lit);
    bool yes = strstr(r, want) != NULL;
    free(r);
    return yes;
}

static const char *const src =
    "extern \"C\" __global__ void k(const int *p, int *q, int n)\n"
    "{\n"
    "  int a = p[0]; // a brace in a comment {\n"
    "  const char *s = \"}\";\n"
    "  if (a > n) {\n"
    "    q[0] = a;\n"
    "  } else {\n"
    "    q[0] = n;\n"
    "  }\n"
    "  for (int i = 1; i < n; i++) {\n"
    "    q[i] = p[i];\n"
    "  }\n"
    "  int arr[2][2] = {{0, 1}, {2, 3}};\n"
    "  while (a--) { { q[a] += 1; } }\n"
    "  char c = '\\\\';\n"
    "  q[1] = 2;\n"
    "  q[1] = 2;\n"
    "  x;\n"
    "  \x01 bad byte;\n"
    "}\n";

/* Each line lands in the rule of its brace signature; lines that occur
 * twice, have fewer than 4 solid characters, or a control byte are left out. */
static void test_lines_and_signatures(void **state)
{
    (void)state;
    char *g = NULL;
    int n = -1;
    kevo_err err;
    assert_int_equal(kevo_llm_edit_grammar(src, src, 2, &g, &n, &err), KEVO_OK);
    assert_non_null(g);
    assert_non_null(strstr(g, "root ::= edit{1,2} note\n"));
    assert_true(offers(g, "s0", "  int a = p[0]; // a brace in a comment {"));
    assert_true(offers(g, "s0", "  const char *s = \\\"}\\\";"));   /* the quotes escaped */
    assert_true(offers(g, "s0", "  char c = '\\\\\\\\';"));         /* two backslashes, each escaped */
    assert_true(offers(g, "s1", "  if (a > n) {"));
    assert_true(offers(g, "s1", "  for (int i = 1; i < n; i++) {"));
    assert_true(offers(g, "s3", "  } else {"));
    assert_true(offers(g, "s0", "    q[i] = p[i];"));
    assert_true(offers(g, "s0", "  while (a--) { { q[a] += 1; } }")); /* nets to none: closes what it opens */
    assert_true(offers(g, "s0", "  int arr[2][2] = {{0, 1}, {2, 3}};"));
    assert_null(strstr(g, "q[1] = 2;"));   /* twice: ambiguous */
    assert_null(strstr(g, "\"  }\\n\""));  /* twice, and too short */
    assert_null(strstr(g, "\"  x;\\n\"")); /* too short */
    assert_null(strstr(g, "bad byte"));
    /* a pair only for the signatures present, and a REPLACE rule for each */
    assert_non_null(strstr(g, "pair ::= s0 \"=======\\n\" r0 | s1 \"=======\\n\" r1 | s3 \"=======\\n\" r3\n"));
    assert_null(strstr(g, "\nr2 ::= "));
    assert_non_null(strstr(g, "\nr1 ::= bl* opn d1\n"));
    assert_true(n >= 9);
    free(g);
}

/* Only lines the edits can find once: a line the base holds twice, or not
 * at all, is not offered; no line at all gives no grammar. */
static void test_unique_in_base(void **state)
{
    (void)state;
    const char *shown = "  int one = 1;\n  int two = 2;\n  int three = 3;\n";
    const char *base = "  int one = 1;\n  int two = 2;\n  int two = 2;\n";
    char *g = NULL;
    int n = -1;
    kevo_err err;
    assert_int_equal(kevo_llm_edit_grammar(shown, base, 1, &g, &n, &err), KEVO_OK);
    assert_int_equal(n, 1);
    assert_true(offers(g, "s0", "  int one = 1;"));
    assert_null(strstr(g, "two"));
    assert_null(strstr(g, "three"));
    assert_non_null(strstr(g, "root ::= edit{1,1} note\n"));
    free(g);
    /* a line within another line does not count as it */
    assert_int_equal(kevo_llm_edit_grammar("  int x = 1;\n", "    int x = 1;\n", 1, &g, &n, &err), KEVO_OK);
    assert_null(g);
    assert_int_equal(n, 0);
    assert_int_equal(kevo_llm_edit_grammar("", "", 1, &g, &n, &err), KEVO_OK);
    assert_null(g);
}

static void test_errors(void **state)
{
    (void)state;
    char *g = (char *)"x";
    int n = 5;
    kevo_err err;
    assert_int_equal(kevo_llm_edit_grammar(src, src, 0, &g, &n, &err), KEVO_ERR_ARG);
    assert_null(g);
    assert_int_equal(n, 0);
    assert_int_equal(kevo_llm_edit_grammar(src, src, 9, &g, &n, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_llm_edit_grammar(NULL, src, 1, &g, &n, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_llm_edit_grammar(src, NULL, 1, &g, &n, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "edit grammar"));
}

/* What the grammar keeps a model from writing, said by name when a model
 * without it writes it: an edit whose replacement opens a block it never
 * closes leaves no function the check can read. */
static void test_unbalanced_edit(void **state)
{
    (void)state;
    const char *reply = "<<<<<<< SEARCH\n    q[i] = p[i];\n=======\n    if (i > 0) {\n    q[i] = p[i];\n"
                        ">>>>>>> REPLACE\nGuarded the copy.\n";
    const char *parent = "extern \"C\" __global__ void k(const int *p, int *q, int n)\n{\n"
                         "  for (int i = 0; i < n; i++) {\n    q[i] = p[i];\n  }\n}\n";
    kevo_llm_parsed p;
    kevo_err err;
    assert_int_equal(kevo_llm_parse_reply(reply, parent, "{}", &p, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "braces do not balance (3 '{' against 2 '}')"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_and_signatures),
        cmocka_unit_test(test_unique_in_base),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_unbalanced_edit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
