/* rpn: a reverse Polish notation calculator over 64-bit integers (the reference). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACK 1024

static long long stack[MAX_STACK];
static int depth;
static int print_all;

static void die(const char *message, const char *token) {
    if (token)
        fprintf(stderr, "rpn: %s '%s'\n", message, token);
    else
        fprintf(stderr, "rpn: %s\n", message);
    exit(1);
}

static void push(long long value) {
    if (depth == MAX_STACK)
        die("stack overflow", NULL);
    stack[depth++] = value;
}

static long long pop(const char *token) {
    if (depth == 0)
        die("stack underflow at", token);
    return stack[--depth];
}

static int is_number(const char *token) {
    const char *p = token + (token[0] == '-' && token[1] != '\0');
    if (*p == '\0')
        return 0;
    for (; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    return 1;
}

static long long power(long long base, long long exponent) {
    long long result = 1;
    while (exponent-- > 0)
        result *= base;
    return result;
}

static void binary(const char *token) {
    if (depth < 2)
        die("stack underflow at", token);
    long long b = pop(token), a = pop(token);
    switch (token[0]) {
    case '+': push(a + b); return;
    case '-': push(a - b); return;
    case '*': push(a * b); return;
    case '/':
    case '%':
        if (b == 0)
            die("division by zero", NULL);
        push(token[0] == '/' ? a / b : a % b);
        return;
    case '^':
        if (b < 0)
            die("negative exponent", NULL);
        push(power(a, b));
        return;
    }
}

static void apply(const char *token) {
    if (is_number(token)) {
        push(strtoll(token, NULL, 10));
    } else if (strlen(token) == 1 && strchr("+-*/%^", token[0])) {
        binary(token);
    } else if (!strcmp(token, "dup")) {
        long long a = pop(token);
        push(a);
        push(a);
    } else if (!strcmp(token, "swap")) {
        if (depth < 2)
            die("stack underflow at", token);
        long long b = pop(token), a = pop(token);
        push(b);
        push(a);
    } else if (!strcmp(token, "drop")) {
        pop(token);
    } else if (!strcmp(token, "neg")) {
        push(-pop(token));
    } else if (!strcmp(token, "abs")) {
        long long a = pop(token);
        push(a < 0 ? -a : a);
    } else if (!strcmp(token, "sum")) {
        long long total = 0;
        while (depth > 0)
            total += stack[--depth];
        push(total);
    } else {
        die("unknown token", token);
    }
}

static void show(void) {
    if (depth == 0)
        return;
    if (!print_all) {
        printf("%lld\n", stack[depth - 1]);
        return;
    }
    for (int i = 0; i < depth; i++)
        printf(i ? " %lld" : "%lld", stack[i]);
    printf("\n");
}

static void evaluate(char *line) {
    depth = 0;
    for (char *token = strtok(line, " \t\r\n"); token; token = strtok(NULL, " \t\r\n"))
        apply(token);
    show();
    fflush(stdout);
}

int main(int argc, char **argv) {
    int first = 1;
    for (; first < argc && argv[first][0] == '-' && !is_number(argv[first]); first++) {
        if (!strcmp(argv[first], "-p")) {
            print_all = 1;
        } else if (!strcmp(argv[first], "-h") || !strcmp(argv[first], "--help")) {
            printf("usage: rpn [-p] [EXPRESSION...]\n"
                   "Evaluate reverse Polish notation over 64-bit integers.\n"
                   "  -p         print the whole stack, bottom first\n"
                   "  -h, --help print this help\n"
                   "  --version  print the version\n");
            return 0;
        } else if (!strcmp(argv[first], "--version")) {
            printf("rpn 1.0\n");
            return 0;
        } else if (!strcmp(argv[first], "--")) {
            first++;
            break;
        } else {
            fprintf(stderr, "rpn: unknown option '%s'\n", argv[first]);
            return 2;
        }
    }
    if (first < argc) {
        size_t size = 1;
        for (int i = first; i < argc; i++)
            size += strlen(argv[i]) + 1;
        char *line = calloc(size, 1);
        for (int i = first; i < argc; i++) {
            strcat(line, argv[i]);
            strcat(line, " ");
        }
        evaluate(line);
        free(line);
        return 0;
    }
    char buffer[65536];
    while (fgets(buffer, sizeof buffer, stdin))
        evaluate(buffer);
    return 0;
}
