/* A program with no OpenACC runtime at all: the tool must leave it alone. */
#include <stdio.h>
int main(void) {
    printf("plain\n");
    return 3;
}
