/* json_loose.h — read the JSON a model writes, not only the JSON it should.
 *
 * Models asked for a JSON plan often write what JavaScript or a config file
 * would take: comments, a trailing comma, and arithmetic where a number
 * goes ("workspace_bytes": 256 * 1024).  kevo's plan grammar already takes
 * an expression as a string ("256 * 1024"), so a bare expression in a value
 * position means exactly that string.
 */
#ifndef KEVO_LLM_JSON_LOOSE_H
#define KEVO_LLM_JSON_LOOSE_H

/* The JSON text of `text` with its loose parts mended: comments (// and
 * slash-star; not cJSON_Minify, which drops a division's '/') and white
 * space outside strings and bare values removed,
 * commas before a closing bracket or brace dropped, and each bare value that
 * is not a JSON number or literal but is made only of identifier, digit,
 * operator and parenthesis characters, with no two operands side by side
 * (an expression: 256 * 1024, BM*2, (Kc + 7) / 8 * 8), put in double
 * quotes as written.  String contents are never changed.
 * Bare identifier keys ({BM: 128}) are quoted too.  Returns a malloc'd
 * string, NULL when text is NULL or memory ran out.  The result need not
 * parse: the caller parses it and keeps its own error when it does not. */
char *kevo_json_loosen(const char *text);

#endif /* KEVO_LLM_JSON_LOOSE_H */
