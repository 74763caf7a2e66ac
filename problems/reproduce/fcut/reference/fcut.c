/* fcut: print selected delimited fields of each line (the reference). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct range {
    long lo, hi;
};

static struct range *ranges;
static size_t nranges;
static char delim = '\t';
static const char *out_delim;
static int only_delimited;

static int parse_number(const char **p, long *out) {
    long value = 0;
    if (**p < '0' || **p > '9')
        return 0;
    while (**p >= '0' && **p <= '9') {
        if (value > (LONG_MAX - 9) / 10)
            return 0;
        value = value * 10 + (**p - '0');
        (*p)++;
    }
    *out = value;
    return value > 0;
}

/* Parse "1,3-5,7-,-2"; 0 when the list is invalid. */
static int parse_list(const char *list) {
    size_t count = 1;
    for (const char *p = list; *p; p++)
        count += *p == ',';
    free(ranges);
    ranges = malloc(count * sizeof *ranges);
    nranges = 0;
    const char *p = list;
    for (;;) {
        struct range r;
        if (*p == '-') {
            p++;
            r.lo = 1;
            if (!parse_number(&p, &r.hi))
                return 0;
        } else {
            if (!parse_number(&p, &r.lo))
                return 0;
            r.hi = r.lo;
            if (*p == '-') {
                p++;
                if (*p == ',' || *p == '\0')
                    r.hi = LONG_MAX;
                else if (!parse_number(&p, &r.hi) || r.hi < r.lo)
                    return 0;
            }
        }
        ranges[nranges++] = r;
        if (*p == '\0')
            return 1;
        if (*p != ',')
            return 0;
        p++;
    }
}

static int selected(long field) {
    for (size_t i = 0; i < nranges; i++)
        if (ranges[i].lo <= field && field <= ranges[i].hi)
            return 1;
    return 0;
}

static void cut_line(const char *line, size_t length) {
    if (!memchr(line, delim, length)) {
        if (!only_delimited) {
            fwrite(line, 1, length, stdout);
            putchar('\n');
        }
        return;
    }
    long field = 1;
    int printed = 0;
    size_t start = 0;
    for (size_t i = 0; i <= length; i++) {
        if (i == length || line[i] == delim) {
            if (selected(field)) {
                if (printed)
                    fputs(out_delim, stdout);
                fwrite(line + start, 1, i - start, stdout);
                printed = 1;
            }
            field++;
            start = i + 1;
        }
    }
    putchar('\n');
}

static void cut_stream(FILE *in) {
    static char *line;
    static size_t capacity;
    size_t length = 0;
    int c;
    for (;;) {
        c = getc(in);
        if (c == EOF || c == '\n') {
            if (c == '\n' || length > 0)
                cut_line(line ? line : "", length);
            if (c == EOF)
                return;
            length = 0;
            continue;
        }
        if (length + 1 >= capacity) {
            capacity = capacity ? capacity * 2 : 256;
            line = realloc(line, capacity);
        }
        line[length++] = (char)c;
    }
}

static void usage(void) {
    printf("usage: fcut -f LIST [-d DELIM] [-o STRING] [-s] [FILE...]\n"
           "Print the selected fields of each line of each FILE (standard input without FILE).\n"
           "  -f LIST    the fields to print: numbers and ranges, as 1,3-5,7-\n"
           "  -d DELIM   the field delimiter, one character (default: tab)\n"
           "  -o STRING  put STRING between the printed fields (default: DELIM)\n"
           "  -s         leave out the lines that hold no delimiter\n"
           "  -h, --help print this help\n"
           "  --version  print the version\n");
}

static int fail(const char *format, const char *what) {
    fprintf(stderr, "fcut: ");
    fprintf(stderr, format, what);
    fprintf(stderr, "\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *list = NULL;
    int first = 1;
    for (; first < argc && argv[first][0] == '-' && argv[first][1] != '\0'; first++) {
        const char *arg = argv[first];
        if (!strcmp(arg, "--")) {
            first++;
            break;
        }
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage();
            return 0;
        }
        if (!strcmp(arg, "--version")) {
            printf("fcut 1.0\n");
            return 0;
        }
        if (arg[1] == '-')
            return fail("unknown option '%s'", arg);
        for (const char *p = arg + 1; *p; p++) {
            if (*p == 's') {
                only_delimited = 1;
                continue;
            }
            if (*p != 'f' && *p != 'd' && *p != 'o') {
                char option[3] = {'-', *p, '\0'};
                return fail("unknown option '%s'", option);
            }
            const char *value = p[1] ? p + 1 : NULL;
            if (!value) {
                if (first + 1 == argc) {
                    char option[3] = {'-', *p, '\0'};
                    return fail("option '%s' needs an argument", option);
                }
                value = argv[++first];
            }
            if (*p == 'f') {
                list = value;
            } else if (*p == 'd') {
                if (strlen(value) != 1)
                    return fail("the delimiter must be a single character, not '%s'", value);
                delim = value[0];
            } else {
                out_delim = value;
            }
            break;
        }
    }
    if (!list)
        return fail("%s", "no field list (use -f LIST)");
    if (!parse_list(list))
        return fail("invalid field list '%s'", list);
    char delim_text[2] = {delim, '\0'};
    if (!out_delim)
        out_delim = delim_text;

    if (first == argc) {
        cut_stream(stdin);
        return 0;
    }
    int status = 0;
    for (int i = first; i < argc; i++) {
        FILE *in = strcmp(argv[i], "-") ? fopen(argv[i], "rb") : stdin;
        if (!in) {
            fflush(stdout);
            fprintf(stderr, "fcut: cannot open '%s'\n", argv[i]);
            status = 1;
            continue;
        }
        cut_stream(in);
        if (in == stdin)
            clearerr(stdin);
        else
            fclose(in);
    }
    return status;
}
