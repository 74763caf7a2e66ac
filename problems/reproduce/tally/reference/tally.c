/* tally: count lines, words and bytes (the reference). */
#include <stdio.h>
#include <string.h>

static int want_lines, want_words, want_bytes;

struct counts {
    long long lines, words, bytes;
};

static int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void count_stream(FILE *in, struct counts *out) {
    int c, in_word = 0;
    out->lines = out->words = out->bytes = 0;
    while ((c = getc(in)) != EOF) {
        out->bytes++;
        if (c == '\n')
            out->lines++;
        if (is_space(c)) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            out->words++;
        }
    }
}

static void show(const struct counts *c, const char *name) {
    const char *sep = "";
    if (want_lines) {
        printf("%s%lld", sep, c->lines);
        sep = " ";
    }
    if (want_words) {
        printf("%s%lld", sep, c->words);
        sep = " ";
    }
    if (want_bytes)
        printf("%s%lld", sep, c->bytes);
    if (name)
        printf(" %s", name);
    printf("\n");
}

static void usage(void) {
    printf("usage: tally [-l] [-w] [-c] [FILE...]\n"
           "Count the lines, words and bytes of each FILE (standard input without FILE).\n"
           "  -l         print the line count\n"
           "  -w         print the word count\n"
           "  -c         print the byte count\n"
           "  -h, --help print this help\n"
           "  --version  print the version\n");
}

int main(int argc, char **argv) {
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
            printf("tally 1.0\n");
            return 0;
        }
        if (arg[1] == '-') {
            fprintf(stderr, "tally: unknown option '%s'\n", arg);
            return 2;
        }
        for (const char *p = arg + 1; *p; p++) {
            switch (*p) {
            case 'l': want_lines = 1; break;
            case 'w': want_words = 1; break;
            case 'c': want_bytes = 1; break;
            default:
                fprintf(stderr, "tally: unknown option '-%c'\n", *p);
                return 2;
            }
        }
    }
    if (!want_lines && !want_words && !want_bytes)
        want_lines = want_words = want_bytes = 1;

    struct counts c, total = {0, 0, 0};
    if (first == argc) {
        count_stream(stdin, &c);
        show(&c, NULL);
        return 0;
    }
    int status = 0;
    for (int i = first; i < argc; i++) {
        const char *name = argv[i];
        FILE *in = strcmp(name, "-") ? fopen(name, "rb") : stdin;
        if (!in) {
            fflush(stdout);
            fprintf(stderr, "tally: cannot open '%s'\n", name);
            status = 1;
            continue;
        }
        count_stream(in, &c);
        if (in != stdin)
            fclose(in);
        else
            clearerr(stdin);
        show(&c, name);
        total.lines += c.lines;
        total.words += c.words;
        total.bytes += c.bytes;
    }
    if (argc - first > 1)
        show(&total, "total");
    return status;
}
