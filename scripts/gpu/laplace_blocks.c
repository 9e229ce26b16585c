/* laplace.c, timed in blocks of iterations with the OpenACC profiling callbacks switched off and
 * on in turn, in one process: what a tool's callbacks cost the solver's loop, paired at a scale
 * of milliseconds, so that the machine's drift between whole runs (several percent on a GPU
 * host) cancels out.
 *
 *   gcc -O2 -g -fopenacc -foffload=nvptx-none -foffload-options="-misa=sm_80 -lm" \
 *       -DDATA_REGION -Iscripts/gpu scripts/gpu/laplace_blocks.c -o laplace_blocks -lm
 *   LAPLACE_BLOCK=10 ./laplace_blocks [n] [iterations]
 *
 * Between blocks of LAPLACE_BLOCK iterations (default 10) the program calls
 * acc_prof_unregister / acc_prof_register (acc_ev_none, NULL, acc_toggle): the specification's
 * global switch for every callback, which GCC's libgomp and the bundled runtime both implement.
 * Blocks go in pairs, off-on then on-off (ABBA), so that a steady drift adds nothing to the
 * paired difference. Without a tool the switch changes nothing, which gives the method's own
 * spread. At exit it prints one line per block: "block INDEX on|off SECONDS". Each iteration
 * ends with the reduction's copy back, so a block's time includes its device work. */
#include <acc_prof.h>

static void after_iteration(int iter);
#define AFTER_ITERATION(iter) after_iteration(iter)
#include "laplace.c"

enum { MAX_BLOCKS = 1 << 16 };
static double block_secs[MAX_BLOCKS];
static unsigned char block_on[MAX_BLOCKS];
static int blocks;

static void print_blocks(void)
{
    for (int b = 0; b < blocks; b++)
        printf("block %d %s %.9f\n", b, block_on[b] ? "on" : "off", block_secs[b]);
}

/* Pair p runs off-on when p is even, on-off when odd. */
static int block_is_on(int b)
{
    return ((b / 2) % 2 == 0) == (b % 2 == 1);
}

static void set_callbacks(int on)
{
    if (on)
        acc_prof_register(acc_ev_none, NULL, acc_toggle);
    else
        acc_prof_unregister(acc_ev_none, NULL, acc_toggle);
}

static void after_iteration(int iter)
{
    static int block_len;
    static double start;
    double t = now_s();
    if (block_len == 0) {
        /* The first iteration (device start-up, first copies) belongs to no block. */
        const char *s = getenv("LAPLACE_BLOCK");
        block_len = s && atoi(s) > 0 ? atoi(s) : 10;
        atexit(print_blocks);
    } else if (iter % block_len == 1 % block_len) {
        if (blocks == MAX_BLOCKS)
            return;
        block_secs[blocks] = t - start;
        block_on[blocks] = (unsigned char)block_is_on(blocks);
        blocks++;
    } else {
        return;
    }
    set_callbacks(block_is_on(blocks));
    start = now_s();
}
