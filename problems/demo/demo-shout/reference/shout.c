/* shout: copy a file or standard input to standard output, ASCII letters upper-cased,
   lines numbered with -n. The reference of the demo's reproduce task; written by the
   gitswarm team. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int number = 0;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0) {
            number = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "shout: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (file != NULL) {
            fprintf(stderr, "shout: at most one file\n");
            return 2;
        } else {
            file = argv[i];
        }
    }
    FILE *in = stdin;
    if (file != NULL && (in = fopen(file, "rb")) == NULL) {
        fprintf(stderr, "shout: cannot open '%s'\n", file);
        return 1;
    }
    int c, line = 0, at_start = 1;
    while ((c = getc(in)) != EOF) {
        if (number && at_start)
            printf("%6d\t", ++line);
        putchar(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        at_start = c == '\n';
    }
    return 0;
}
