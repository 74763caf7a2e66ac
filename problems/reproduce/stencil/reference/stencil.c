/* stencil: expand {{name}} placeholders in a template (the reference). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct var {
    char *name, *value;
    int used;
};

static struct var *vars;
static size_t nvars, capvars;
static int strict;

struct buffer {
    char *data;
    size_t length, capacity;
};

static void append(struct buffer *b, const char *data, size_t length) {
    if (b->length + length + 1 > b->capacity) {
        while (b->length + length + 1 > b->capacity)
            b->capacity = b->capacity ? b->capacity * 2 : 1024;
        b->data = realloc(b->data, b->capacity);
    }
    memcpy(b->data + b->length, data, length);
    b->length += length;
    b->data[b->length] = '\0';
}

static int name_char(int c, int first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

static int valid_name(const char *s, size_t length) {
    if (length == 0)
        return 0;
    for (size_t i = 0; i < length; i++)
        if (!name_char((unsigned char)s[i], i == 0))
            return 0;
    return 1;
}

static struct var *lookup(const char *name, size_t length) {
    for (size_t i = 0; i < nvars; i++)
        if (strlen(vars[i].name) == length && !memcmp(vars[i].name, name, length))
            return &vars[i];
    return NULL;
}

/* Define from "NAME=VALUE"; 0 when the text is not an assignment. */
static int define(const char *text, size_t length) {
    const char *eq = memchr(text, '=', length);
    if (!eq || !valid_name(text, (size_t)(eq - text)))
        return 0;
    size_t name_length = (size_t)(eq - text), value_length = length - name_length - 1;
    char *value = malloc(value_length + 1);
    memcpy(value, eq + 1, value_length);
    value[value_length] = '\0';
    struct var *v = lookup(text, name_length);
    if (v) {
        free(v->value);
        v->value = value;
        return 1;
    }
    if (nvars == capvars) {
        capvars = capvars ? capvars * 2 : 16;
        vars = realloc(vars, capvars * sizeof *vars);
    }
    char *name = malloc(name_length + 1);
    memcpy(name, text, name_length);
    name[name_length] = '\0';
    vars[nvars].name = name;
    vars[nvars].value = value;
    vars[nvars].used = 0;
    nvars++;
    return 1;
}

static int read_all(const char *path, struct buffer *out) {
    FILE *in = path ? fopen(path, "rb") : stdin;
    if (!in)
        return 0;
    char chunk[4096];
    size_t n;
    out->length = 0;
    append(out, "", 0);
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
        append(out, chunk, n);
    if (in != stdin)
        fclose(in);
    return 1;
}

static int load_file(const char *path) {
    struct buffer text = {0};
    if (!read_all(path, &text)) {
        fprintf(stderr, "stencil: cannot open '%s'\n", path);
        return 0;
    }
    size_t line = 0;
    for (char *p = text.data; p < text.data + text.length;) {
        char *end = memchr(p, '\n', (size_t)(text.data + text.length - p));
        size_t length = end ? (size_t)(end - p) : (size_t)(text.data + text.length - p);
        line++;
        if (length > 0 && p[0] != '#' && !define(p, length)) {
            fprintf(stderr, "stencil: %s:%zu: invalid assignment '%.*s'\n", path, line, (int)length, p);
            return 0;
        }
        p += length + 1;
    }
    free(text.data);
    return 1;
}

/* Expand `t` into `out`; 0 after printing the error. */
static int expand(const char *t, size_t length, struct buffer *out) {
    size_t line = 1, i = 0;
    while (i < length) {
        if (t[i] == '\\' && i + 2 < length && t[i + 1] == '{' && t[i + 2] == '{') {
            append(out, "{{", 2);
            i += 3;
            continue;
        }
        if (t[i] == '{' && i + 1 < length && t[i + 1] == '{') {
            size_t j = i + 2;
            while (j + 1 < length && t[j] != '\n' && !(t[j] == '}' && t[j + 1] == '}'))
                j++;
            if (j + 1 >= length || t[j] == '\n') {
                if (strict) {
                    fprintf(stderr, "stencil: unterminated placeholder on line %zu\n", line);
                    return 0;
                }
                append(out, "{{", 2);
                i += 2;
                continue;
            }
            size_t a = i + 2, b = j;
            while (a < b && (t[a] == ' ' || t[a] == '\t'))
                a++;
            while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t'))
                b--;
            if (!valid_name(t + a, b - a)) {
                if (strict) {
                    fprintf(stderr, "stencil: malformed placeholder '%.*s' on line %zu\n",
                            (int)(j + 2 - i), t + i, line);
                    return 0;
                }
                append(out, "{{", 2);
                i += 2;
                continue;
            }
            struct var *v = lookup(t + a, b - a);
            if (!v) {
                fprintf(stderr, "stencil: undefined name '%.*s' on line %zu\n", (int)(b - a), t + a, line);
                return 0;
            }
            v->used = 1;
            append(out, v->value, strlen(v->value));
            i = j + 2;
            continue;
        }
        if (t[i] == '\n')
            line++;
        append(out, t + i, 1);
        i++;
    }
    return 1;
}

static void usage(void) {
    printf("usage: stencil [--strict] [-f FILE]... [-t TEMPLATE] [NAME=VALUE]...\n"
           "Copy a template (standard input without -t) to standard output, {{NAME}} replaced by VALUE.\n"
           "  -f FILE     read NAME=VALUE lines from FILE\n"
           "  -t TEMPLATE read the template from the file TEMPLATE\n"
           "  --strict    refuse malformed placeholders and names the template does not use\n"
           "  -h, --help  print this help\n"
           "  --version   print the version\n");
}

int main(int argc, char **argv) {
    const char *template_path = NULL;
    int options = 1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options && arg[0] == '-' && arg[1] != '\0') {
            if (!strcmp(arg, "--")) {
                options = 0;
            } else if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
                usage();
                return 0;
            } else if (!strcmp(arg, "--version")) {
                printf("stencil 1.0\n");
                return 0;
            } else if (!strcmp(arg, "--strict")) {
                strict = 1;
            } else if (arg[1] == 'f' || arg[1] == 't') {
                const char *value = arg[2] ? arg + 2 : NULL;
                if (!value) {
                    if (i + 1 == argc) {
                        fprintf(stderr, "stencil: option '-%c' needs an argument\n", arg[1]);
                        return 2;
                    }
                    value = argv[++i];
                }
                if (arg[1] == 't')
                    template_path = value;
                else if (!load_file(value))
                    return 2;
            } else {
                fprintf(stderr, "stencil: unknown option '%s'\n", arg);
                return 2;
            }
        } else if (!define(arg, strlen(arg))) {
            fprintf(stderr, "stencil: invalid assignment '%s'\n", arg);
            return 2;
        }
    }
    struct buffer text = {0}, out = {0};
    if (!read_all(template_path, &text)) {
        fprintf(stderr, "stencil: cannot open '%s'\n", template_path);
        return 2;
    }
    append(&out, "", 0);
    if (!expand(text.data, text.length, &out))
        return 1;
    if (strict)
        for (size_t i = 0; i < nvars; i++)
            if (!vars[i].used) {
                fprintf(stderr, "stencil: unused name '%s'\n", vars[i].name);
                return 1;
            }
    fwrite(out.data, 1, out.length, stdout);
    return 0;
}
