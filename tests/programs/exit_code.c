/* Echoes stdin to stdout, runs one construct, and exits with the status given as argument
   (or kills itself with the signal given after "--signal"). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    char line[256];
    double x[8] = {0};
#pragma acc parallel loop copy(x[0:8])
    for (int i = 0; i < 8; i++) x[i] = i;
    while (fgets(line, sizeof line, stdin)) fputs(line, stdout);
    fprintf(stderr, "to stderr\n");
    if (argc > 2 && strcmp(argv[1], "--signal") == 0) raise(atoi(argv[2]));
    return argc > 1 ? atoi(argv[1]) : 0;
}
